/* The model half of the shared native engine (toolcommit.checker.engines.explicit.native_vm):
 * one library for every model of a state width, the model given as data at each search.
 *
 * Put after native_state.c (with `#define ST_WORDS n` and `#define HAS_SYMMETRY 0|1`) and
 * before native_bfs.c, whose search it serves unchanged: it defines successors, violations,
 * witnesses, end_violations, settled, canon_raw, NACTIONS, NINV, NWIT, NEND, FAULT and
 * SYM_MASK over `M`, the model of the search under way, read from the program that
 * native_vm.py encodes. Each of them does what native_c.py's generated function of the same
 * name does, in the same order (the same decision tree, the same successor order, the same
 * int64 arithmetic), so a search gives the same states under the same ids.
 *
 * A program is an array of int64: a header of section offsets, then the sections (see
 * native_vm.py, `encode`). Expressions are postfix code over a stack of int64; the
 * successor function is a tree of conditional jumps whose leaves emit an action's
 * successor. `tc_vm_explore` holds a lock while it searches: a library serves one search at
 * a time (the model is a global the search's threads read). */
#include <stdint.h>
#include <pthread.h>

enum { E_END, E_CONST, E_VAR, E_EQ, E_NE, E_LT, E_LE, E_ADD, E_SUB, E_NOT, E_AND, E_OR, E_ITE,
       E_VAR_EQ, E_VAR_NE };     /* var == const, var != const: the common conjuncts, fused */
enum { T_END, T_IF, T_EMIT, T_CUT, T_IF_EQ, T_IF_NE };   /* T_IF_EQ: if var == const */
enum { H_NVARS, H_NACTIONS, H_NINV, H_NWIT, H_NEND, H_ORBIT, H_NGROUPS,
       H_VARS, H_FAULT, H_ACTS, H_TREE, H_EXPR, H_INV, H_WIT, H_END, H_SETTLED, H_SYM,
       H_SYMMASK, H_LEN };

#define VM_STACK 256
#define VM_VARS 1024

struct vm_model {
    const int64_t *p;
    int64_t nvars, nactions, ninv, nwit, nend, orbit, ngroups;
    const int64_t *vars;     /* per variable: offset, width */
    const int64_t *fault;    /* per action: 1 if a fault */
    const int64_t *acts;     /* per action: index of its update list in p */
    const int64_t *tree, *expr, *inv, *wit, *end, *sym;
    int64_t settled;
    st sym_mask;
};

static struct vm_model M;
static pthread_mutex_t vm_lock = PTHREAD_MUTEX_INITIALIZER;

#define NACTIONS ((uint64_t)M.nactions)
#define NINV ((int)M.ninv)
#define NWIT ((int)M.nwit)
#define NEND ((int)M.nend)
#define FAULT M.fault
#define SYM_MASK M.sym_mask

static inline val vm_field(st s, int64_t off, int64_t wid) {
    uint64_t mask = wid >= 64 ? ~0ULL : ((1ULL << wid) - 1);
#if ST_WORDS <= 2
    return (val)((uint64_t)(s >> off) & mask);
#else
    int64_t i = off / 64, b = off % 64;
    if (b + wid <= 64) return (val)((s.w[i] >> b) & mask);
    return (val)(((s.w[i] >> b) | (s.w[i + 1] << (64 - b))) & mask);
#endif
}

/* variable i's value in s */
#define VAR(s, i) vm_field((s), M.vars[2 * (i)], M.vars[2 * (i) + 1])

/* The value of the expression at M.expr[pc] in state `s` (Python's value semantics, as
 * native_c.to_c emits them); a variable is read from `s` where the code reads it. */
