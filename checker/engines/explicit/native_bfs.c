/* The search half of the native explicit engine (toolcommit.checker.engines.explicit.native).
 *
 * Appended to the state type (native_state.c) and the generated model half, which define:
 * st and its operations, successors, violations, witnesses, end_violations, settled,
 * canon_raw, NACTIONS, NINV, NWIT, NEND, FAULT (per action: is it a fault), HAS_SYMMETRY,
 * SYM_MASK.
 *
 * It is explore.py's loop statement for statement, so both engines give the same state
 * ids: BFS order, parent and via per state, first violation and witness ids, first bad end
 * state per end predicate (FULFIL), settled, deadlock, truncated, fired counts, level ends,
 * and PROGRESS (least state id from which no settled or truncated state is reachable) by a
 * backward search over a reverse CSR.
 *
 * Successors are taken a batch of parents at a time, canonical and hashed first, and each
 * lookup's table slot (and the state it names) is fetched a few successors ahead, so the
 * cache misses of several lookups overlap. The visited table keeps a 32-bit hash tag and the
 * id per slot; a state's home slot comes from the top bits of its hash, so the table grows
 * by moving slots without reading states.
 *
 * With jobs > 1 the same search runs on that many threads and gives the same ids (so the
 * same counts, depths, first violations and shortest paths). The visited table is split by
 * hash into one part per thread. Each BFS level is cut into chunks of parents; per chunk:
 *   expand  (thread t, a slice of the parents): successors, canonical forms, and lookups in
 *           the slice's own set of the states it met in this chunk, then in the visited
 *           table (only read); a state neither knows is a candidate;
 *   dedupe  (thread k, part k): part k's candidates in the sequential search's order
 *           (slice, then parent, then successor): the first of equal ones is a new state;
 *   ids     (thread t): the new states of slice t take the next ids after the slices before
 *           it, in its order: the ids the sequential loop gives them;
 *   edges, store (thread t, then thread k): slice t's bookkeeping (edges, settled,
 *           truncated, deadlock, end states, fired counts, first violations); part k's new
 *           states into its table;
 *   merge   (one thread): the slices' bookkeeping in slice order.
 * A chunk where a stop may fall (the state limit, every asked property violated, no id
 * left) is numbered instead by one thread in the sequential loop's order (`number`), so the
 * stop falls after the same parent. PROGRESS's reverse graph is built and searched on the
 * threads too (each takes the edges of a range of sources; the backward search marks
 * states level by level).
 *
 * Memory: a state is sizeof(st) bytes, its parent and via 8, its visited-table slot 8 to 16
 * and its edges 4 bytes each when the graph is kept; a chunk's buffers are per thread. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>

#define TC_ABI 5
#define MAX_JOBS 64
#define REF_BITS 25                     /* a candidate: thread << REF_BITS | index */
#define REF_MAX ((1ULL << REF_BITS) - 1)
#define NO_ID 0xFFFFFFFFu
#define TAGS 0xFFFFFFFF00000000ULL      /* the hash bits a slot keeps */

#define STUCK_LATER (-3)                /* out->stuck: the backward search left to tc_first_stuck */

enum { STOP_NONE, STOP_STATES, STOP_TIME, STOP_CALLBACK, STOP_MEMORY, STOP_CAPACITY, STOP_EARLY };

/* explore.py's StopWhen: stop once all of these are found (`on` = 0: never) */
struct tc_stop { uint64_t on, invariants, witnesses, ends, deadlock; };

typedef int (*tc_tick)(uint64_t states, uint64_t explored, uint64_t depth, double seconds,
                       int report);

struct tc_out {
    uint64_t states, explored, transitions, peak_bytes, memo_entries;
    int64_t deadlock, stuck;
    int64_t complete, stop;
    double seconds, graph_seconds;
    uint64_t nlevels, nsettled, ntruncated, nedges, jobs;
    void *state;
    uint32_t *parent;
    int32_t *via;
    uint32_t *level_ends, *settled, *truncated, *eoff, *edst;
    uint64_t *fired;
    int64_t first_violation[64], first_witness[64], first_bad_end[64];
    double cpu_seconds;             /* the process's CPU seconds during the search */
    double phase_seconds[6];        /* parallel, per step the CPU seconds of its busiest
                                     * thread, summed: expand, dedupe, ids, edges and store,
                                     * the sequential numbering, PROGRESS */
};

/* ----- memory, counted --------------------------------------------------------------- */
struct acct { uint64_t bytes, peak; int oom; };

