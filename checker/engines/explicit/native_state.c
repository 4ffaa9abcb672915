/* The packed state of the native explicit engine (toolcommit.checker.engines.explicit.native).
 *
 * Put first, after the generated `#define ST_WORDS n`: the state of a model whose fields need
 * n 64-bit words. Its bit layout is the Python engine's (codegen._layout: variable after
 * variable from bit 0, so a field may straddle two words), and states compare as the Python
 * engine's ints do, so both engines pick the same least state of an orbit and number states
 * alike. Up to two words a state is one unsigned __int128 (the common case, at full speed);
 * wider, it is an array of words, word 0 the least significant, compared from the top word
 * down and updated with carries, which is exact modulo 2^(64 n) as the 128-bit one is
 * modulo 2^128. */
#include <stdint.h>
#include <string.h>

typedef int64_t val;

#if ST_WORDS <= 2
typedef unsigned __int128 st;
#define SHIFTED(d, off) ((st)(__int128)(val)(d) << (off))
static inline int st_eq(st a, st b) { return a == b; }
static inline int st_lt(st a, st b) { return a < b; }
static inline st st_and(st a, st b) { return a & b; }
static inline st st_or(st a, st b) { return a | b; }
static inline st st_xor(st a, st b) { return a ^ b; }
static inline st st_from_words(const uint64_t *w) { return ((st)w[1] << 64) | w[0]; }
static inline uint64_t st_hash(st s) {
    uint64_t lo = (uint64_t)s, hi = (uint64_t)(s >> 64);
    uint64_t h = lo * 0x9E3779B97F4A7C15ULL ^ (hi + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
    h ^= h >> 31; h *= 0xBF58476D1CE4E5B9ULL; h ^= h >> 29; h *= 0x94D049BB133111EBULL;
    return h ^ (h >> 32);
}
#else
typedef struct { uint64_t w[ST_WORDS]; } st;
static inline int st_eq(st a, st b) {
    for (int i = 0; i < ST_WORDS; i++) if (a.w[i] != b.w[i]) return 0;
    return 1;
}
static inline int st_lt(st a, st b) {
    for (int i = ST_WORDS - 1; i >= 0; i--) if (a.w[i] != b.w[i]) return a.w[i] < b.w[i];
    return 0;
}
static inline st st_and(st a, st b) { for (int i = 0; i < ST_WORDS; i++) a.w[i] &= b.w[i]; return a; }
static inline st st_or(st a, st b) { for (int i = 0; i < ST_WORDS; i++) a.w[i] |= b.w[i]; return a; }
static inline st st_xor(st a, st b) { for (int i = 0; i < ST_WORDS; i++) a.w[i] ^= b.w[i]; return a; }
static inline st st_from_words(const uint64_t *w) { st s; memcpy(s.w, w, sizeof s.w); return s; }
static inline uint64_t st_hash(st s) {
    uint64_t h = 0x632BE59BD9B4E019ULL;
    for (int i = 0; i < ST_WORDS; i++) {
        h = (h ^ s.w[i]) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 31;
    }
    h *= 0xBF58476D1CE4E5B9ULL; h ^= h >> 29; h *= 0x94D049BB133111EBULL;
    return h ^ (h >> 32);
}
/* t += d * 2^(64 i + b), modulo 2^(64 ST_WORDS): the 128-bit engine's SHIFTED add, wider */
static inline void st_add_at(st *t, int i, int b, val d) {
    uint64_t lo = (uint64_t)d << b;
    uint64_t hi = b ? (uint64_t)(d >> (64 - b)) : (uint64_t)(d >> 63);
    uint64_t ext = (uint64_t)(d >> 63), carry, old = t->w[i];
    t->w[i] = old + lo;
    carry = t->w[i] < old;
    for (int j = i + 1; j < ST_WORDS; j++) {
        uint64_t add = j == i + 1 ? hi : ext, o = t->w[j], r = o + add, c1 = r < o;
        r += carry;
        carry = c1 | (r < carry);
        t->w[j] = r;
    }
}
#endif