static val vm_eval(int64_t pc, st s) {
    val stack[VM_STACK];
    int sp = 0;
    const int64_t *e = M.expr;
    for (;;) {
        switch (e[pc]) {
        case E_END: return stack[sp - 1];
        case E_CONST: stack[sp++] = e[pc + 1]; pc += 2; break;
        case E_VAR: stack[sp++] = VAR(s, e[pc + 1]); pc += 2; break;
        case E_VAR_EQ: stack[sp++] = VAR(s, e[pc + 1]) == e[pc + 2]; pc += 3; break;
        case E_VAR_NE: stack[sp++] = VAR(s, e[pc + 1]) != e[pc + 2]; pc += 3; break;
        case E_EQ: sp--; stack[sp - 1] = stack[sp - 1] == stack[sp]; pc++; break;
        case E_NE: sp--; stack[sp - 1] = stack[sp - 1] != stack[sp]; pc++; break;
        case E_LT: sp--; stack[sp - 1] = stack[sp - 1] < stack[sp]; pc++; break;
        case E_LE: sp--; stack[sp - 1] = stack[sp - 1] <= stack[sp]; pc++; break;
        case E_ADD: sp--; stack[sp - 1] = stack[sp - 1] + stack[sp]; pc++; break;
        case E_SUB: sp--; stack[sp - 1] = stack[sp - 1] - stack[sp]; pc++; break;
        case E_NOT: stack[sp - 1] = !stack[sp - 1]; pc++; break;
        case E_AND: {           /* the first falsy operand (0), else the last */
            int64_t n = e[pc + 1], i;
            val r = stack[sp - 1];
            for (i = sp - n; i < sp; i++) if (!stack[i]) { r = 0; break; }
            sp -= (int)n; stack[sp++] = r; pc += 2; break;
        }
        case E_OR: {            /* the first truthy operand, else the last */
            int64_t n = e[pc + 1], i;
            val r = stack[sp - 1];
            for (i = sp - n; i < sp; i++) if (stack[i]) { r = stack[i]; break; }
            sp -= (int)n; stack[sp++] = r; pc += 2; break;
        }
        case E_ITE: sp -= 2; stack[sp - 1] = stack[sp - 1] ? stack[sp] : stack[sp + 1]; pc++; break;
        default: return 0;      /* not reached: native_vm.py emits only the above */
        }
    }
}

static int successors(st s, uint32_t *acts, st *outs, int *cut) {
    int k = 0;
    int64_t pc = 0;
    const int64_t *t = M.tree;
    for (;;) {
        switch (t[pc]) {
        case T_END: return k;
        case T_IF: pc = vm_eval(t[pc + 1], s) ? pc + 3 : t[pc + 2]; break;
        case T_IF_EQ: pc = VAR(s, t[pc + 1]) == t[pc + 2] ? pc + 4 : t[pc + 3]; break;
        case T_IF_NE: pc = VAR(s, t[pc + 1]) != t[pc + 2] ? pc + 4 : t[pc + 3]; break;
        case T_CUT: *cut = 1; pc++; break;
        case T_EMIT: {
            int64_t a = t[pc + 1];
            const int64_t *u = M.p + M.acts[a];
            st x = s;
            for (int64_t i = 0, n = u[0]; i < n; i++) {
                int64_t var = u[1 + 2 * i];
                val d = vm_eval(u[2 + 2 * i], s) - VAR(s, var);
#if ST_WORDS <= 2
                x += SHIFTED(d, M.vars[2 * var]);
#else
                st_add_at(&x, (int)(M.vars[2 * var] / 64), (int)(M.vars[2 * var] % 64), d);
#endif
            }
            acts[k] = (uint32_t)a; outs[k++] = x;
            pc += 2; break;
        }
        default: return k;
        }
    }
}

/* bit i set where the i-th expression of `list` (count, then offsets) is true (!negate) or
 * false (negate) */
static uint64_t vm_mask(st s, const int64_t *list, int negate) {
    uint64_t m = 0;
    for (int64_t i = 0; i < list[0]; i++) {
        int holds = vm_eval(list[1 + i], s) != 0;
        if (holds != negate) m |= 1ULL << i;
    }
    return m;
}

