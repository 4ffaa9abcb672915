/* The search half of the native explicit engine (toolcommit.checker.engines.explicit.native).
 *
 * Appended to the generated model half, which defines: successors, violations, witnesses,
 * end_violations, settled, canon_raw, NACTIONS, NINV, NWIT, NEND, FAULT (per action: is it
 * a fault), HAS_SYMMETRY, SYM_MASK.
 *
 * It is explore.py's loop statement for statement, so both engines give the same state
 * ids: BFS order, parent and via per state, first violation and witness ids, first bad end
 * state per end predicate (FULFIL), settled, deadlock, truncated, fired counts, level ends,
 * and PROGRESS (least state id from which
 * no settled or truncated state is reachable) by a backward search over a reverse CSR.
 * Memory: a state is 16 bytes, its parent and via 8, its visited-table slot 8 to 16 (a
 * 32-bit hash tag and the id), and its edges 4 bytes each when the graph is kept. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TC_ABI 3

enum { STOP_NONE, STOP_STATES, STOP_TIME, STOP_CALLBACK, STOP_MEMORY, STOP_CAPACITY, STOP_EARLY };

/* explore.py's StopWhen: stop once all of these are found (`on` = 0: never) */
struct tc_stop { uint64_t on, invariants, witnesses, ends, deadlock; };

typedef int (*tc_tick)(uint64_t states, uint64_t explored, uint64_t depth, double seconds,
                       int report);

struct tc_out {
    uint64_t states, explored, transitions, peak_bytes, memo_entries;
    int64_t deadlock, stuck;
    int64_t complete, stop;
    double seconds;
    uint64_t nlevels, nsettled, ntruncated, nedges;
    u128 *state;
    uint32_t *parent;
    int32_t *via;
    uint32_t *level_ends, *settled, *truncated, *eoff, *edst;
    uint64_t *fired;
    int64_t first_violation[64], first_witness[64], first_bad_end[64];
};

struct run {                 /* one exploration's working memory and byte accounting */
    uint64_t bytes, peak;
    int oom;
    uint64_t *slot;          /* visited table: (hash >> 32) << 32 | (id + 1); 0 = empty */
    uint64_t cap, mask;
    u128 *mkey, *mval;       /* symmetry memo on s & SYM_MASK */
    uint8_t *mused;
    uint64_t mcap, mcount;
};

struct vec { void *p; uint64_t n, cap; size_t item; };

static void *grab(struct run *r, void *old, uint64_t old_bytes, uint64_t new_bytes, int zero) {
    void *p = old ? realloc(old, new_bytes) : (zero ? calloc(1, new_bytes) : malloc(new_bytes));
    if (!p) { r->oom = 1; return NULL; }
    r->bytes += new_bytes - old_bytes;
    if (r->bytes > r->peak) r->peak = r->bytes;
    return p;
}

static void drop(struct run *r, void *p, uint64_t bytes) {
    if (p) { free(p); r->bytes -= bytes; }
}

static int push(struct run *r, struct vec *v, const void *item) {
    if (v->n == v->cap) {
        uint64_t cap = v->cap ? v->cap * 2 : 1024;
        void *p = grab(r, v->p, v->cap * v->item, cap * v->item, 0);
        if (!p) return 0;
        v->p = p;
        v->cap = cap;
    }
    memcpy((char *)v->p + v->n * v->item, item, v->item);
    v->n++;
    return 1;
}

static int push32(struct run *r, struct vec *v, uint32_t x) { return push(r, v, &x); }