static void account(struct acct *r, uint64_t delta) {
    uint64_t now = __atomic_add_fetch(&r->bytes, delta, __ATOMIC_RELAXED);
    uint64_t peak = __atomic_load_n(&r->peak, __ATOMIC_RELAXED);
    while (now > peak && (int64_t)delta > 0
           && !__atomic_compare_exchange_n(&r->peak, &peak, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) ;
}

/* Zeroed memory is zeroed by writing it (not calloc): a large calloc maps the shared zero
 * page, which a table's first probes read, and each later write then replaces a mapped page,
 * which in a threaded search interrupts every other core to flush its TLB. */
static void *grab(struct acct *r, void *old, uint64_t old_bytes, uint64_t new_bytes, int zero) {
    void *p = old ? realloc(old, new_bytes) : malloc(new_bytes);
    if (!p) { __atomic_store_n(&r->oom, 1, __ATOMIC_RELAXED); return NULL; }
    if (zero && !old) memset(p, 0, new_bytes);
    account(r, new_bytes - old_bytes);
    return p;
}

static void drop(struct acct *r, void *p, uint64_t bytes) {
    if (p) { free(p); account(r, (uint64_t)0 - bytes); }
}

struct vec { void *p; uint64_t n, cap; size_t item; };

static int reserve(struct acct *r, struct vec *v, uint64_t need) {
    uint64_t cap = v->cap ? v->cap : 1024;
    void *p;
    if (need <= v->cap) return 1;
    while (cap < need) cap *= 2;
    p = grab(r, v->p, v->cap * v->item, cap * v->item, 0);
    if (!p) return 0;
    v->p = p;
    v->cap = cap;
    return 1;
}

static inline int push32(struct acct *r, struct vec *v, uint32_t x) {
    if (v->n == v->cap && !reserve(r, v, v->n + 1)) return 0;
    ((uint32_t *)v->p)[v->n++] = x;
    return 1;
}

static inline int push_st(struct acct *r, struct vec *v, st x) {
    if (v->n == v->cap && !reserve(r, v, v->n + 1)) return 0;
    ((st *)v->p)[v->n++] = x;
    return 1;
}

static void vec_drop(struct acct *r, struct vec *v) {
    drop(r, v->p, v->cap * v->item);
    v->p = NULL; v->n = v->cap = 0;
}

/* ----- the symmetry memo: canon(s) = (s & ~U) | canon(s & U), one per thread ------------ */
struct memo { st *key, *val; uint8_t *used; uint64_t cap, count; };

#if HAS_SYMMETRY
static int memo_grow(struct acct *r, struct memo *m) {
    uint64_t cap = m->cap ? m->cap * 2 : 256, i, j;
    st *key = malloc(cap * sizeof(st)), *value = malloc(cap * sizeof(st));
    uint8_t *used = calloc(1, cap);
    if (!key || !value || !used) { free(key); free(value); free(used); return 0; }  /* no memo */
    account(r, cap * (2 * sizeof(st) + 1));
    for (i = 0; i < m->cap; i++) {
        if (!m->used[i]) continue;
        for (j = st_hash(m->key[i]) & (cap - 1); used[j]; j = (j + 1) & (cap - 1)) ;
        used[j] = 1; key[j] = m->key[i]; value[j] = m->val[i];
    }
    if (m->cap) { free(m->key); free(m->val); free(m->used); account(r, (uint64_t)0 - m->cap * (2 * sizeof(st) + 1)); }
    m->key = key; m->val = value; m->used = used; m->cap = cap;
    return 1;
}

static inline st canon(struct acct *r, struct memo *m, st s) {
    st u = st_and(s, SYM_MASK), c;
    uint64_t j = st_hash(u) & (m->cap - 1);
    for (; m->used[j]; j = (j + 1) & (m->cap - 1))
        if (st_eq(m->key[j], u)) return st_or(st_xor(s, u), m->val[j]);
    c = canon_raw(u);
    if (2 * (m->count + 1) > m->cap) {
        if (!memo_grow(r, m)) return st_or(st_xor(s, u), c);   /* no room: just no memo */
        for (j = st_hash(u) & (m->cap - 1); m->used[j]; j = (j + 1) & (m->cap - 1)) ;
    }
    m->used[j] = 1; m->key[j] = u; m->val[j] = c; m->count++;
    return st_or(st_xor(s, u), c);
}

static void memo_drop(struct acct *r, struct memo *m) {
    if (!m->cap) return;
    free(m->key); free(m->val); free(m->used);
    account(r, (uint64_t)0 - m->cap * (2 * sizeof(st) + 1));
    m->cap = 0;
}
#else
#define canon(r, m, s) ((void)(r), (void)(m), (s))
#define memo_grow(r, m) 1
#define memo_drop(r, m) ((void)0)
#endif

/* ----- the visited table, in parts by hash (one part when sequential) -------------------
 * A slot is the state's hash tag (the top 32 bits of its hash) and its id + 1 (0: empty).
 * A state's home slot is given by the top bits of its hash, which the tag keeps, so the
 * table grows by moving slots, without reading states (up to 2^32 slots a part). The part
 * of a state is given by the low 32 bits. */
struct table { uint64_t *slot; uint64_t cap, mask, count; int shift; };

/* Store id `id` of a state (hash `h`) known not to be in `t` yet, at the first empty slot
 * from `from` (its home, or where a lookup since which nothing left `t` ended). */
static inline void place_from(struct table *t, uint64_t h, uint64_t id, uint64_t from) {
    uint64_t j;
    for (j = from; t->slot[j]; j = (j + 1) & t->mask) ;
    t->slot[j] = (h & TAGS) | (id + 1);
    t->count++;
}

static inline uint32_t part_of(uint64_t h, uint32_t parts) {
    return (uint32_t)(((h & 0xFFFFFFFFULL) * (uint64_t)parts) >> 32);
}

static inline uint64_t home(const struct table *t, uint64_t h) { return h >> t->shift; }

/* Grow `t` (part `part` of `parts`) to hold `need` entries at most 3/4 full: 1, or 2 when
 * it was filled again from the stored states 0 .. n-1 of the part (past 2^32 slots, where
 * the tags no longer say where a slot goes), 0 on no memory. */
static int table_grow(struct acct *r, struct table *t, const st *state, uint64_t n,
                      uint64_t need, uint32_t part, uint32_t parts) {
    uint64_t cap = t->cap ? t->cap : 1 << 12, mask, i, j, count = 0;
    uint64_t *slot;
    int bits = 0, refill;
    while (4 * need > 3 * cap) cap *= 2;
    if (cap == t->cap) return 1;
    while ((1ULL << bits) < cap) bits++;
    refill = bits > 32;
    mask = cap - 1;
    slot = grab(r, NULL, 0, cap * 8, 1);
    if (!slot) return 0;
    if (!refill) {
        for (i = 0; i < t->cap; i++) {
            uint64_t e = t->slot[i];
            if (!e) continue;
            for (j = e >> (64 - bits); slot[j]; j = (j + 1) & mask) ;
            slot[j] = e;
            count++;
        }
    } else {
        for (i = 0; i < n; i++) {
            uint64_t h = st_hash(state[i]);
            if (parts > 1 && part_of(h, parts) != part) continue;
            for (j = h >> (64 - bits); slot[j]; j = (j + 1) & mask) ;
            slot[j] = (h & TAGS) | (i + 1);
            count++;
        }
    }
    drop(r, t->slot, t->cap * 8);
    t->slot = slot; t->cap = cap; t->mask = mask; t->count = count; t->shift = 64 - bits;
    return 1 + refill;
}

/* The id of `s` (hash `h`), or -1 with *where set to the empty slot it would take. */
static inline int64_t lookup(const struct table *t, const st *state, st s, uint64_t h,
                             uint64_t *where) {
    uint64_t tag = h & TAGS, j, e;
    for (j = home(t, h); (e = t->slot[j]); j = (j + 1) & t->mask)
        if ((e & TAGS) == tag && st_eq(state[(uint32_t)e - 1], s)) return (int64_t)(uint32_t)e - 1;
    *where = j;
    return -1;
}

/* Store id `id` of a state (hash `h`) known not to be in `t` yet. */
static inline void place(struct table *t, uint64_t h, uint64_t id) {
    uint64_t j;
    for (j = home(t, h); t->slot[j]; j = (j + 1) & t->mask) ;
    t->slot[j] = (h & TAGS) | (id + 1);
    t->count++;
}

/* The lookups run a few successors behind their hashes: the home slot of the successor
 * PF_SLOT ahead is fetched, and for the one PF_STATE ahead the state its home slot names,
 * so the cache misses of several lookups overlap (hints only: lookups decide). */
#define PF_SLOT 16
#define PF_STATE 8

static inline void pf_slot(const struct table *t, uint64_t h) {
    __builtin_prefetch(&t->slot[home(t, h)]);
}

static inline void pf_state(const struct table *t, const st *state, uint64_t h) {
    uint64_t e = t->slot[home(t, h)];
    if (e && (e & TAGS) == (h & TAGS)) __builtin_prefetch(&state[(uint32_t)e - 1]);
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

/* ----- what both loops share: the search's arrays and its bookkeeping ------------------- */
struct bfs {
    struct acct r;
    struct tc_out *out;
    const struct tc_stop *stop;
    struct vec states, parent, via, levels, settled_ids, truncated, eoff, edst;
    uint64_t seen_v, seen_w, seen_e, all_v, all_w, all_e, head, level_end, max_states;
    int graph, phase;          /* keep the edges; then run PROGRESS's backward search */
    tc_tick tick;
    double timeout, t0, next_tick, next_poll;
};

/* A state found from `head` by action `a`: stored under the next id, which it returns
 * (-1: no memory, or no id left, with the stop set). */
static inline int64_t add_state(struct bfs *b, st t, int32_t a) {
    int64_t j = (int64_t)b->states.n;
    if (b->states.n >= 0xFFFFFFFEULL) { b->out->stop = STOP_CAPACITY; b->out->complete = 0; return -1; }
    if (!push_st(&b->r, &b->states, t) || !push32(&b->r, &b->parent, (uint32_t)b->head)
        || !push32(&b->r, &b->via, (uint32_t)a))
        return -1;
    return j;
}

/* The new state `j`'s invariant and witness masks (0 for what need not be computed). */
static inline void note_masks(struct bfs *b, int64_t j, uint64_t vm, uint64_t wm) {
    uint64_t m = vm & ~b->seen_v;
    if (m) { record(m, j, b->out->first_violation); b->seen_v |= m; }
    m = wm & ~b->seen_w;
    if (m) { record(m, j, b->out->first_witness); b->seen_w |= m; }
}

/* The end predicates `s` breaks if it is an end state (only faults move), else 0. */
static inline uint64_t end_mask(const struct bfs *b, uint64_t seen_e, st s, int trunc,
                                const uint32_t *acts, int nmoves) {
    if (!NEND || !b->graph || trunc || seen_e == b->all_e) return 0;
    for (int i = 0; i < nmoves; i++) if (!FAULT[acts[i]]) return 0;
    return end_violations(s);
}

/* Before `head`'s successors: truncated, settled, deadlock, end state. 0 on no memory. */
static inline int parent_begin(struct bfs *b, int trunc, int is_settled, int nmoves,
                               uint64_t endmask) {
    uint64_t m;
    if (trunc && !push32(&b->r, &b->truncated, (uint32_t)b->head)) return 0;
    if (is_settled) {
        if (!push32(&b->r, &b->settled_ids, (uint32_t)b->head)) return 0;
    } else if (!nmoves && !trunc && b->out->deadlock < 0) {
        b->out->deadlock = (int64_t)b->head;
    }
    m = endmask & ~b->seen_e;
    if (m) { record(m, (int64_t)b->head, b->out->first_bad_end); b->seen_e |= m; }
    return 1;
}

/* After `head`'s successors: edges, counts, the stops. 0 go on, 1 stop, -1 no memory. */
static inline int parent_end(struct bfs *b, int nmoves) {
    struct tc_out *out = b->out;
    const struct tc_stop *stop = b->stop;
    if (b->graph) {
        if (b->edst.n > 0xFFFFFFFEULL) { out->stop = STOP_CAPACITY; out->complete = 0; return 1; }
        if (!push32(&b->r, &b->eoff, (uint32_t)b->edst.n)) return -1;
    }
    out->transitions += (uint64_t)nmoves;
    b->head++;
    if (stop->on && (b->seen_v & stop->invariants) == stop->invariants
        && (b->seen_w & stop->witnesses) == stop->witnesses && (b->seen_e & stop->ends) == stop->ends
        && (out->deadlock >= 0 || !stop->deadlock)) {
        out->stop = STOP_EARLY; out->complete = 0; return 1;
    }
    if (b->max_states && b->states.n >= b->max_states && b->head < b->states.n) {
        out->stop = STOP_STATES; out->complete = 0; return 1;   /* checked every state */
    }
    return 0;
}

/* The time limit and the progress callback; 1 when one of them stops the search. */
static int poll(struct bfs *b, int force) {
    double now = now_s();
    struct tc_out *out = b->out;
    if (b->tick && (force || now >= b->next_poll || now >= b->next_tick)) {
        int report = now >= b->next_tick;
        b->next_poll = now + 0.25;
        if (report) b->next_tick = now + 1.0;
        if (b->tick(b->states.n, b->head, b->levels.n, now - b->t0, report)) {
            out->stop = STOP_CALLBACK; out->complete = 0; return 1;
        }
    }
    if (b->timeout > 0 && now - b->t0 >= b->timeout) {
        out->stop = STOP_TIME; out->complete = 0; return 1;
    }
    return 0;
}

static int bfs_init(struct bfs *b, struct tc_out *out, const struct tc_stop *stop, int graph,
                    uint64_t max_states, tc_tick tick, double timeout) {
    int k;
    memset(b, 0, sizeof *b);
    b->states.item = sizeof(st);
    b->parent.item = b->via.item = b->levels.item = b->settled_ids.item = 4;
    b->truncated.item = b->eoff.item = b->edst.item = 4;
    b->out = out; b->stop = stop; b->max_states = max_states;
    b->graph = graph != 0; b->phase = graph == 1;
    b->tick = tick; b->timeout = timeout;
    b->all_v = NINV ? (~0ULL >> (64 - NINV)) : 0;
    b->all_w = NWIT ? (~0ULL >> (64 - NWIT)) : 0;
    b->all_e = NEND ? (~0ULL >> (64 - NEND)) : 0;
    b->t0 = now_s(); b->next_tick = b->t0 + 1.0; b->next_poll = b->t0 + 0.25;
    b->level_end = 1;
    memset(out, 0, sizeof *out);
    out->deadlock = out->stuck = -1;
    out->complete = 1;
    for (k = 0; k < 64; k++) out->first_violation[k] = out->first_witness[k] = out->first_bad_end[k] = -1;
    out->fired = grab(&b->r, NULL, 0, (NACTIONS + 1) * 8, 1);
    return out->fired != NULL;
}

/* The initial state as state 0, its masks recorded. */
static int bfs_start(struct bfs *b, st init) {
    b->head = 0;
    if (add_state(b, init, -1) < 0 || !push32(&b->r, &b->eoff, 0)) return 0;
    record(violations(init), 0, b->out->first_violation);
    record(witnesses(init), 0, b->out->first_witness);
    for (int k = 0; k < NINV; k++) if (b->out->first_violation[k] >= 0) b->seen_v |= 1ULL << k;
    for (int k = 0; k < NWIT; k++) if (b->out->first_witness[k] >= 0) b->seen_w |= 1ULL << k;
    return 1;
}

/* The level ends after the loop (an early stop: the level being expanded, then the states
 * found from it). 0 on no memory. */
static int bfs_levels(struct bfs *b) {
    struct tc_out *out = b->out;
    if (out->stop == STOP_EARLY) {
        if (!push32(&b->r, &b->levels, (uint32_t)b->level_end)) return 0;
        if (b->states.n > b->level_end && !push32(&b->r, &b->levels, (uint32_t)b->states.n)) return 0;
        return 1;
    }
    return push32(&b->r, &b->levels, (uint32_t)(out->complete ? b->states.n : b->head));
}

static void bfs_out(struct bfs *b) {
    struct tc_out *out = b->out;
    if (b->r.oom) { out->stop = STOP_MEMORY; out->complete = 0; }
    if (b->graph && !b->phase) out->stuck = STUCK_LATER;
    if (!(b->graph && out->complete)) {    /* edges are kept for complete graph runs only */
        vec_drop(&b->r, &b->eoff); vec_drop(&b->r, &b->edst);
    }
    out->states = b->states.n; out->explored = b->head;
    out->state = b->states.p; out->parent = b->parent.p; out->via = b->via.p;
    out->level_ends = b->levels.p; out->nlevels = b->levels.n;
    out->settled = b->settled_ids.p; out->nsettled = b->settled_ids.n;
    out->truncated = b->truncated.p; out->ntruncated = b->truncated.n;
    out->eoff = b->eoff.p; out->edst = b->edst.p; out->nedges = b->edst.n;
    out->peak_bytes = b->r.peak;
    out->seconds = now_s() - b->t0;
}

/* ----- PROGRESS: least id from which no goal (settled or truncated) state is reachable --- */
static int64_t first_stuck(struct acct *r, uint64_t n, const uint32_t *eoff, const uint32_t *edst,
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

static void graph_phase_seq(struct bfs *b) {
    double t = now_s();
    b->out->stuck = first_stuck(&b->r, b->states.n, (uint32_t *)b->eoff.p, (uint32_t *)b->edst.p,
                                (uint32_t *)b->settled_ids.p, b->settled_ids.n,
                                (uint32_t *)b->truncated.p, b->truncated.n);
    if (b->out->stuck == -2) { b->out->stuck = -1; b->r.oom = 1; }
    b->out->graph_seconds = now_s() - t;
}

/* ----- the sequential search ------------------------------------------------------------ */
/* A run of parents' successors, canonical and hashed: the sequential loop takes parents a
 * batch at a time so that its lookups can be fetched ahead (PF_SLOT, PF_STATE). */
#define BATCH 64
struct batch {
    uint32_t nsucc[BATCH];
    uint8_t flag[BATCH];              /* truncated | settled << 1 */
    uint64_t endm[BATCH];
    uint32_t *act;
    st *t;
    uint64_t *h, cap;
};

/* Expand parents from `from` (below `to`) into `x`, as many as fit; how many it took. */
static uint64_t fill(struct bfs *b, struct memo *m, struct batch *x, const st *states,
                     uint64_t from, uint64_t to, uint64_t *nsucc) {
    uint64_t np = 0, n = 0;
    for (uint64_t p = from; p < to && np < BATCH && n + NACTIONS + 1 <= x->cap; p++, np++) {
        st s = states[p];
        int trunc = 0, k = successors(s, x->act + n, x->t + n, &trunc);
        x->nsucc[np] = (uint32_t)k;
        x->flag[np] = (uint8_t)(trunc | settled(s) << 1);
        x->endm[np] = end_mask(b, b->seen_e, s, trunc, x->act + n, k);
        /* canonical first (the memo makes that cheap), then one lookup: a stored state is
         * canonical, so the lookup finds what explore.py's raw-then-canonical lookup finds */
        for (int i = 0; i < k; i++, n++) {
            x->t[n] = canon(&b->r, m, x->t[n]);
            x->h[n] = st_hash(x->t[n]);
        }
    }
    *nsucc = n;
    return np;
}

static int batch_init(struct batch *x) {
    x->cap = 4 * BATCH + NACTIONS + 1;
    x->act = malloc(x->cap * sizeof(uint32_t));
    x->t = malloc(x->cap * sizeof(st));
    x->h = malloc(x->cap * sizeof(uint64_t));
    return x->act && x->t && x->h;
}

static void batch_drop(struct batch *x) { free(x->act); free(x->t); free(x->h); }

/* ----- the sequential search ------------------------------------------------------------ */
static int explore_seq(struct bfs *b, st init) {
    struct table tab = {0, 0, 0, 0, 0};
    struct memo memo = {0, 0, 0, 0, 0};
    struct batch x;
    uint64_t where = 0;

    if (!batch_init(&x) || !memo_grow(&b->r, &memo) || !table_grow(&b->r, &tab, NULL, 0, 1, 0, 1)
        || !bfs_start(b, init))
        goto done;
    place(&tab, st_hash(init), 0);
    while (b->head < b->states.n) {
        uint64_t n, m = 0, np = fill(b, &memo, &x, (st *)b->states.p, b->head, b->states.n, &n);
        for (uint64_t i = 0; i < n && i < PF_SLOT; i++) pf_slot(&tab, x.h[i]);
        for (uint64_t q = 0; q < np; q++) {
            if (b->head == b->level_end) {
                if (!push32(&b->r, &b->levels, (uint32_t)b->level_end)) goto done;
                b->level_end = b->states.n;
            }
            int nmoves = (int)x.nsucc[q];
            if (!parent_begin(b, x.flag[q] & 1, x.flag[q] >> 1, nmoves, x.endm[q])) goto done;
            if (b->graph && !reserve(&b->r, &b->edst, b->edst.n + nmoves)) goto done;
            for (int i = 0; i < nmoves; i++, m++) {
                st t = x.t[m];
                uint64_t h = x.h[m];
                if (m + PF_SLOT < n) pf_slot(&tab, x.h[m + PF_SLOT]);
                if (m + PF_STATE < n) pf_state(&tab, (st *)b->states.p, x.h[m + PF_STATE]);
                b->out->fired[x.act[m]]++;
                int64_t j = lookup(&tab, (st *)b->states.p, t, h, &where);
                if (j < 0) {
                    j = add_state(b, t, (int32_t)x.act[m]);
                    if (j < 0) goto done;
                    tab.slot[where] = (h & TAGS) | (uint64_t)(j + 1);
                    if (4 * ++tab.count > 3 * tab.cap
                        && !table_grow(&b->r, &tab, (st *)b->states.p, b->states.n, tab.count + 1, 0, 1))
                        goto done;
                    note_masks(b, j, b->seen_v != b->all_v ? violations(t) : 0,
                               b->seen_w != b->all_w ? witnesses(t) : 0);
                }
                if (b->graph) ((uint32_t *)b->edst.p)[b->edst.n++] = (uint32_t)j;
            }
            int end = parent_end(b, nmoves);
            if (end < 0) goto done;
            if (end > 0 || ((b->head & 1023) == 0 && poll(b, 0))) goto stopped;
        }
    }
stopped:
    if (!bfs_levels(b)) goto done;
    drop(&b->r, tab.slot, tab.cap * 8);   /* the visited table is not needed past the search */
    tab.slot = NULL;
    if (b->phase && b->out->complete) graph_phase_seq(b);
done:
    drop(&b->r, tab.slot, tab.cap * 8);
    b->out->memo_entries = memo.count;
    memo_drop(&b->r, &memo);
    batch_drop(&x);
    return b->r.oom;
}

/* ----- the parallel search --------------------------------------------------------------- */
/* A candidate: a successor that no lookup found, the first of its thread's slice of the
 * chunk to reach that state; `first` is the ref of the chunk's first candidate of it,
 * `where` the empty slot its lookup ended at (where storing it can start, while the part
 * has not grown: no slot empties, so none between its home and there). */
struct cand { st s; uint64_t h, where; uint32_t first, id, parent, act; uint64_t vm, wm; };

#define CAND_NEW (1ULL << 63)   /* a recorded successor that made candidate ref */
#define CAND_DUP (1ULL << 62)   /* one that reached candidate ref again */
#define REFS 0xFFFFFFFFULL

struct par;

struct wk {                    /* one thread: its slice of a chunk, its part, its buffers */
    struct par *P;
    uint32_t id;
    pthread_t th;
    uint64_t lo, hi;           /* parents [lo, hi) of the chunk */
    struct vec nsucc, pflag, pend, target, act, cand, firsts, local, seen, settled, trunc,
               next;
    uint64_t *pcount;          /* expand: my candidates per part */
    uint64_t *owned;           /* dedupe (part k): the new states of part k by slice */
    uint64_t *fired;           /* my slice's fired counts */
    uint64_t nnew, id0, e0, moves;   /* my slice: new states, the first's id, first edge, moves */
    int64_t fv[64], fw[64], fe[64], dead;   /* my slice's first ids (heads) per bit */
    uint64_t seen_mask;        /* the chunk set `seen` of my slice: mask and shift */
    int seen_shift;
    struct memo memo;
    struct batch batch;
    uint64_t tlo, thi;         /* PROGRESS: the sources whose edges this thread takes */
    double cpu;                /* CPU seconds of its last task */
};

struct par {
    struct bfs *b;
    uint32_t T;
    struct wk *w;
    struct table *tab;
    pthread_barrier_t bar;
    pthread_mutex_t gate;
    pthread_cond_t opened;
    int go;                                   /* 1 run, -1 threads go home */
    void (*task)(struct wk *);
    int fail;
    uint64_t seen_v0, seen_w0, seen_e0;      /* the masks when the chunk began */
    uint64_t pending;                         /* new states stored past states.n */
    /* PROGRESS */
    uint64_t n, m;
    const uint32_t *eoff, *edst;
    uint32_t *pos, *pred, *front;        /* front: a level of the backward search */
    uint64_t nfront;
    uint8_t *good;
};

static inline struct cand *cand_of(struct par *P, uint64_t ref) {
    return (struct cand *)P->w[ref >> REF_BITS].cand.p + (ref & REF_MAX);
}

static void set_fail(struct par *P) { __atomic_store_n(&P->fail, 1, __ATOMIC_RELAXED); }

/* grow vector `v` of thread `w` to hold `need` items */
static inline int room(struct wk *w, struct vec *v, uint64_t need) {
    if (need <= v->cap) return 1;
    if (reserve(&w->P->b->r, v, need)) return 1;
    set_fail(w->P);
    return 0;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run_task(struct wk *w, void (*task)(struct wk *)) {
    double c0 = cpu_s();
    task(w);
    w->cpu = cpu_s() - c0;
}

/* Run `task` on every thread; the CPU seconds of the busiest one. */
static double run_all(struct par *P, void (*task)(struct wk *)) {
    double most = 0;
    P->task = task;
    pthread_barrier_wait(&P->bar);
    run_task(&P->w[0], task);
    pthread_barrier_wait(&P->bar);
    for (uint32_t t = 0; t < P->T; t++) if (P->w[t].cpu > most) most = P->w[t].cpu;
    return most;
}

static void *worker_main(void *arg) {
    struct wk *w = arg;
    struct par *P = w->P;
    pthread_mutex_lock(&P->gate);         /* every thread started, or the search is off */
    while (!P->go) pthread_cond_wait(&P->opened, &P->gate);
    pthread_mutex_unlock(&P->gate);
    if (P->go < 0) return NULL;
    for (;;) {
        pthread_barrier_wait(&P->bar);
        if (!P->task) return NULL;
        run_task(w, P->task);
        pthread_barrier_wait(&P->bar);
    }
}

/* Start threads 1 .. T-1; 0 (none left running) when one cannot be started. */
static int start_threads(struct par *P) {
    uint32_t t;
    int ok = 1;
    for (t = 1; t < P->T && ok; t++)
        ok = pthread_create(&P->w[t].th, NULL, worker_main, &P->w[t]) == 0;
    pthread_mutex_lock(&P->gate);
    P->go = ok ? 1 : -1;
    pthread_cond_broadcast(&P->opened);
    pthread_mutex_unlock(&P->gate);
    if (!ok)
        for (uint32_t k = 1; k < t - 1; k++) pthread_join(P->w[k].th, NULL);
    return ok;
}

/* The slice's own set of its candidates (8-byte slots: hash tag | index + 1, home by the
 * top bits, so it grows by moving slots); a successor one of them already reached needs no
 * lookup in the visited table. */
static int seen_clear(struct wk *w, uint64_t cap) {
    int bits = 0;
    if (!room(w, &w->seen, cap)) return 0;
    while ((1ULL << bits) < cap) bits++;
    memset(w->seen.p, 0, cap * 8);
    w->seen.n = 0;
    w->seen_mask = cap - 1;
    w->seen_shift = 64 - bits;
    return 1;
}

static int seen_grow(struct wk *w) {
    struct acct *r = &w->P->b->r;
    uint64_t cap = 2 * (w->seen_mask + 1), *old = w->seen.p, n = w->seen_mask + 1, j;
    uint64_t *slot = grab(r, NULL, 0, cap * 8, 1);
    if (!slot) { set_fail(w->P); return 0; }
    for (uint64_t i = 0; i < n; i++) {
        if (!old[i]) continue;
        for (j = old[i] >> (w->seen_shift - 1); slot[j]; j = (j + 1) & (cap - 1)) ;
        slot[j] = old[i];
    }
    drop(r, old, w->seen.cap * 8);
    w->seen.p = slot; w->seen.cap = cap;
    w->seen_mask = cap - 1;
    w->seen_shift--;
    return 1;
}

/* expand: successors, canonical forms and lookups for parents [lo, hi) */
static void task_expand(struct wk *w) {
    struct par *P = w->P;
    struct bfs *b = P->b;
    const st *states = (const st *)b->states.p;
    struct batch *x = &w->batch;
    uint64_t p, k = 0, m = 0, where = 0, n, np;
    w->nsucc.n = w->pflag.n = w->pend.n = w->target.n = w->act.n = w->cand.n = 0;
    memset(w->pcount, 0, P->T * sizeof(uint64_t));
    if (w->hi <= w->lo) return;
    if (!room(w, &w->nsucc, w->hi - w->lo) || !room(w, &w->pflag, w->hi - w->lo)
        || !room(w, &w->pend, w->hi - w->lo) || !seen_clear(w, w->seen.cap ? w->seen.cap : 1 << 12))
        return;
    for (p = w->lo; p < w->hi; p += np) {
        np = fill(b, &w->memo, x, states, p, w->hi, &n);
        if (!room(w, &w->target, m + n) || !room(w, &w->act, m + n) || !room(w, &w->cand, w->cand.n + n))
            return;
        for (uint64_t q = 0; q < np; q++, k++) {
            ((uint32_t *)w->nsucc.p)[k] = x->nsucc[q];
            ((uint8_t *)w->pflag.p)[k] = x->flag[q];
            ((uint64_t *)w->pend.p)[k] = x->endm[q];
        }
        for (uint64_t i = 0; i < n && i < PF_SLOT; i++) pf_slot(&P->tab[part_of(x->h[i], P->T)], x->h[i]);
        uint64_t q = 0, left = np ? x->nsucc[0] : 0, head = p;
        for (uint64_t i = 0; i < n; i++, m++) {
            uint64_t h = x->h[i], tag = h & TAGS, j, e;
            uint64_t *seen = w->seen.p;
            while (!left) { left = x->nsucc[++q]; head++; }
            left--;
            if (i + PF_SLOT < n) pf_slot(&P->tab[part_of(x->h[i + PF_SLOT], P->T)], x->h[i + PF_SLOT]);
            if (i + PF_STATE < n)
                pf_state(&P->tab[part_of(x->h[i + PF_STATE], P->T)], states, x->h[i + PF_STATE]);
            ((uint32_t *)w->act.p)[m] = x->act[i];
            for (j = h >> w->seen_shift; (e = seen[j]); j = (j + 1) & w->seen_mask)
                if ((e & TAGS) == tag
                    && st_eq(((struct cand *)w->cand.p)[(uint32_t)e - 1].s, x->t[i])) {
                    ((uint64_t *)w->target.p)[m] = CAND_DUP | (uint64_t)w->id << REF_BITS | ((uint32_t)e - 1);
                    goto next;
                }
            int64_t id = lookup(&P->tab[part_of(h, P->T)], states, x->t[i], h, &where);
            if (id >= 0) {
                ((uint64_t *)w->target.p)[m] = (uint64_t)id;
            } else {
                struct cand *c = (struct cand *)w->cand.p + w->cand.n;
                c->s = x->t[i]; c->h = h; c->where = where; c->parent = (uint32_t)head;
                c->act = x->act[i];
                w->pcount[part_of(h, P->T)]++;
                seen[j] = tag | (w->cand.n + 1);
                ((uint64_t *)w->target.p)[m] = CAND_NEW | (uint64_t)w->id << REF_BITS | w->cand.n++;
                if (4 * ++w->seen.n > 3 * (w->seen_mask + 1) && !seen_grow(w)) return;
            }
        next:;
        }
    }
    w->nsucc.n = w->pflag.n = w->pend.n = k;
    w->target.n = w->act.n = m;
}

/* dedupe (thread k): part k's candidates, in the sequential search's order, through a
 * table of the chunk's own: the first of equal ones is a new state, the others lead to it */
static void task_dedupe(struct wk *w) {
    struct par *P = w->P;
    struct bfs *b = P->b;
    uint64_t need = 0, cap = 64, mask, t, i;
    uint32_t *local;
    int want_v = P->seen_v0 != b->all_v, want_w = P->seen_w0 != b->all_w;
    w->firsts.n = 0;
    memset(w->owned, 0, P->T * sizeof(uint64_t));
    for (t = 0; t < P->T; t++) need += P->w[t].pcount[w->id];
    if (!need) return;
    while (cap < 2 * need) cap *= 2;
    if (!room(w, &w->local, cap) || !room(w, &w->firsts, need)) return;
    local = w->local.p;
    memset(local, 0, cap * 4);
    mask = cap - 1;
    for (t = 0; t < P->T; t++) {
        struct wk *o = &P->w[t];
        struct cand *cs = (struct cand *)o->cand.p;
        for (i = 0; i < o->cand.n; i++) {
            struct cand *c = &cs[i];
            uint64_t ref = t << REF_BITS | i, j;
            if (part_of(c->h, P->T) != w->id) continue;
            for (j = c->h & mask; local[j]; j = (j + 1) & mask) {
                struct cand *d = cand_of(P, local[j] - 1);
                if (d->h == c->h && st_eq(d->s, c->s)) { c->first = local[j] - 1; goto next; }
            }
            local[j] = (uint32_t)ref + 1;
            c->first = (uint32_t)ref; c->id = NO_ID;
            c->vm = want_v ? violations(c->s) : 0;
            c->wm = want_w ? witnesses(c->s) : 0;
            w->owned[t]++;
            ((uint32_t *)w->firsts.p)[w->firsts.n++] = (uint32_t)ref;
        next:;
        }
    }
}

/* ids (thread t): the new states of my slice get ids in its order, after the slices before */
static void task_ids(struct wk *w) {
    struct par *P = w->P;
    struct bfs *b = P->b;
    struct cand *cs = w->cand.p;
    st *states = b->states.p;
    uint32_t *parent = b->parent.p, *via = b->via.p;
    uint64_t id = w->id0;
    for (int k = 0; k < 64; k++) w->fv[k] = w->fw[k] = -1;
    for (uint64_t i = 0; i < w->cand.n; i++) {
        struct cand *c = &cs[i];
        if (c->first != ((uint64_t)w->id << REF_BITS | i)) continue;
        c->id = (uint32_t)id;
        states[id] = c->s; parent[id] = c->parent; via[id] = c->act;
        if (c->vm) record(c->vm & ~P->seen_v0, (int64_t)id, w->fv);
        if (c->wm) record(c->wm & ~P->seen_w0, (int64_t)id, w->fw);
        id++;
    }
}

/* edges (thread t), then store (thread k): my slice's bookkeeping, edges to ids; part k's
 * new states into its visited table */
static void task_edges_store(struct wk *w) {
    struct par *P = w->P;
    struct bfs *b = P->b;
    const uint32_t *nsucc = w->nsucc.p, *act = w->act.p;
    const uint8_t *pflag = w->pflag.p;
    const uint64_t *pend = w->pend.p, *target = w->target.p;
    uint32_t *edst = b->graph ? (uint32_t *)b->edst.p + w->e0 : NULL;
    uint32_t *eoff = b->graph ? (uint32_t *)b->eoff.p + w->lo + 1 : NULL;
    uint64_t m = 0, i;
    struct table *tab = &P->tab[w->id];
    if (edst) {      /* each of my candidates gets the id of the state it stands for */
        struct cand *cs = w->cand.p;
        for (i = 0; i < w->cand.n; i++)
            if (cs[i].first != ((uint64_t)w->id << REF_BITS | i)) cs[i].id = cand_of(P, cs[i].first)->id;
    }
    w->settled.n = w->trunc.n = 0;
    w->dead = -1;
    for (int k = 0; k < 64; k++) w->fe[k] = -1;
    memset(w->fired, 0, (NACTIONS + 1) * sizeof(uint64_t));
    for (uint64_t k = 0; k < w->nsucc.n; k++) {
        uint64_t head = w->lo + k;
        int n = (int)nsucc[k], trunc = pflag[k] & 1;
        if (trunc && !(room(w, &w->trunc, w->trunc.n + 1) && push32(&b->r, &w->trunc, (uint32_t)head)))
            return;
        if (pflag[k] >> 1) {
            if (!(room(w, &w->settled, w->settled.n + 1) && push32(&b->r, &w->settled, (uint32_t)head)))
                return;
        } else if (!n && !trunc && w->dead < 0) {
            w->dead = (int64_t)head;
        }
        if (pend[k]) record(pend[k] & ~P->seen_e0, (int64_t)head, w->fe);
        for (int e = 0; e < n; e++, m++) {
            uint64_t x = target[m];
            w->fired[act[m]]++;
            if (edst) edst[m] = x & (CAND_NEW | CAND_DUP) ? cand_of(P, x & REFS)->id : (uint32_t)x;
        }
        if (eoff) eoff[k] = (uint32_t)(w->e0 + m);
    }
    w->moves = m;
    int grown = 0;
    if (4 * (tab->count + w->firsts.n) > 3 * tab->cap) {
        grown = table_grow(&b->r, tab, (const st *)b->states.p, b->states.n + P->pending,
                           tab->count + w->firsts.n, w->id, P->T);
        if (!grown) { set_fail(P); return; }
        if (grown == 2) return;         /* filled from the states: the new ones are in */
    }
    const uint32_t *firsts = w->firsts.p;
    for (i = 0; i < w->firsts.n; i++) {
        struct cand *c = cand_of(P, firsts[i]);
        if (i + PF_SLOT < w->firsts.n) {
            struct cand *d = cand_of(P, firsts[i + PF_SLOT]);
            __builtin_prefetch(&tab->slot[grown ? home(tab, d->h) : d->where]);
        }
        place_from(tab, c->h, c->id, grown ? home(tab, c->h) : c->where);
    }
}

/* store alone (thread k), after the sequential `number`: part k's numbered new states */
static void task_store(struct wk *w) {
    struct par *P = w->P;
    struct bfs *b = P->b;
    struct table *tab = &P->tab[w->id];
    uint64_t add = 0, i;
    for (i = 0; i < w->firsts.n; i++) add += cand_of(P, ((uint32_t *)w->firsts.p)[i])->id != NO_ID;
    if (4 * (tab->count + add) > 3 * tab->cap) {
        int grown = table_grow(&b->r, tab, (const st *)b->states.p, b->states.n, tab->count + add,
                               w->id, P->T);
        if (!grown) { set_fail(P); return; }
        if (grown == 2) return;         /* filled from the states: the new ones are in */
    }
    for (i = 0; i < w->firsts.n; i++) {
        struct cand *c = cand_of(P, ((uint32_t *)w->firsts.p)[i]);
        if (i + PF_SLOT < w->firsts.n) pf_slot(tab, cand_of(P, ((uint32_t *)w->firsts.p)[i + PF_SLOT])->h);
        if (c->id != NO_ID) place(tab, c->h, c->id);
    }
}

/* number (one thread): the sequential loop's bookkeeping over the chunk, in order, for a
 * chunk in which a stop may fall (the state limit, every asked property violated, no id
 * left), which must fall after the parent the sequential loop stops at. 0 go on, 1 stop,
 * -1 no memory. */
static int number(struct par *P) {
    struct bfs *b = P->b;
    for (uint32_t t = 0; t < P->T; t++) {
        struct wk *w = &P->w[t];
        const uint32_t *nsucc = w->nsucc.p, *act = w->act.p;
        const uint8_t *pflag = w->pflag.p;
        const uint64_t *pend = w->pend.p, *target = w->target.p;
        uint64_t m = 0;
        for (uint64_t k = 0; k < w->nsucc.n; k++) {
            int n = (int)nsucc[k], trunc = pflag[k] & 1;
            if (!parent_begin(b, trunc, pflag[k] >> 1, n, pend[k])) return -1;
            if (b->graph && !reserve(&b->r, &b->edst, b->edst.n + n)) return -1;
            for (int i = 0; i < n; i++, m++) {
                uint64_t x = target[m];
                int64_t j;
                b->out->fired[act[m]]++;
                if (x & (CAND_NEW | CAND_DUP)) {
                    uint64_t ref = x & REFS;
                    struct cand *c = cand_of(P, ref);
                    if ((x & CAND_NEW) && c->first == ref) {   /* the first to reach it */
                        j = add_state(b, c->s, (int32_t)act[m]);
                        if (j < 0) return b->r.oom ? -1 : 1;
                        c->id = (uint32_t)j;
                        note_masks(b, j, c->vm, c->wm);
                    } else {
                        j = cand_of(P, c->first)->id;
                    }
                } else {
                    j = (int64_t)x;
                }
                if (b->graph) ((uint32_t *)b->edst.p)[b->edst.n++] = (uint32_t)j;
            }
            int end = parent_end(b, n);
            if (end) return end;
        }
    }
    return 0;
}

/* Whether the chunk's results, merged, meet the early stop (so `number` must find where). */
static int would_stop(struct par *P) {
    struct bfs *b = P->b;
    const struct tc_stop *stop = b->stop;
    uint64_t v = b->seen_v, wv = b->seen_w, e = b->seen_e;
    int dead = b->out->deadlock >= 0;
    if (!stop->on) return 0;
    for (uint32_t t = 0; t < P->T; t++) {
        struct wk *w = &P->w[t];
        for (int k = 0; k < 64; k++) {
            if (w->fv[k] >= 0) v |= 1ULL << k;
            if (w->fw[k] >= 0) wv |= 1ULL << k;
            if (w->fe[k] >= 0) e |= 1ULL << k;
        }
        dead |= w->dead >= 0;
    }
    return (v & stop->invariants) == stop->invariants && (wv & stop->witnesses) == stop->witnesses
        && (e & stop->ends) == stop->ends && (dead || !stop->deadlock);
}

/* Merge the slices, in order, as the sequential loop would have left them. 0, -1 no memory. */
static int merge_chunk(struct par *P, uint64_t nnew, uint64_t moves, uint64_t hi) {
    struct bfs *b = P->b;
    struct tc_out *out = b->out;
    for (uint32_t t = 0; t < P->T; t++) {
        struct wk *w = &P->w[t];
        for (uint64_t i = 0; i < w->settled.n; i++)
            if (!push32(&b->r, &b->settled_ids, ((uint32_t *)w->settled.p)[i])) return -1;
        for (uint64_t i = 0; i < w->trunc.n; i++)
            if (!push32(&b->r, &b->truncated, ((uint32_t *)w->trunc.p)[i])) return -1;
        if (out->deadlock < 0 && w->dead >= 0) out->deadlock = w->dead;
        for (int k = 0; k < 64; k++) {
            if (w->fv[k] >= 0 && out->first_violation[k] < 0) { out->first_violation[k] = w->fv[k]; b->seen_v |= 1ULL << k; }
            if (w->fw[k] >= 0 && out->first_witness[k] < 0) { out->first_witness[k] = w->fw[k]; b->seen_w |= 1ULL << k; }
            if (w->fe[k] >= 0 && out->first_bad_end[k] < 0) { out->first_bad_end[k] = w->fe[k]; b->seen_e |= 1ULL << k; }
        }
        for (uint64_t a = 0; a < NACTIONS; a++) out->fired[a] += w->fired[a];
    }
    b->states.n += nnew; b->parent.n += nnew; b->via.n += nnew;
    if (b->graph) { b->edst.n += moves; b->eoff.n += hi - b->head; }
    out->transitions += moves;
    b->head = hi;
    return 0;
}

/* One chunk, parents [lo, hi) split among the threads. 0 go on, 1 stop, -1 failed. */
static int chunk_step(struct par *P, uint64_t lo, uint64_t hi, uint64_t per) {
    struct bfs *b = P->b;
    struct wk *w = P->w;
    double *ps = b->out->phase_seconds, c0;
    uint64_t nnew = 0, moves = 0, t, k;
    for (t = 0; t < P->T; t++) {
        w[t].lo = lo + per * t > hi ? hi : lo + per * t;
        w[t].hi = lo + per * (t + 1) > hi ? hi : lo + per * (t + 1);
    }
    P->seen_v0 = b->seen_v; P->seen_w0 = b->seen_w; P->seen_e0 = b->seen_e;
    ps[0] += run_all(P, task_expand);
    if (P->fail) return -1;
    ps[1] += run_all(P, task_dedupe);
    if (P->fail) return -1;
    for (t = 0; t < P->T; t++) {
        w[t].nnew = 0;
        for (k = 0; k < P->T; k++) w[t].nnew += w[k].owned[t];
        w[t].id0 = b->states.n + nnew;
        w[t].e0 = b->edst.n + moves;
        nnew += w[t].nnew;
        moves += w[t].target.n;
    }
    if ((b->max_states && b->states.n + nnew >= b->max_states) || b->states.n + nnew >= 0xFFFFFFFEULL
        || (b->graph && b->edst.n + moves > 0xFFFFFFFEULL)) {
        c0 = cpu_s();
        int end = number(P);
        ps[4] += cpu_s() - c0;
        if (end) return end;
        ps[3] += run_all(P, task_store);
        return P->fail ? -1 : 0;
    }
    if (!reserve(&b->r, &b->states, b->states.n + nnew) || !reserve(&b->r, &b->parent, b->parent.n + nnew)
        || !reserve(&b->r, &b->via, b->via.n + nnew)
        || (b->graph && (!reserve(&b->r, &b->edst, b->edst.n + moves)
                         || !reserve(&b->r, &b->eoff, b->eoff.n + hi - lo))))
        return -1;
    ps[2] += run_all(P, task_ids);
    P->pending = nnew;       /* written past states.n, counted by merge_chunk */
    ps[3] += run_all(P, task_edges_store);
    P->pending = 0;
    if (P->fail) return -1;
    if (would_stop(P)) {      /* the stop falls in this chunk: find its parent in order */
        c0 = cpu_s();
        int end = number(P);
        ps[4] += cpu_s() - c0;
        return end ? end : 0;
    }
    return merge_chunk(P, nnew, moves, hi);
}

/* PROGRESS on the threads: count predecessors, fill them, search back from the goals */
/* Each thread takes the edges of a range of sources; the counts and the fill are atomic
 * (the order of a target's predecessors then varies, the states that reach a goal do not) */
static void task_count(struct wk *w) {
    struct par *P = w->P;
    for (uint64_t e = P->eoff[w->tlo]; e < P->eoff[w->thi]; e++)
        __atomic_fetch_add(&P->pos[P->edst[e]], 1, __ATOMIC_RELAXED);
}

static void task_fill(struct wk *w) {
    struct par *P = w->P;
    for (uint64_t s = w->tlo; s < w->thi; s++)
        for (uint64_t e = P->eoff[s]; e < P->eoff[s + 1]; e++)
            P->pred[__atomic_sub_fetch(&P->pos[P->edst[e]], 1, __ATOMIC_RELAXED)] = (uint32_t)s;
}

static void task_back(struct wk *w) {      /* one level of the backward search */
    struct par *P = w->P;
    const uint32_t *front = P->front;
    uint64_t lo = P->nfront * w->id / P->T, hi = P->nfront * (w->id + 1) / P->T;
    w->next.n = 0;
    for (uint64_t f = lo; f < hi; f++) {
        uint32_t t = front[f];
        for (uint64_t i = P->pos[t]; i < P->pos[t + 1]; i++) {
            uint32_t s = P->pred[i];
            if (!P->good[s] && !__atomic_exchange_n(&P->good[s], 1, __ATOMIC_RELAXED)) {
                if (!room(w, &w->next, w->next.n + 1)) return;
                ((uint32_t *)w->next.p)[w->next.n++] = s;
            }
        }
    }
}

static void graph_phase_par(struct par *P) {
    struct bfs *b = P->b;
    uint64_t n = b->states.n, i;
    double t0 = now_s();
    const uint32_t *goals[2] = {b->settled_ids.p, b->truncated.p};
    uint64_t ngoals[2] = {b->settled_ids.n, b->truncated.n};
    P->n = n; P->eoff = b->eoff.p; P->edst = b->edst.p; P->m = P->eoff[n];
    P->pos = grab(&b->r, NULL, 0, (n + 1) * 4, 1);
    P->pred = grab(&b->r, NULL, 0, P->m * 4 + 4, 0);
    P->good = grab(&b->r, NULL, 0, n + 1, 1);
    if (!P->pos || !P->pred || !P->good) goto done;
    for (uint32_t t = 0; t < P->T; t++) {
        P->w[t].tlo = n * t / P->T;
        P->w[t].thi = n * (t + 1) / P->T;
    }
    /* as first_stuck: pos[t] counts t's predecessors, then (prefix sums) ends their list,
     * and filling moves it down to the list's start */
    double *ps = b->out->phase_seconds, c0 = cpu_s();
    ps[5] += run_all(P, task_count);
    c0 = cpu_s();
    for (i = 1; i <= n; i++) P->pos[i] += P->pos[i - 1];
    ps[5] += cpu_s() - c0;
    ps[5] += run_all(P, task_fill);
    if (P->fail) goto done;
    /* level by level; each level's states split evenly among the threads */
    P->front = grab(&b->r, NULL, 0, (n + 1) * 4, 0);
    if (P->front == NULL) goto done;
    P->nfront = 0;
    for (int k = 0; k < 2; k++)
        for (i = 0; i < ngoals[k]; i++) {
            uint32_t s = goals[k][i];
            if (!P->good[s]) { P->good[s] = 1; P->front[P->nfront++] = s; }
        }
    while (P->nfront) {
        ps[5] += run_all(P, task_back);
        if (P->fail) goto done;
        P->nfront = 0;
        for (uint32_t t = 0; t < P->T; t++) {
            memcpy(P->front + P->nfront, P->w[t].next.p, P->w[t].next.n * 4);
            P->nfront += P->w[t].next.n;
        }
    }
    b->out->stuck = -1;
    for (i = 0; i < n; i++)
        if (!P->good[i]) { b->out->stuck = (int64_t)i; break; }
done:
    if (P->fail || !P->pos || !P->pred || !P->good) { b->out->stuck = -1; b->r.oom = 1; }
    drop(&b->r, P->pos, (n + 1) * 4); drop(&b->r, P->pred, P->m * 4 + 4); drop(&b->r, P->good, n + 1);
    drop(&b->r, P->front, (n + 1) * 4);
    P->pos = P->pred = P->front = NULL; P->good = NULL;
    b->out->graph_seconds = now_s() - t0;
}

static int explore_par(struct bfs *b, st init, uint32_t T, uint64_t chunk) {
    struct par P;
    struct wk w[MAX_JOBS];
    struct table tab[MAX_JOBS];
    uint64_t per_max = REF_MAX / (NACTIONS + 1), h = st_hash(init);
    uint32_t t;
    int end = 0;

    memset(&P, 0, sizeof P); memset(w, 0, sizeof w); memset(tab, 0, sizeof tab);
    P.b = b; P.w = w; P.tab = tab; P.T = T;
    for (t = 0; t < T; t++) { w[t].P = &P; w[t].id = t; }
    if (pthread_barrier_init(&P.bar, NULL, T)) return explore_seq(b, init);
    pthread_mutex_init(&P.gate, NULL);
    pthread_cond_init(&P.opened, NULL);
    if (!start_threads(&P)) {        /* the machine gives no more threads: one will do */
        pthread_barrier_destroy(&P.bar);
        pthread_mutex_destroy(&P.gate);
        pthread_cond_destroy(&P.opened);
        return explore_seq(b, init);
    }
    for (t = 0; t < T; t++) {
        struct wk *x = &w[t];
        x->nsucc.item = x->act.item = x->firsts.item = x->next.item = 4;
        x->local.item = x->settled.item = x->trunc.item = 4;
        x->pflag.item = 1;
        x->pend.item = x->target.item = x->seen.item = 8;
        x->cand.item = sizeof(struct cand);
        x->pcount = calloc(T, sizeof(uint64_t));
        x->owned = calloc(T, sizeof(uint64_t));
        x->fired = calloc(NACTIONS + 1, sizeof(uint64_t));
        if (!x->pcount || !x->owned || !x->fired || !batch_init(&x->batch)
            || !memo_grow(&b->r, &x->memo) || !table_grow(&b->r, &tab[t], NULL, 0, 1, t, T)) {
            b->r.oom = 1;
            goto done;
        }
    }
    if (!bfs_start(b, init)) goto done;
    place(&tab[part_of(h, T)], h, 0);
    while (b->head < b->states.n && !end) {
        uint64_t lo = b->head, hi, per;
        if (b->head == b->level_end) {
            if (!push32(&b->r, &b->levels, (uint32_t)b->level_end)) goto done;
            b->level_end = b->states.n;
        }
        hi = b->level_end - lo > chunk ? lo + chunk : b->level_end;
        per = (hi - lo + T - 1) / T;
        if (per > per_max) { per = per_max; hi = lo + per * T; }
        end = chunk_step(&P, lo, hi, per);
        if (end < 0) goto done;
        if (!end) end = poll(b, 0);
    }
    if (!bfs_levels(b)) goto done;
    for (t = 0; t < T; t++) { drop(&b->r, tab[t].slot, tab[t].cap * 8); tab[t].slot = NULL; }
    if (b->phase && b->out->complete) graph_phase_par(&P);
done:
    if (P.fail) b->r.oom = 1;
    P.task = NULL;                    /* the threads wait at the barrier: send them home */
    pthread_barrier_wait(&P.bar);
    for (t = 1; t < T; t++) pthread_join(w[t].th, NULL);
    pthread_barrier_destroy(&P.bar);
    pthread_mutex_destroy(&P.gate);
    pthread_cond_destroy(&P.opened);
    b->out->memo_entries = 0;
    for (t = 0; t < T; t++) {
        struct vec *vs[] = {&w[t].nsucc, &w[t].pflag, &w[t].pend, &w[t].target, &w[t].act,
                            &w[t].cand, &w[t].firsts, &w[t].local, &w[t].seen, &w[t].settled,
                            &w[t].trunc, &w[t].next};
        for (unsigned k = 0; k < sizeof vs / sizeof vs[0]; k++) vec_drop(&b->r, vs[k]);
        b->out->memo_entries += w[t].memo.count;
        memo_drop(&b->r, &w[t].memo);
        drop(&b->r, tab[t].slot, tab[t].cap * 8);
        free(w[t].pcount); free(w[t].owned); free(w[t].fired);
        batch_drop(&w[t].batch);
    }
    return b->r.oom;
}

int tc_abi(void) { return TC_ABI; }

/* PROGRESS's backward search over a graph a search kept (graph = 2): the least id from which
 * no goal is reachable, -1 none, -2 no memory. */
int64_t tc_first_stuck(uint64_t n, const uint32_t *eoff, const uint32_t *edst, const uint32_t *goal1,
                       uint64_t n1, const uint32_t *goal2, uint64_t n2) {
    struct acct r = {0, 0, 0};
    return first_stuck(&r, n, eoff, edst, goal1, n1, goal2, n2);
}

int tc_state_bytes(void) { return (int)sizeof(st); }

void tc_free(void *p) { free(p); }

/* The BFS of explore.py, on `jobs` threads; 0 on success (a stop by limit is success with
 * complete = 0). `chunk`: parents per parallel step (0: the default). */
static double process_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int tc_explore(const uint64_t *init_words, uint64_t max_states, double timeout, int graph,
               int jobs, uint64_t chunk, tc_tick tick, const struct tc_stop *stop,
               struct tc_out *out) {
    struct bfs b;
    double c0 = process_cpu_s();
    st init = st_from_words(init_words);
    int rc;
    if (jobs > MAX_JOBS) jobs = MAX_JOBS;
    if (NACTIONS + 1 > REF_MAX) jobs = 1;       /* a chunk's candidates would not fit a ref */
    if (!bfs_init(&b, out, stop, graph, max_states, tick, timeout)) {
        rc = 1;
    } else if (jobs <= 1) {
        rc = explore_seq(&b, init);
    } else {
        rc = explore_par(&b, init, (uint32_t)jobs, chunk ? chunk : 1 << 14);
    }
    out->jobs = jobs < 1 ? 1 : (uint64_t)jobs;
    bfs_out(&b);
    out->cpu_seconds = process_cpu_s() - c0;
    return rc || b.r.oom ? 1 : 0;
}