static uint64_t violations(st s) { return vm_mask(s, M.inv, 1); }
static uint64_t witnesses(st s) { return vm_mask(s, M.wit, 0); }
static uint64_t end_violations(st s) { return vm_mask(s, M.end, 1); }

static int settled(st s) {
    return vm_eval(M.settled, s) ? 1 : 0;
}

#if HAS_SYMMETRY
static inline void vm_put(st *t, int64_t off, int64_t wid, val x) {
#if ST_WORDS <= 2
    (void)wid;
    *t |= (st)(uint64_t)x << off;
#else
    int64_t i = off / 64, b = off % 64;
    t->w[i] |= (uint64_t)x << b;
    if (b + wid > 64) t->w[i + 1] |= (uint64_t)x >> (64 - b);
#endif
}

/* One permutation (at M.p[at]): keep mask (ST words), count, then per placed variable:
 * target, kind (0: the value of variable `src`; 1: its own value renamed by the table),
 * src, table length, table. native_c._CGen.permuted's statements. */
static st vm_permute(st s, int64_t at) {
    const int64_t *q = M.p + at;
    st t;
    uint64_t words[ST_WORDS < 2 ? 2 : ST_WORDS];
    int64_t nw = ST_WORDS < 2 ? 2 : ST_WORDS;
    for (int64_t i = 0; i < nw; i++) words[i] = (uint64_t)q[i];
    t = st_and(s, st_from_words(words));
    q += nw;
    for (int64_t i = 0, n = *q++; i < n; i++) {
        int64_t dst = q[0], kind = q[1], src = q[2], len = q[3];
        val x = VAR(s, src);
        if (kind == 1 && x < len) x = q[4 + x];
        vm_put(&t, M.vars[2 * dst], M.vars[2 * dst + 1], x);
        q += 4 + len;
    }
    return t;
}

/* The least image of `s` under the product of the groups (native_c._CGen.canon_src). The
 * symmetry section: per group, its permutation count, then each one's offset in p. */
static st canon_raw(st s) {
    st orbit[M.orbit > 0 ? M.orbit : 1], best = s, t;
    uint64_t n = 1, m, i;
    const int64_t *g = M.sym;
    orbit[0] = s;
    for (int64_t gi = 0; gi < M.ngroups; gi++) {
        int64_t k = g[0];
        int last = gi == M.ngroups - 1;
        for (m = n, i = 0; i < m; i++)
            for (int64_t j = 0; j < k; j++) {
                if (last) {
                    t = vm_permute(orbit[i], g[1 + j]);
                    if (st_lt(t, best)) best = t;
                } else {
                    orbit[n++] = vm_permute(orbit[i], g[1 + j]);
                }
            }
        g += 1 + k;
    }
    for (i = 0; i < n; i++) if (st_lt(orbit[i], best)) best = orbit[i];
    return best;
}
#endif

static int vm_set(const int64_t *p) {
    M.p = p;
    M.nvars = p[H_NVARS]; M.nactions = p[H_NACTIONS];
    M.ninv = p[H_NINV]; M.nwit = p[H_NWIT]; M.nend = p[H_NEND];
    M.orbit = p[H_ORBIT]; M.ngroups = p[H_NGROUPS];
    if (M.nvars > VM_VARS) return 0;
    M.vars = p + p[H_VARS]; M.fault = p + p[H_FAULT]; M.acts = p + p[H_ACTS];
    M.tree = p + p[H_TREE]; M.expr = p + p[H_EXPR];
    M.inv = p + p[H_INV]; M.wit = p + p[H_WIT]; M.end = p + p[H_END];
    M.settled = p[H_SETTLED]; M.sym = p + p[H_SYM];
    {
        uint64_t words[ST_WORDS < 2 ? 2 : ST_WORDS];
        for (int i = 0; i < (ST_WORDS < 2 ? 2 : ST_WORDS); i++) words[i] = (uint64_t)p[p[H_SYMMASK] + i];
        M.sym_mask = st_from_words(words);
    }
    return 1;
}