static inline uint64_t hash128(u128 s) {
    uint64_t lo = (uint64_t)s, hi = (uint64_t)(s >> 64);
    uint64_t h = lo * 0x9E3779B97F4A7C15ULL ^ (hi + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
    h ^= h >> 31; h *= 0xBF58476D1CE4E5B9ULL; h ^= h >> 29; h *= 0x94D049BB133111EBULL;
    return h ^ (h >> 32);
}

#if HAS_SYMMETRY
static int memo_grow(struct run *r) {
    uint64_t cap = r->mcap ? r->mcap * 2 : 256, i, j;
    u128 *key = grab(r, NULL, 0, cap * sizeof(u128), 0), *value = grab(r, NULL, 0, cap * sizeof(u128), 0);
    uint8_t *used = grab(r, NULL, 0, cap, 1);
    if (!key || !value || !used) {
        drop(r, key, key ? cap * sizeof(u128) : 0); drop(r, value, value ? cap * sizeof(u128) : 0);
        drop(r, used, used ? cap : 0);
        return 0;
    }
    for (i = 0; i < r->mcap; i++) {
        if (!r->mused[i]) continue;
        for (j = hash128(r->mkey[i]) & (cap - 1); used[j]; j = (j + 1) & (cap - 1)) ;
        used[j] = 1; key[j] = r->mkey[i]; value[j] = r->mval[i];
    }
    drop(r, r->mkey, r->mcap * sizeof(u128)); drop(r, r->mval, r->mcap * sizeof(u128));
    drop(r, r->mused, r->mcap);
    r->mkey = key; r->mval = value; r->mused = used; r->mcap = cap;
    return 1;
}

/* canon(s) = (s & ~U) | canon(s & U): every candidate keeps the bits outside U. */
static inline u128 canon(struct run *r, u128 s) {
    u128 u = s & SYM_MASK;
    uint64_t j = hash128(u) & (r->mcap - 1);
    for (; r->mused[j]; j = (j + 1) & (r->mcap - 1))
        if (r->mkey[j] == u) return (s ^ u) | r->mval[j];
    u128 c = canon_raw(u);
    if (2 * (r->mcount + 1) > r->mcap) {
        if (!memo_grow(r)) { r->oom = 0; return (s ^ u) | c; }   /* no room: just no memo */
        for (j = hash128(u) & (r->mcap - 1); r->mused[j]; j = (j + 1) & (r->mcap - 1)) ;
    }
    r->mused[j] = 1; r->mkey[j] = u; r->mval[j] = c; r->mcount++;
    return (s ^ u) | c;
}
#else
#define canon(r, s) (s)
#endif

static int table_grow(struct run *r, const u128 *state, uint64_t n) {
    uint64_t cap = r->cap ? r->cap * 2 : 1 << 16, mask = cap - 1, i, j;
    uint64_t *slot = grab(r, NULL, 0, cap * 8, 1);
    if (!slot) return 0;
    for (i = 0; i < n; i++) {
        uint64_t h = hash128(state[i]);
        for (j = h & mask; slot[j]; j = (j + 1) & mask) ;
        slot[j] = (h >> 32) << 32 | (i + 1);
    }
    drop(r, r->slot, r->cap * 8);
    r->slot = slot; r->cap = cap; r->mask = mask;
    return 1;
}

/* The id of `s`, or -1 with *where set to the empty slot it would take. */
static inline int64_t lookup(const struct run *r, const u128 *state, u128 s, uint64_t *where,
                             uint64_t *tag) {
    uint64_t h = hash128(s), j;
    *tag = (h >> 32) << 32;
    for (j = h & r->mask; r->slot[j]; j = (j + 1) & r->mask) {
        uint64_t e = r->slot[j];
        if ((e & 0xFFFFFFFF00000000ULL) == *tag && state[(e & 0xFFFFFFFFULL) - 1] == s)
            return (int64_t)(e & 0xFFFFFFFFULL) - 1;
    }
    *where = j;
    return -1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void record(uint64_t mask, int64_t sid, int64_t *found) {
    for (int b = 0; mask; b++, mask >>= 1)
        if ((mask & 1) && found[b] < 0) found[b] = sid;
}

/* PROGRESS: least id from which no goal (settled or truncated) state is reachable. */
static int64_t first_stuck(struct run *r, uint64_t n, const uint32_t *eoff, const uint32_t *edst,
                           const uint32_t *goal1, uint64_t n1, const uint32_t *goal2, uint64_t n2) {
    uint64_t m = eoff[n], i, s;
    int64_t bad = -2;
    uint32_t *pos = grab(r, NULL, 0, (n + 1) * 4, 1), *pred = grab(r, NULL, 0, m * 4 + 4, 0);
    uint32_t *stack = grab(r, NULL, 0, n * 4 + 4, 0);
    uint8_t *good = grab(r, NULL, 0, n + 1, 1);
    if (pos && pred && stack && good) {
        uint64_t top = 0;
        for (i = 0; i < m; i++) pos[edst[i]]++;
        for (i = 1; i <= n; i++) pos[i] += pos[i - 1];      /* pos[t] = end of t's preds */
        for (s = 0; s < n; s++)
            for (i = eoff[s]; i < eoff[s + 1]; i++) pred[--pos[edst[i]]] = (uint32_t)s;
        /* now t's predecessors are pred[pos[t] .. pos[t + 1]), with pos[n] = m */
        for (i = 0; i < n1 + n2; i++) {
            uint32_t g = i < n1 ? goal1[i] : goal2[i - n1];
            if (!good[g]) { good[g] = 1; stack[top++] = g; }
        }
        while (top) {
            uint32_t t = stack[--top];
            for (i = pos[t]; i < pos[t + 1]; i++)
                if (!good[pred[i]]) { good[pred[i]] = 1; stack[top++] = pred[i]; }
        }
        for (bad = -1, s = 0; s < n; s++)
            if (!good[s]) { bad = (int64_t)s; break; }
    }
    drop(r, pos, (n + 1) * 4); drop(r, pred, m * 4 + 4); drop(r, stack, n * 4 + 4); drop(r, good, n + 1);
    return bad;
}

int tc_abi(void) { return TC_ABI; }

void tc_free(void *p) { free(p); }

/* The BFS of explore.py; 0 on success (a stop by limit is success with complete = 0). */
int tc_explore(uint64_t init_lo, uint64_t init_hi, uint64_t max_states, double timeout,
               int graph, tc_tick tick, const struct tc_stop *stop, struct tc_out *out) {
    struct run r;
    struct vec states = {0, 0, 0, sizeof(u128)}, parent = {0, 0, 0, 4}, via = {0, 0, 0, 4};
    struct vec levels = {0, 0, 0, 4}, settled_ids = {0, 0, 0, 4}, truncated = {0, 0, 0, 4};
    struct vec eoff = {0, 0, 0, 4}, edst = {0, 0, 0, 4};
    uint32_t acts[NACTIONS + 1];
    u128 outs[NACTIONS + 1];
    uint64_t seen_v = 0, seen_w = 0, seen_e = 0, head = 0, level_end = 1, k, where, tag;
    const uint64_t all_v = NINV ? (~0ULL >> (64 - NINV)) : 0, all_w = NWIT ? (~0ULL >> (64 - NWIT)) : 0;
    const uint64_t all_e = NEND ? (~0ULL >> (64 - NEND)) : 0;
    double t0 = now_s(), next_tick = t0 + 1.0, next_poll = t0 + 0.25;
    u128 init = ((u128)init_hi << 64) | init_lo;
    int32_t minus = -1;

    memset(&r, 0, sizeof r);
    memset(out, 0, sizeof *out);
    out->deadlock = out->stuck = -1;
    out->complete = 1;
    for (k = 0; k < 64; k++) out->first_violation[k] = out->first_witness[k] = out->first_bad_end[k] = -1;
    out->fired = grab(&r, NULL, 0, (NACTIONS + 1) * 8, 1);
#if HAS_SYMMETRY
    memo_grow(&r);
#endif
    if (!out->fired || r.oom || !table_grow(&r, NULL, 0) || !push(&r, &states, &init)
        || !push32(&r, &parent, 0) || !push(&r, &via, &minus) || !push32(&r, &eoff, 0))
        goto done;
    lookup(&r, (u128 *)states.p, init, &where, &tag);
    r.slot[where] = tag | 1;
    record(violations(init), 0, out->first_violation);
    record(witnesses(init), 0, out->first_witness);
    for (k = 0; k < NINV; k++) if (out->first_violation[k] >= 0) seen_v |= 1ULL << k;
    for (k = 0; k < NWIT; k++) if (out->first_witness[k] >= 0) seen_w |= 1ULL << k;

    while (head < states.n) {
        if (head == level_end) {
            if (!push32(&r, &levels, (uint32_t)level_end)) goto done;
            level_end = states.n;
        }
        u128 s = ((u128 *)states.p)[head];
        int trunc = 0;
        int nmoves = successors(s, acts, outs, &trunc);
        if (trunc && !push32(&r, &truncated, (uint32_t)head)) goto done;
        if (settled(s)) {
            if (!push32(&r, &settled_ids, (uint32_t)head)) goto done;
        } else if (!nmoves && !trunc && out->deadlock < 0) {
            out->deadlock = (int64_t)head;
        }
        if (NEND && graph && !trunc && seen_e != all_e) {   /* an end state: only faults move */
            int only_faults = 1;
            for (int i = 0; i < nmoves; i++) if (!FAULT[acts[i]]) { only_faults = 0; break; }
            if (only_faults) {
                uint64_t m = end_violations(s) & ~seen_e;
                if (m) { record(m, (int64_t)head, out->first_bad_end); seen_e |= m; }
            }
        }
        for (int i = 0; i < nmoves; i++) {
            u128 t = outs[i];
            out->fired[acts[i]]++;
            /* as explore.py: a successor already stored is canonical (every stored state
             * is), so it is taken as it is; any other is canonicalized and looked up again */
            int64_t j = lookup(&r, (u128 *)states.p, t, &where, &tag);
            if (j < 0 && HAS_SYMMETRY) {
                t = canon(&r, t);
                j = lookup(&r, (u128 *)states.p, t, &where, &tag);
            }
            if (j < 0) {
                j = (int64_t)states.n;
                if (states.n >= 0xFFFFFFFEULL) { out->stop = STOP_CAPACITY; out->complete = 0; goto done; }
                int32_t a = (int32_t)acts[i];
                if (!push(&r, &states, &t) || !push32(&r, &parent, (uint32_t)head) || !push(&r, &via, &a))
                    goto done;
                r.slot[where] = tag | (uint64_t)(j + 1);
                if (4 * states.n > 3 * r.cap && !table_grow(&r, (u128 *)states.p, states.n)) goto done;
                if (seen_v != all_v) {
                    uint64_t m = violations(t) & ~seen_v;
                    if (m) { record(m, j, out->first_violation); seen_v |= m; }
                }
                if (seen_w != all_w) {
                    uint64_t m = witnesses(t) & ~seen_w;
                    if (m) { record(m, j, out->first_witness); seen_w |= m; }
                }
            }
            if (graph && !push32(&r, &edst, (uint32_t)j)) goto done;
        }
        if (graph) {
            if (edst.n > 0xFFFFFFFEULL) { out->stop = STOP_CAPACITY; out->complete = 0; goto done; }
            if (!push32(&r, &eoff, (uint32_t)edst.n)) goto done;
        }
        out->transitions += (uint64_t)nmoves;
        head++;
        if (stop->on && (seen_v & stop->invariants) == stop->invariants
            && (seen_w & stop->witnesses) == stop->witnesses && (seen_e & stop->ends) == stop->ends
            && (out->deadlock >= 0 || !stop->deadlock)) {
            out->stop = STOP_EARLY; out->complete = 0; break;
        }
        if (max_states && states.n >= max_states && head < states.n) {
            out->stop = STOP_STATES; out->complete = 0; break;   /* checked every state */
        }
        if ((head & 1023) == 0) {
            double now = now_s();
            if (tick && (now >= next_poll || now >= next_tick)) {
                int report = now >= next_tick;
                next_poll = now + 0.25;
                if (report) next_tick = now + 1.0;
                if (tick(states.n, head, levels.n, now - t0, report)) {
                    out->stop = STOP_CALLBACK; out->complete = 0; break;
                }
            }
            if (timeout > 0 && now - t0 >= timeout) {
                out->stop = STOP_TIME;
                out->complete = 0;
                break;
            }
        }
    }
    if (out->stop == STOP_EARLY) {   /* the level being expanded, then the states found from it */
        if (!push32(&r, &levels, (uint32_t)level_end)) goto done;
        if (states.n > level_end && !push32(&r, &levels, (uint32_t)states.n)) goto done;
    } else if (!push32(&r, &levels, (uint32_t)(out->complete ? states.n : head))) goto done;
    drop(&r, r.slot, r.cap * 8);   /* the visited table is not needed past the search */
    r.slot = NULL;
    if (graph && out->complete) {
        out->stuck = first_stuck(&r, states.n, (uint32_t *)eoff.p, (uint32_t *)edst.p,
                                 (uint32_t *)settled_ids.p, settled_ids.n,
                                 (uint32_t *)truncated.p, truncated.n);
        if (out->stuck == -2) { out->stuck = -1; r.oom = 1; }
    }
done:
    if (r.oom) { out->stop = STOP_MEMORY; out->complete = 0; }
    drop(&r, r.slot, r.cap * 8);
#if HAS_SYMMETRY
    out->memo_entries = r.mcount;
    drop(&r, r.mkey, r.mcap * sizeof(u128)); drop(&r, r.mval, r.mcap * sizeof(u128));
    drop(&r, r.mused, r.mcap);
#endif
    if (!(graph && out->complete)) {    /* edges are kept for complete graph runs only */
        drop(&r, eoff.p, eoff.cap * 4); drop(&r, edst.p, edst.cap * 4);
        eoff.p = edst.p = NULL; eoff.n = edst.n = 0;
    }
    out->states = states.n; out->explored = head;
    out->state = states.p; out->parent = parent.p; out->via = via.p;
    out->level_ends = levels.p; out->nlevels = levels.n;
    out->settled = settled_ids.p; out->nsettled = settled_ids.n;
    out->truncated = truncated.p; out->ntruncated = truncated.n;
    out->eoff = eoff.p; out->edst = edst.p; out->nedges = edst.n;
    out->peak_bytes = r.peak;
    out->seconds = now_s() - t0;
    return r.oom ? 1 : 0;
}
