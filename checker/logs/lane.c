/* The log checker's native lane: `Conformance.feed`'s common cases, compiled.
 *
 * A CPython extension built on first use (checker/logs/lane.py). It works on the very
 * objects the Python core uses (the checker's dicts, its Writer, Key and Intent objects,
 * read and written by slot offset) and mirrors, statement for statement, the fast paths of
 * `Conformance.feed`, `intents.proposal`, `intents.effect`, `chains.close`, `Store.pack`
 * and `intents.digest` (for the flat calls `canon.flat_digest_v1` serves). Anything else
 * -- a new writer, a seq out of order, an unusual key, intent or value -- is handed to the
 * Python function that would have run, at the point it would have run, so the two paths
 * leave the same state behind (tests compare them on every fixture). A change to one of
 * those Python fast paths must be made here too: tests/logs/test_validate_lane.py fails
 * until it is. One thread at a time: the buffers and the failed line are static.
 *
 * Contract of feed(checker, events, file_index, first_line): feed events[i] as line
 * first_line + i; returns None; on an exception from a Python stage, the line it was
 * raised on is left in failed_line().
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* ----- configuration, set once by setup() -------------------------------------------- */
enum { EV_P, EV_T, EV_E, EV_C, EV_R, NEV };
enum { F_WRITER, F_SEQ, F_KEY, F_FROM, F_TO, F_FENCE, F_TOOL, F_ARGS, F_SCOPE, F_DECISION,
       F_EPOCH, F_KIND, F_IDEM, F_EID, NF };
static const char *FIELD_NAMES[NF] = {"writer", "seq", "key", "from_", "to", "fence", "tool",
    "args", "scope", "decision", "epoch", "kind", "idempotency_key", "effect_id"};
enum { K_NAME, K_TIP, K_VISITED, K_CHAIN, K_PENDING, K_MAXF, K_LAST_LOC, K_LAST_WRITER,
       K_FLAGS, K_DISP, K_DISP_LOC, K_APPLIES, K_APPLY_LOC, K_APPLY_ID, K_COMP, K_MINF,
       K_MINF_LOC, K_ACCEPTED, K_ACC_LOC, K_ACC_SEQ, K_REACC, K_DIGEST, K_FORKS, NK };
static const char *KEY_NAMES[NK] = {"name", "tip", "visited", "chain", "pending", "max_fence",
    "last_loc", "last_writer", "flags", "dispatches", "dispatch_loc", "applies", "apply_loc",
    "apply_id", "compensates", "min_apply_fence", "min_apply_loc", "accepted", "accept_loc",
    "accept_seq", "reaccepts", "digest", "forks"};
enum { I_KEY, I_EPOCH, I_LOC, I_SEQ, I_MORE, I_EKEYS, I_HINT, I_APPLIES, I_APPLY_LOCS,
       I_COMP, I_RECORDED, NI };
static const char *INTENT_NAMES[NI] = {"key", "epoch", "loc", "seq", "more", "effect_keys",
    "hint", "applies", "apply_locs", "compensates", "recorded"};
enum { W_BASE, W_NXT, W_HI_LOC, NW };
static const char *WRITER_NAMES[NW] = {"base", "nxt", "hi_loc"};

static PyTypeObject *ev_type[NEV], *key_type, *intent_type, *writer_type;
static Py_ssize_t ev_off[NEV][NF];         /* -1: the event type has no such field */
static Py_ssize_t k_off[NK], i_off[NI], w_off[NW];
static PyObject *key_template, *intent_template;
static PyObject *code;                     /* state name -> int */
static PyObject *stage[NEV];               /* Python stage functions (st, ev, w, loc) */
static PyObject *note_seq, *py_close, *py_pack, *sha256, *prefix, *type_names[NEV];
static PyObject *s_accepted, *s_apply;
static long next_mask[32], terminal_mask, nstates;
static long S_RECORDED, S_DISPATCHED, S_CANCELLED, S_RECONCILING, S_DEAD_LETTER;
static long FL_RECORD, FL_CANCELLED, FL_SEALED, FL_TRANSITIONS, FL_CLOSED, FL_JUDGE,
    FL_PROPOSED, PACKABLE, MAX_CHAIN, MAX_PACKED_CHAIN, MEMO_MAX, LINE_BITS;
static int configured;
static PyObject *one_int;
static long long failed;                   /* the line feed() was at when it raised */
/* OpenSSL's EVP digest calls, when setup was given them: a digest fetched once and one
 * reused context (OpenSSL 3's one-shot SHA256() fetches the algorithm on every call) */
typedef void *(*ctx_new_fn)(void);
typedef int (*init_fn)(void *, const void *, void *);
typedef int (*update_fn)(void *, const void *, size_t);
typedef int (*final_fn)(void *, unsigned char *, unsigned int *);
static init_fn evp_init;
static update_fn evp_update;
static final_fn evp_final;
static void *evp_ctx, *evp_md;

/* SHA-256 of data into md (32 bytes) by OpenSSL; 0 when it is not available or failed */
static int native_sha256(const char *data, size_t n, unsigned char *md)
{
    unsigned int len = 0;
    return evp_ctx != NULL && evp_init(evp_ctx, evp_md, NULL) == 1
        && evp_update(evp_ctx, data, n) == 1 && evp_final(evp_ctx, md, &len) == 1 && len == 32;
}

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

static inline void put(PyObject *o, Py_ssize_t off, PyObject *v)   /* steals v */
{
    PyObject **p = (PyObject **)((char *)o + off);
    PyObject *old = *p;
    *p = v;
    Py_XDECREF(old);
}

static inline void put_new(PyObject *o, Py_ssize_t off, PyObject *v)   /* borrows v */
{
    Py_INCREF(v);
    put(o, off, v);
}

/* a small exact int slot as a C long; -1 with *ok = 0 when it is not one */
static inline long small(PyObject *v, int *ok)
{
    if (v == NULL || !PyLong_CheckExact(v)) { *ok = 0; return -1; }
    int overflow = 0;
    long r = PyLong_AsLongAndOverflow(v, &overflow);
    if (overflow) { *ok = 0; return -1; }
    return r;
}

/* ----- setup ------------------------------------------------------------------------- */
static int member_offset(PyTypeObject *tp, const char *name, Py_ssize_t *out)
{
    PyObject *d = PyObject_GetAttrString((PyObject *)tp, name);
    if (d == NULL) { PyErr_Clear(); *out = -1; return 0; }
    int ok = Py_IS_TYPE(d, &PyMemberDescr_Type)
        && (((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX
            || ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT);
    if (ok) *out = ((PyMemberDescrObject *)d)->d_member->offset;
    Py_DECREF(d);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", tp->tp_name, name);
        return -1;
    }
    return 0;
}

static int need_offsets(PyTypeObject *tp, const char **names, int n, Py_ssize_t *out)
{
    for (int i = 0; i < n; i++) {
        if (member_offset(tp, names[i], &out[i]) < 0) return -1;
        if (out[i] < 0) {
            PyErr_Format(PyExc_TypeError, "%s has no slot %s", tp->tp_name, names[i]);
            return -1;
        }
    }
    return 0;
}

static long cfg_long(PyObject *cfg, const char *name, int *err)
{
    PyObject *v = PyDict_GetItemString(cfg, name);
    if (v == NULL) {
        PyErr_Format(PyExc_KeyError, "setup needs %s", name);
        *err = 1;
        return 0;
    }
    long r = PyLong_AsLong(v);
    if (r == -1 && PyErr_Occurred()) *err = 1;
    return r;
}

static PyObject *cfg_obj(PyObject *cfg, const char *name, int *err)
{
    PyObject *v = PyDict_GetItemString(cfg, name);
    if (v == NULL) {
        PyErr_Format(PyExc_KeyError, "setup needs %s", name);
        *err = 1;
        return NULL;
    }
    Py_INCREF(v);
    return v;
}

static PyObject *lane_setup(PyObject *self, PyObject *cfg)
{
    int err = 0;
    if (!PyDict_Check(cfg)) { PyErr_SetString(PyExc_TypeError, "setup(dict)"); return NULL; }
    PyObject *evs = cfg_obj(cfg, "events", &err);          /* tuple of 5 classes, EV_ order */
    PyObject *stages = cfg_obj(cfg, "stages", &err);       /* tuple of 5 callables */
    PyObject *names = cfg_obj(cfg, "types", &err);         /* tuple of 5 type names */
    PyObject *nexts = cfg_obj(cfg, "next", &err);          /* tuple of masks */
    if (err) return NULL;
    if (!PyTuple_Check(evs) || PyTuple_GET_SIZE(evs) != NEV || !PyTuple_Check(stages)
        || PyTuple_GET_SIZE(stages) != NEV || !PyTuple_Check(names)
        || PyTuple_GET_SIZE(names) != NEV || !PyTuple_Check(nexts)) {
        PyErr_SetString(PyExc_TypeError, "setup: events, stages and types are tuples of 5, "
                        "next a tuple");
        return NULL;
    }
    for (int t = 0; t < NEV; t++)
        if (!PyType_Check(PyTuple_GET_ITEM(evs, t))
            || !PyCallable_Check(PyTuple_GET_ITEM(stages, t))
            || !PyUnicode_Check(PyTuple_GET_ITEM(names, t))) {
            PyErr_SetString(PyExc_TypeError, "setup: events are classes, stages callables, "
                            "types strings");
            return NULL;
        }
    for (int t = 0; t < NEV; t++) {
        ev_type[t] = (PyTypeObject *)PyTuple_GetItem(evs, t);
        stage[t] = PyTuple_GetItem(stages, t);
        type_names[t] = PyTuple_GetItem(names, t);
        if (!ev_type[t] || !stage[t] || !type_names[t]) return NULL;
        Py_INCREF(ev_type[t]); Py_INCREF(stage[t]); Py_INCREF(type_names[t]);
        for (int f = 0; f < NF; f++)
            if (member_offset(ev_type[t], FIELD_NAMES[f], &ev_off[t][f]) < 0) return NULL;
        if (ev_off[t][F_WRITER] < 0 || ev_off[t][F_SEQ] < 0) {
            PyErr_SetString(PyExc_TypeError, "an event class without writer or seq");
            return NULL;
        }
    }
    nstates = PyTuple_Size(nexts);
    if (nstates < 1 || nstates > 16) { PyErr_SetString(PyExc_ValueError, "1 to 16 states"); return NULL; }
    for (long s = 0; s < nstates; s++) {
        next_mask[s] = PyLong_AsLong(PyTuple_GetItem(nexts, s));
        if (PyErr_Occurred()) return NULL;
    }
    key_type = (PyTypeObject *)cfg_obj(cfg, "Key", &err);
    intent_type = (PyTypeObject *)cfg_obj(cfg, "Intent", &err);
    writer_type = (PyTypeObject *)cfg_obj(cfg, "Writer", &err);
    key_template = cfg_obj(cfg, "key_template", &err);
    intent_template = cfg_obj(cfg, "intent_template", &err);
    code = cfg_obj(cfg, "code", &err);
    note_seq = cfg_obj(cfg, "note_seq", &err);
    py_close = cfg_obj(cfg, "close", &err);
    py_pack = cfg_obj(cfg, "pack", &err);
    sha256 = cfg_obj(cfg, "sha256", &err);
    prefix = cfg_obj(cfg, "prefix", &err);
    terminal_mask = cfg_long(cfg, "terminal", &err);
    S_RECORDED = cfg_long(cfg, "RECORDED", &err);
    S_DISPATCHED = cfg_long(cfg, "DISPATCHED", &err);
    S_CANCELLED = cfg_long(cfg, "CANCELLED", &err);
    S_RECONCILING = cfg_long(cfg, "RECONCILING", &err);
    S_DEAD_LETTER = cfg_long(cfg, "DEAD_LETTER", &err);
    FL_RECORD = cfg_long(cfg, "F_RECORD", &err);
    FL_CANCELLED = cfg_long(cfg, "F_CANCELLED", &err);
    FL_SEALED = cfg_long(cfg, "F_SEALED", &err);
    FL_TRANSITIONS = cfg_long(cfg, "F_TRANSITIONS", &err);
    FL_CLOSED = cfg_long(cfg, "F_CLOSED", &err);
    FL_JUDGE = cfg_long(cfg, "F_JUDGE", &err);
    FL_PROPOSED = cfg_long(cfg, "F_PROPOSED", &err);
    PACKABLE = cfg_long(cfg, "PACKABLE", &err);
    MAX_CHAIN = cfg_long(cfg, "MAX_CHAIN", &err);
    MAX_PACKED_CHAIN = cfg_long(cfg, "MAX_PACKED_CHAIN", &err);
    MEMO_MAX = cfg_long(cfg, "MEMO_MAX", &err);
    LINE_BITS = cfg_long(cfg, "LINE_BITS", &err);
    PyObject *pack_format = cfg_obj(cfg, "pack_format", &err),
        *edge_format = cfg_obj(cfg, "edge_format", &err);
    if (err) return NULL;
    /* used as types (tp_alloc) and as a dict (PyDict_GetItemWithError) without checks */
    if (!PyType_Check(key_type) || !PyType_Check(intent_type) || !PyType_Check(writer_type)
        || !PyDict_CheckExact(code) || Py_TYPE(key_template) != key_type
        || Py_TYPE(intent_template) != intent_type) {
        PyErr_SetString(PyExc_TypeError, "setup: Key, Intent and Writer are classes, the "
                        "templates their instances, code a dict");
        return NULL;
    }
    /* pack() writes Store.pack's record field by field into a buffer sized for this layout */
    int same_layout = PyUnicode_Check(pack_format) && PyUnicode_Check(edge_format)
        && PyUnicode_CompareWithASCIIString(pack_format, "<BBBIIII4Q3qq16s") == 0
        && PyUnicode_CompareWithASCIIString(edge_format, "<IBIQ") == 0 && MAX_PACKED_CHAIN <= 8;
    Py_DECREF(pack_format);
    Py_DECREF(edge_format);
    if (!same_layout) {
        PyErr_SetString(PyExc_ValueError, "Store.pack's record layout is not the one lane.c writes");
        return NULL;
    }
    if (need_offsets(key_type, KEY_NAMES, NK, k_off) < 0
        || need_offsets(intent_type, INTENT_NAMES, NI, i_off) < 0
        || need_offsets(writer_type, WRITER_NAMES, NW, w_off) < 0) return NULL;
    PyObject *evp = PyDict_GetItemString(cfg, "evp");  /* optional: 5 addresses */
    evp_ctx = NULL;
    if (evp != NULL && PyTuple_Check(evp) && PyTuple_GET_SIZE(evp) == 5) {
        ctx_new_fn ctx_new = (ctx_new_fn)PyLong_AsVoidPtr(PyTuple_GET_ITEM(evp, 0));
        evp_init = (init_fn)PyLong_AsVoidPtr(PyTuple_GET_ITEM(evp, 1));
        evp_update = (update_fn)PyLong_AsVoidPtr(PyTuple_GET_ITEM(evp, 2));
        evp_final = (final_fn)PyLong_AsVoidPtr(PyTuple_GET_ITEM(evp, 3));
        evp_md = PyLong_AsVoidPtr(PyTuple_GET_ITEM(evp, 4));
        if (PyErr_Occurred()) return NULL;
        if (ctx_new && evp_init && evp_update && evp_final && evp_md) evp_ctx = ctx_new();
    }
    s_accepted = PyUnicode_InternFromString("accepted");
    s_apply = PyUnicode_InternFromString("apply");
    configured = 1;
    Py_RETURN_NONE;
}

/* A fresh object of `tp` whose slots are the template's (the Python side checks that the
 * template's values are immutable, except list slots, which get a new empty list). */
static PyObject *clone_slots(PyTypeObject *tp, PyObject *tmpl, const Py_ssize_t *offs, int n)
{
    PyObject *o = tp->tp_alloc(tp, 0);
    if (o == NULL) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *v = SLOT(tmpl, offs[i]);
        if (v != NULL && PyList_CheckExact(v)) {
            PyObject *l = PyList_New(0);
            if (l == NULL) { Py_DECREF(o); return NULL; }
            SLOT(o, offs[i]) = l;
        } else {
            Py_XINCREF(v);
            SLOT(o, offs[i]) = v;
        }
    }
    return o;
}

/* ----- the digest of a flat call (canon.flat_digest_v1 behind intents.digest's memo) ---- */
typedef struct { char *p; size_t n, cap; } Buf;

static int grow(Buf *b, size_t more)
{
    if (b->n + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more) cap *= 2;
    char *p = PyMem_Realloc(b->p, cap);
    if (p == NULL) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* bytes orjson writes verbatim and canonicalizer v1 keeps: printable ASCII but space,
 * quote, backslash and '!' */
static unsigned char verbatim[256];

static void verbatim_init(void)
{
    for (int c = 0x21; c < 0x7f; c++) verbatim[c] = c != '"' && c != '\\' && c != '!';
}

/* a string of verbatim bytes only */
static int plain_str(PyObject *s, const char **p, Py_ssize_t *n)
{
    if (!PyUnicode_CheckExact(s) || !PyUnicode_IS_COMPACT_ASCII(s)) return 0;
    const unsigned char *c = (const unsigned char *)PyUnicode_DATA(s);
    Py_ssize_t len = PyUnicode_GET_LENGTH(s);
    unsigned char all = 1;
    for (Py_ssize_t i = 0; i < len; i++) all &= verbatim[c[i]];
    if (!all) return 0;
    *p = (const char *)c;
    *n = len;
    return 1;
}

static int put_str(Buf *b, PyObject *s)
{
    const char *p;
    Py_ssize_t n;
    if (!plain_str(s, &p, &n)) return 0;
    if (grow(b, (size_t)n + 2) < 0) return -1;
    b->p[b->n++] = '"';
    memcpy(b->p + b->n, p, (size_t)n);
    b->n += (size_t)n;
    b->p[b->n++] = '"';
    return 1;
}

typedef struct { const char *p; Py_ssize_t n; PyObject *v; } Item;

static int by_name(const void *a, const void *b)
{
    const Item *x = a, *y = b;
    Py_ssize_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, (size_t)n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* orjson's sorted dump of [tool, scope, args] when flat_digest_v1 takes the call, appended
 * to b: 1, done; 0, not a flat call (the Python path decides); -1, an error */
static int flat_dump(Buf *b, PyObject *tool, PyObject *scope, PyObject *args)
{
    Item stack[32], *items = stack;
    int r;
    if (!PyDict_CheckExact(args)) return 0;
    Py_ssize_t n = PyDict_GET_SIZE(args);
    if (n > 32) return 0;
    if (grow(b, 1) < 0) return -1;
    b->p[b->n++] = '[';
    if ((r = put_str(b, tool)) <= 0) return r;
    if (grow(b, 1) < 0) return -1;
    b->p[b->n++] = ',';
    if ((r = put_str(b, scope)) <= 0) return r;
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *v;
    while (PyDict_Next(args, &pos, &k, &v)) {
        if (!plain_str(k, &items[i].p, &items[i].n)) return 0;
        items[i++].v = v;
    }
    for (Py_ssize_t j = 1; j < n; j++) {       /* insertion sort: a call has few names */
        Item x = items[j];
        Py_ssize_t h = j;
        while (h > 0 && by_name(&items[h - 1], &x) > 0) { items[h] = items[h - 1]; h--; }
        items[h] = x;
    }
    if (grow(b, 2) < 0) return -1;
    b->p[b->n++] = ',';
    b->p[b->n++] = '{';
    for (i = 0; i < n; i++) {
        if (grow(b, (size_t)items[i].n + 4 + 24) < 0) return -1;
        if (i) b->p[b->n++] = ',';
        b->p[b->n++] = '"';
        memcpy(b->p + b->n, items[i].p, (size_t)items[i].n);
        b->n += (size_t)items[i].n;
        b->p[b->n++] = '"';
        b->p[b->n++] = ':';
        v = items[i].v;
        if (v == Py_None) { memcpy(b->p + b->n, "null", 4); b->n += 4; }
        else if (v == Py_True) { memcpy(b->p + b->n, "true", 4); b->n += 4; }
        else if (v == Py_False) { memcpy(b->p + b->n, "false", 5); b->n += 5; }
        else if (PyLong_CheckExact(v)) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow || x > (1LL << 53) || x < -(1LL << 53)) return 0;
            char digits[24];
            int nd = 0;
            unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
            do { digits[nd++] = (char)('0' + u % 10); u /= 10; } while (u);
            if (x < 0) b->p[b->n++] = '-';
            while (nd) b->p[b->n++] = digits[--nd];
        } else if (PyUnicode_CheckExact(v)) {
            if ((r = put_str(b, v)) <= 0) return r;
        } else return 0;
    }
    if (grow(b, 2) < 0) return -1;
    b->p[b->n++] = '}';
    b->p[b->n++] = ']';
    return 1;
}

static Buf dump_buf;     /* the digest's prefix, then the dump */


/* intents.digest for a flat call: a new reference to the 16-byte digest; NULL with no
 * error set when the call is not flat (the Python stage then computes it) */
static PyObject *flat_digest(PyObject *memo, PyObject *ev, int t)
{
    PyObject *tool = SLOT(ev, ev_off[t][F_TOOL]), *scope = SLOT(ev, ev_off[t][F_SCOPE]),
        *args = SLOT(ev, ev_off[t][F_ARGS]);
    if (tool == NULL || scope == NULL || args == NULL) return NULL;
    size_t np = (size_t)PyBytes_GET_SIZE(prefix);
    dump_buf.n = 0;
    if (grow(&dump_buf, np) < 0) return PyErr_NoMemory();
    memcpy(dump_buf.p, PyBytes_AS_STRING(prefix), np);
    dump_buf.n = np;
    int r = flat_dump(&dump_buf, tool, scope, args);
    if (r <= 0) return r < 0 ? PyErr_NoMemory() : NULL;
    unsigned char md[32];
    if (native_sha256(dump_buf.p, dump_buf.n, md))   /* cheaper than the memo */
        return PyBytes_FromStringAndSize((const char *)md, 16);
    PyObject *dump = PyBytes_FromStringAndSize(dump_buf.p + np, (Py_ssize_t)(dump_buf.n - np));
    if (dump == NULL) return NULL;
    PyObject *d = PyDict_GetItemWithError(memo, dump);
    if (d != NULL) { Py_INCREF(d); Py_DECREF(dump); return d; }
    if (PyErr_Occurred()) { Py_DECREF(dump); return NULL; }
    PyObject *data = PyBytes_FromStringAndSize(dump_buf.p, (Py_ssize_t)dump_buf.n);
    PyObject *h = data ? PyObject_CallOneArg(sha256, data) : NULL;
    Py_XDECREF(data);
    PyObject *full = h ? PyObject_CallMethod(h, "digest", NULL) : NULL;
    Py_XDECREF(h);
    if (full == NULL || !PyBytes_Check(full) || PyBytes_GET_SIZE(full) < 16) {
        Py_XDECREF(full);
        Py_DECREF(dump);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "sha256 gave no digest");
        return NULL;
    }
    d = PyBytes_FromStringAndSize(PyBytes_AS_STRING(full), 16);
    Py_DECREF(full);
    if (d == NULL) { Py_DECREF(dump); return NULL; }
    if (PyDict_GET_SIZE(memo) >= MEMO_MAX) PyDict_Clear(memo);
    if (PyDict_SetItem(memo, dump, d) < 0) { Py_DECREF(dump); Py_DECREF(d); return NULL; }
    Py_DECREF(dump);
    return d;
}

/* ----- the checker's state, per call ---------------------------------------------------- */
typedef struct {
    PyObject *st, *writers, *keys, *intents, *memo, *seq_found;
    int packing;
} Store;

static PyObject *call4(PyObject *f, PyObject *a, PyObject *b, PyObject *c, PyObject *d)
{
    PyObject *args[4] = {a, b, c, d};
    return PyObject_Vectorcall(f, args, 4, NULL);
}

static PyObject *call3(PyObject *f, PyObject *a, PyObject *b, PyObject *c)
{
    PyObject *args[3] = {a, b, c};
    return PyObject_Vectorcall(f, args, 3, NULL);
}

/* ----- Store.pack, its common case ------------------------------------------------------ */
static inline void w8(unsigned char **p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) (*p)[i] = (unsigned char)(v >> (8 * i));
    *p += n;
}

/* an exact int in [lo, hi] (as int64 or uint64 bounds by `unsigned_`), else 0 */
static int fits(PyObject *v, int unsigned_, long long lo, unsigned long long hi, uint64_t *out)
{
    if (!PyLong_CheckExact(v)) return 0;
    if (unsigned_) {
        if (_PyLong_Sign(v) < 0) return 0;
        unsigned long long x = PyLong_AsUnsignedLongLong(v);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        if (x > hi) return 0;
        *out = x;
        return 1;
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || x < lo || (x > 0 && (unsigned long long)x > hi)) return 0;
    *out = (uint64_t)x;
    return 1;
}

#define U8 1, 0, 0xFFULL
#define U32 1, 0, 0xFFFFFFFFULL
#define U64 1, 0, 0xFFFFFFFFFFFFFFFFULL
#define I64 0, INT64_MIN, 0x7FFFFFFFFFFFFFFFULL

/* Store.pack(name, k): 1 packed, 0 nothing to pack (Store.pack would return), 2 not sure
 * (call Store.pack), -1 error */
static int pack(Store *s, PyObject *name, PyObject *k)
{
    PyObject *digest = SLOT(k, k_off[K_DIGEST]), *chain = SLOT(k, k_off[K_CHAIN]);
    PyObject *pending = SLOT(k, k_off[K_PENDING]);
    int ok = 1;
    long flags = small(SLOT(k, k_off[K_FLAGS]), &ok);
    if (digest == Py_None) return 0;
    if (!ok || !PyList_CheckExact(chain) || !PyBytes_CheckExact(digest)
        || PyBytes_GET_SIZE(digest) != 16 || !(PyTuple_CheckExact(pending) || PyList_CheckExact(pending)))
        return 2;
    Py_ssize_t n = PyList_GET_SIZE(chain);
    if (SLOT(k, k_off[K_FORKS]) != Py_None || SLOT(k, k_off[K_REACC]) != Py_None
        || Py_SIZE(pending) || (flags & ~PACKABLE) || !(flags & FL_CLOSED) || n == 0
        || n >= MAX_PACKED_CHAIN)
        return 0;
    PyObject *e = PyDict_GetItemWithError(s->intents, digest);
    if (e == NULL) return PyErr_Occurred() ? -1 : 0;
    if (Py_TYPE(e) != intent_type || SLOT(e, i_off[I_MORE]) != Py_None
        || SLOT(e, i_off[I_EKEYS]) != Py_None || SLOT(e, i_off[I_RECORDED]) == Py_False)
        return 0;
    if (SLOT(e, i_off[I_RECORDED]) != Py_True) return 2;
    int eq = PyObject_RichCompareBool(SLOT(e, i_off[I_KEY]), name, Py_EQ);
    if (eq < 0) return -1;
    if (!eq) return 0;
    uint64_t disp, app, comp, acc, aloc, accloc, minloc, accseq, maxf = 0, minf = 0, aid = 0,
        epoch = 0, ea, ec, eloc, eseq;
    PyObject *maxf_o = SLOT(k, k_off[K_MAXF]), *minf_o = SLOT(k, k_off[K_MINF]),
        *aid_o = SLOT(k, k_off[K_APPLY_ID]), *ep_o = SLOT(e, i_off[I_EPOCH]),
        *alocs = SLOT(e, i_off[I_APPLY_LOCS]);
    if (!fits(SLOT(k, k_off[K_DISP]), U32, &disp) || !fits(SLOT(k, k_off[K_APPLIES]), U32, &app)
        || !fits(SLOT(k, k_off[K_COMP]), U32, &comp) || !fits(SLOT(k, k_off[K_ACCEPTED]), U32, &acc)
        || !fits(SLOT(k, k_off[K_APPLY_LOC]), U64, &aloc) || !fits(SLOT(k, k_off[K_ACC_LOC]), U64, &accloc)
        || !fits(SLOT(k, k_off[K_MINF_LOC]), U64, &minloc) || !fits(SLOT(k, k_off[K_ACC_SEQ]), U64, &accseq)
        || !fits(SLOT(e, i_off[I_APPLIES]), U32, &ea) || !fits(SLOT(e, i_off[I_COMP]), U32, &ec)
        || !fits(SLOT(e, i_off[I_LOC]), U64, &eloc) || !fits(SLOT(e, i_off[I_SEQ]), U64, &eseq)
        || (maxf_o != Py_None && !fits(maxf_o, I64, &maxf))
        || (minf_o != Py_None && !fits(minf_o, I64, &minf))
        || (aid_o != Py_None && !fits(aid_o, I64, &aid))
        || (ep_o != Py_None && !fits(ep_o, I64, &epoch)))
        return 2;
    if (ea != app || ec != comp || eloc != accloc || eseq != accseq || app > 1
        || (disp >= 2 && !app && !comp))
        return 0;
    if (app) {
        uint64_t only;
        if (!PyList_CheckExact(alocs)) return alocs == Py_None ? 0 : 2;
        if (PyList_GET_SIZE(alocs) != 1) return 0;
        if (!fits(PyList_GET_ITEM(alocs, 0), U64, &only)) return 2;
        if (only != aloc) return 0;
    } else if (alocs != Py_None) return 0;
    if (maxf_o != Py_None && (int64_t)maxf >= 0xFFFFFFFFLL) return 0;
    unsigned nones = (maxf_o == Py_None ? 1 : 0) | (minf_o == Py_None ? 2 : 0)
        | (aid_o == Py_None ? 4 : 0) | (ep_o == Py_None ? 8 : 0);
    unsigned char rec[3 + 16 + 32 + 32 + 16 + 7 * 17];
    unsigned char *p = rec;
    if (flags < 0 || flags > 255) return 2;
    w8(&p, (uint64_t)flags, 1); w8(&p, nones, 1); w8(&p, (uint64_t)n, 1);
    w8(&p, disp, 4); w8(&p, app, 4); w8(&p, comp, 4); w8(&p, acc, 4);
    w8(&p, aloc, 8); w8(&p, accloc, 8); w8(&p, minloc, 8); w8(&p, accseq, 8);
    w8(&p, maxf, 8); w8(&p, minf, 8); w8(&p, aid, 8); w8(&p, epoch, 8);
    memcpy(p, PyBytes_AS_STRING(digest), 16);
    p += 16;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(chain, i);
        uint64_t seq, frm, to, fence = 0xFFFFFFFFULL, loc;
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 6) return 2;
        PyObject *fo = PyTuple_GET_ITEM(t, 4);
        if (!fits(PyTuple_GET_ITEM(t, 1), U32, &seq) || !fits(PyTuple_GET_ITEM(t, 2), U8, &frm)
            || !fits(PyTuple_GET_ITEM(t, 3), U8, &to) || !fits(PyTuple_GET_ITEM(t, 5), U64, &loc)
            || (fo != Py_None && !fits(fo, U32, &fence)) || (frm << 4 | to) > 255)
            return 2;
        w8(&p, seq, 4); w8(&p, frm << 4 | to, 1); w8(&p, fence, 4); w8(&p, loc, 8);
    }
    PyObject *b = PyBytes_FromStringAndSize((const char *)rec, p - rec);
    if (b == NULL) return -1;
    Py_INCREF(k);                  /* the dict's reference to k goes below */
    Py_INCREF(digest);
    int r = PyDict_SetItem(s->keys, name, b);
    if (r == 0) r = PyDict_SetItem(s->intents, digest, SLOT(k, k_off[K_NAME]));
    Py_DECREF(b);
    Py_DECREF(digest);
    Py_DECREF(k);
    return r < 0 ? -1 : 1;
}

/* chains.close(st, name, k) */
static int close_key(Store *s, PyObject *name, PyObject *k, long flags)
{
    if (flags & (FL_JUDGE | FL_CANCELLED | FL_SEALED)) {
        PyObject *r = call3(py_close, s->st, name, k);
        Py_XDECREF(r);
        return r ? 0 : -1;
    }
    put(k, k_off[K_FLAGS], PyLong_FromLong((flags & ~FL_JUDGE) | FL_CLOSED));
    if (!s->packing) return 0;
    int r = pack(s, name, k);
    if (r == 2) {
        PyObject *o = call3(py_pack, s->st, name, k);
        Py_XDECREF(o);
        return o ? 0 : -1;
    }
    return r < 0 ? -1 : 0;
}

/* ----- the stages' common cases: 1 done, 0 hand to Python, -1 error --------------------- */
static int transition(Store *s, PyObject *ev, PyObject *wname, PyObject *seq, PyObject *loc)
{
    const Py_ssize_t *o = ev_off[EV_T];
    PyObject *name = SLOT(ev, o[F_KEY]);
    PyObject *k = PyDict_GetItemWithError(s->keys, name);
    if (k == NULL || Py_TYPE(k) != key_type) return PyErr_Occurred() ? -1 : 0;
    PyObject *fo = PyDict_GetItemWithError(code, SLOT(ev, o[F_FROM]));
    PyObject *to_o = fo ? PyDict_GetItemWithError(code, SLOT(ev, o[F_TO])) : NULL;
    if (to_o == NULL) return PyErr_Occurred() ? -1 : 0;
    int ok = 1;
    long frm = small(fo, &ok), to = small(to_o, &ok), tip = small(SLOT(k, k_off[K_TIP]), &ok);
    PyObject *pending = SLOT(k, k_off[K_PENDING]);
    if (!ok || frm != tip || frm < 0 || frm >= nstates || to < 0 || to >= nstates
        || !((next_mask[frm] >> to) & 1))
        return 0;
    int busy = PyObject_IsTrue(pending);
    if (busy) return busy < 0 ? -1 : 0;
    PyObject *fence = SLOT(ev, o[F_FENCE]), *maxf = SLOT(k, k_off[K_MAXF]);
    if (fence != Py_None && maxf != Py_None) {
        int ge = PyObject_RichCompareBool(fence, maxf, Py_GE);
        if (ge <= 0) return ge;
    }
    long flags = small(SLOT(k, k_off[K_FLAGS]), &ok), visited = small(SLOT(k, k_off[K_VISITED]), &ok);
    long disp = small(SLOT(k, k_off[K_DISP]), &ok);
    PyObject *chain = SLOT(k, k_off[K_CHAIN]);
    if (!ok || !PyList_CheckExact(chain)) return 0;
    if (fence != Py_None) put_new(k, k_off[K_MAXF], fence);
    flags |= FL_RECORD | FL_TRANSITIONS;
    if (PyList_GET_SIZE(chain) < MAX_CHAIN) {
        PyObject *t = PyTuple_New(6);
        if (t == NULL) return -1;
        Py_INCREF(wname); PyTuple_SET_ITEM(t, 0, wname);
        Py_INCREF(seq); PyTuple_SET_ITEM(t, 1, seq);
        Py_INCREF(fo); PyTuple_SET_ITEM(t, 2, fo);
        Py_INCREF(to_o); PyTuple_SET_ITEM(t, 3, to_o);
        Py_INCREF(fence); PyTuple_SET_ITEM(t, 4, fence);
        Py_INCREF(loc); PyTuple_SET_ITEM(t, 5, loc);
        int r = PyList_Append(chain, t);
        Py_DECREF(t);
        if (r < 0) return -1;
    }
    put_new(k, k_off[K_TIP], to_o);
    put(k, k_off[K_VISITED], PyLong_FromLong(visited | (1L << to)));
    put_new(k, k_off[K_LAST_LOC], loc);
    put_new(k, k_off[K_LAST_WRITER], wname);
    if (to == S_DISPATCHED) {
        put(k, k_off[K_DISP], PyLong_FromLong(disp + 1));
        int set = PyObject_IsTrue(SLOT(k, k_off[K_DISP_LOC]));
        if (set < 0) return -1;
        if (!set) put_new(k, k_off[K_DISP_LOC], loc);
    } else if (frm == S_RECORDED && to == S_CANCELLED) {
        flags |= FL_CANCELLED;
    } else if (frm == S_RECONCILING && to == S_DEAD_LETTER) {
        flags |= FL_SEALED;
    }
    put(k, k_off[K_FLAGS], PyLong_FromLong(flags));
    if ((terminal_mask >> to) & 1) return close_key(s, name, k, flags) < 0 ? -1 : 1;
    return 1;
}

static int proposal(Store *s, PyObject *ev, PyObject *seq, PyObject *loc)
{
    const Py_ssize_t *o = ev_off[EV_P];
    PyObject *d = flat_digest(s->memo, ev, EV_P);
    if (d == NULL) return PyErr_Occurred() ? -1 : 0;
    PyObject *decision = SLOT(ev, o[F_DECISION]);
    int acc = decision == s_accepted ? 1 : PyObject_RichCompareBool(decision, s_accepted, Py_EQ);
    if (acc <= 0) { Py_DECREF(d); return acc < 0 ? -1 : 1; }
    PyObject *name = SLOT(ev, o[F_KEY]);
    int has = PyDict_Contains(s->keys, name);
    if (has == 0) has = PyDict_Contains(s->intents, d);
    if (has) { Py_DECREF(d); return has < 0 ? -1 : 0; }
    PyObject *k = clone_slots(key_type, key_template, k_off, NK);
    PyObject *e = k ? clone_slots(intent_type, intent_template, i_off, NI) : NULL;
    if (e == NULL) { Py_XDECREF(k); Py_DECREF(d); return -1; }
    put_new(k, k_off[K_NAME], name);
    put(k, k_off[K_ACCEPTED], PyLong_FromLong(1));
    put(k, k_off[K_FLAGS], PyLong_FromLong(FL_RECORD | FL_PROPOSED));
    put_new(k, k_off[K_ACC_LOC], loc);
    put_new(k, k_off[K_ACC_SEQ], seq);
    put_new(k, k_off[K_DIGEST], d);
    put_new(e, i_off[I_KEY], name);
    put_new(e, i_off[I_EPOCH], SLOT(ev, o[F_EPOCH]));
    put_new(e, i_off[I_LOC], loc);
    put_new(e, i_off[I_SEQ], seq);
    put_new(e, i_off[I_RECORDED], Py_True);
    int r = PyDict_SetItem(s->keys, name, k);
    if (r == 0) r = PyDict_SetItem(s->intents, d, e);
    Py_DECREF(k); Py_DECREF(e); Py_DECREF(d);
    return r < 0 ? -1 : 1;
}

static int effect(Store *s, PyObject *ev, PyObject *loc)
{
    const Py_ssize_t *o = ev_off[EV_E];
    PyObject *d = flat_digest(s->memo, ev, EV_E);
    if (d == NULL) return PyErr_Occurred() ? -1 : 0;
    PyObject *name = SLOT(ev, o[F_KEY]);
    if (name == Py_None) name = SLOT(ev, o[F_IDEM]);
    PyObject *kind = SLOT(ev, o[F_KIND]);
    int apply = kind == s_apply ? 1 : PyObject_RichCompareBool(kind, s_apply, Py_EQ);
    if (apply <= 0) { Py_DECREF(d); return apply; }
    PyObject *k = PyDict_GetItemWithError(s->keys, name);
    PyObject *e = k ? PyDict_GetItemWithError(s->intents, d) : NULL;
    Py_DECREF(d);
    if (e == NULL) return PyErr_Occurred() ? -1 : 0;
    if (Py_TYPE(k) != key_type || Py_TYPE(e) != intent_type) return 0;
    int ok = 1;
    long applies = small(SLOT(k, k_off[K_APPLIES]), &ok), flags = small(SLOT(k, k_off[K_FLAGS]), &ok);
    long eapplies = small(SLOT(e, i_off[I_APPLIES]), &ok);
    if (!ok || applies || (flags & FL_CLOSED) || !(flags & FL_PROPOSED)
        || SLOT(e, i_off[I_RECORDED]) != Py_True || eapplies
        || SLOT(e, i_off[I_APPLY_LOCS]) != Py_None)
        return 0;
    int same = PyObject_RichCompareBool(SLOT(e, i_off[I_KEY]), name, Py_EQ);
    if (same <= 0) return same;
    PyObject *eid = SLOT(ev, o[F_EID]);
    PyObject *aid = Py_None;
    if (eid != Py_None) {
        Py_hash_t h = PyObject_Hash(eid);
        if (h == -1 && PyErr_Occurred()) return -1;
        aid = PyLong_FromSsize_t(h);
        if (aid == NULL) return -1;
    } else Py_INCREF(aid);
    PyObject *locs = PyList_New(1);
    if (locs == NULL) { Py_DECREF(aid); return -1; }
    Py_INCREF(loc);
    PyList_SET_ITEM(locs, 0, loc);
    PyObject *fence = SLOT(ev, o[F_FENCE]), *minf = SLOT(k, k_off[K_MINF]);
    int lower = 0;
    if (fence != Py_None) {
        lower = minf == Py_None ? 1 : PyObject_RichCompareBool(fence, minf, Py_LT);
        if (lower < 0) { Py_DECREF(aid); Py_DECREF(locs); return -1; }
    }
    put(k, k_off[K_APPLIES], PyLong_FromLong(1));
    put_new(k, k_off[K_APPLY_LOC], loc);
    put(k, k_off[K_APPLY_ID], aid);
    if (lower) {
        put_new(k, k_off[K_MINF], fence);
        put_new(k, k_off[K_MINF_LOC], loc);
    }
    put(e, i_off[I_APPLIES], PyLong_FromLong(1));
    put(e, i_off[I_APPLY_LOCS], locs);
    return 1;
}

/* ----- the driver: Conformance.feed over a batch ------------------------------------------ */
static PyObject *get(PyObject *o, const char *name, int *err)
{
    PyObject *v = PyObject_GetAttrString(o, name);
    if (v == NULL) *err = 1;
    return v;
}

/* zlib's CRC-32 (reflected, polynomial 0xEDB88320), for shards.shard_of */
static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc32_of(const unsigned char *p, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFU;
    for (Py_ssize_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFU;
}

/* The writer's next line, feed's and skip's common case: when seq is w.nxt, w.nxt = seq + 1
 * and w.hi_loc = loc. 1 if it was, 0 if not (the caller hands the line to Python), -1 on
 * an error. */
static int next_seq(PyObject *w, PyObject *seq, PyObject *loc)
{
    int same = PyObject_RichCompareBool(seq, SLOT(w, w_off[W_NXT]), Py_EQ);
    if (same <= 0) return same;
    PyObject *nx = PyNumber_Add(seq, one_int);
    if (nx == NULL) return -1;
    put(w, w_off[W_NXT], nx);
    put_new(w, w_off[W_HI_LOC], loc);
    return 1;
}

/* The shard's routing (shards.Shard._route): who checks the line. */
typedef struct {
    long me, shards;
    PyObject *owned, *one, *skip;   /* owned: a set or None; one, skip: (ev, fi, line) */
    int stable, lead;
} Route;

/* 1 mine, 0 another shard's, 2 unusual (Route.one decides), -1 error */
static int owner(Route *r, PyObject *ev, int t)
{
    if (t == EV_C || t == EV_R) return r->lead ? 1 : 0;
    PyObject *name = SLOT(ev, ev_off[t][F_KEY]);
    if (name == Py_None && t == EV_E) name = SLOT(ev, ev_off[t][F_IDEM]);
    if (!PyUnicode_CheckExact(name)) return 2;
    if (r->owned != Py_None) return PySet_Contains(r->owned, name);
    if (!r->stable) {
        Py_hash_t h = PyObject_Hash(name);
        if (h == -1 && PyErr_Occurred()) return -1;
        long m = (long)(h % r->shards);
        return (m < 0 ? m + r->shards : m) == r->me;
    }
    if (!PyUnicode_IS_COMPACT_ASCII(name)) return 2;
    return (long)(crc32_of(PyUnicode_DATA(name), PyUnicode_GET_LENGTH(name)) % (uint32_t)r->shards)
        == r->me;
}

static PyObject *call_line(PyObject *f, PyObject *ev, PyObject *fi, long long line)
{
    PyObject *lo = PyLong_FromLongLong(line);
    PyObject *r = lo ? call3(f, ev, fi, lo) : NULL;
    Py_XDECREF(lo);
    return r;
}

/* a line another shard checks: its writer's next seq, else Route.skip (Conformance.skip) */
static int skip_line(Store *s, Route *r, PyObject *ev, int t, PyObject *fi, long long line,
                     uint64_t fbits, int within)
{
    PyObject *w = PyDict_GetItemWithError(s->writers, SLOT(ev, ev_off[t][F_WRITER]));
    uint64_t base;
    if (w == NULL && PyErr_Occurred()) return -1;
    if (t != EV_C && t != EV_R && w != NULL && Py_TYPE(w) == writer_type && within
        && fits(SLOT(w, w_off[W_BASE]), U64, &base)) {
        PyObject *loc = PyLong_FromUnsignedLongLong(base | fbits | (uint64_t)line);
        int stepped = loc ? next_seq(w, SLOT(ev, ev_off[t][F_SEQ]), loc) : -1;
        Py_XDECREF(loc);
        if (stepped) return stepped < 0 ? -1 : 0;
    }
    PyObject *res = call_line(r->skip, ev, fi, line);
    Py_XDECREF(res);
    return res ? 0 : -1;
}

static PyObject *feed(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (!configured) { PyErr_SetString(PyExc_RuntimeError, "lane not set up"); return NULL; }
    if (nargs != 5 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "feed(st, events, fi, first, fallback[, route])");
        return NULL;
    }
    PyObject *st = args[0], *events = args[1], *fallback = args[4];
    Route route, *rt = NULL;
    if (nargs == 6 && args[5] != Py_None) {     /* (me, shards, owned, stable, lead, one, skip) */
        if (!PyArg_ParseTuple(args[5], "llOppOO", &route.me, &route.shards, &route.owned,
                              &route.stable, &route.lead, &route.one, &route.skip))
            return NULL;
        /* crc32 % (uint32_t)shards and h % shards assume 0 <= me < shards < 2^31 */
        if (route.shards < 1 || route.shards > 0x7fffffffL || route.me < 0
            || route.me >= route.shards
            || (route.owned != Py_None && !PyAnySet_Check(route.owned))) {
            PyErr_SetString(PyExc_ValueError,
                            "route: 0 <= me < shards < 2^31, owned a set or None");
            return NULL;
        }
        rt = &route;
    }
    long long fi = PyLong_AsLongLong(args[2]), first = PyLong_AsLongLong(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (!PyList_CheckExact(events)) { PyErr_SetString(PyExc_TypeError, "events: a list"); return NULL; }
    int err = 0;
    Store s = {st, get(st, "writers", &err), get(st, "keys", &err), get(st, "intents", &err),
               get(st, "memo", &err), get(st, "seq_found", &err), 0};
    PyObject *packing = get(st, "packing", &err), *counts = get(st, "counts", &err);
    long long n_of[NEV] = {0};
    PyObject *result = NULL;
    if (err) goto done;
    /* the PyDict_* calls below (no type checks of their own) assume the core's tables */
    if (!PyDict_CheckExact(s.writers) || !PyDict_CheckExact(s.keys)
        || !PyDict_CheckExact(s.intents) || !PyDict_CheckExact(s.memo)) {
        PyErr_SetString(PyExc_TypeError, "feed: writers, keys, intents and memo must be dicts");
        goto done;
    }
    s.packing = PyObject_IsTrue(packing);
    int within = fi >= 0 && fi < (1LL << 23) && first >= 0
        && first + PyList_GET_SIZE(events) < (1LL << LINE_BITS);
    uint64_t fbits = (uint64_t)fi << LINE_BITS;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *ev = PyList_GET_ITEM(events, i);
        long long line = first + i;
        failed = line;
        int t;
        for (t = 0; t < NEV && Py_TYPE(ev) != ev_type[t]; t++) ;
        if (rt != NULL) {
            int mine = t < NEV ? owner(rt, ev, t) : 2;
            if (mine < 0) goto done;
            if (mine == 2) {
                PyObject *r = call_line(rt->one, ev, args[2], line);
                if (r == NULL) goto done;
                Py_DECREF(r);
                continue;
            }
            if (mine == 0) {
                if (skip_line(&s, rt, ev, t, args[2], line, fbits, within) < 0) goto done;
                continue;
            }
        }
        PyObject *wname = t < NEV ? SLOT(ev, ev_off[t][F_WRITER]) : NULL;
        PyObject *w = wname ? PyDict_GetItemWithError(s.writers, wname) : NULL;
        if (w == NULL && PyErr_Occurred()) goto done;
        uint64_t base = 0;
        /* loc = base | fi << LINE_BITS | line, as feed computes it, when it fits 64 bits */
        if (w == NULL || Py_TYPE(w) != writer_type || !within
            || !fits(SLOT(w, w_off[W_BASE]), U64, &base)) {
            PyObject *r = call_line(fallback, ev, args[2], line);
            if (r == NULL) goto done;
            Py_DECREF(r);
            continue;
        }
        PyObject *seq = SLOT(ev, ev_off[t][F_SEQ]);
        PyObject *loc = PyLong_FromUnsignedLongLong(base | fbits | (uint64_t)line);
        int stepped = loc ? next_seq(w, seq, loc) : -1;
        if (stepped < 0) { Py_XDECREF(loc); goto done; }
        if (!stepped) {
            PyObject *r = call4(note_seq, w, seq, s.seq_found, loc);
            int keep = r ? PyObject_IsTrue(r) : -1;
            Py_XDECREF(r);
            if (keep <= 0) {
                Py_DECREF(loc);
                if (keep < 0) goto done;
                continue;
            }
        }
        n_of[t]++;
        int done_ = 0;
        if (t == EV_T) done_ = transition(&s, ev, wname, seq, loc);
        else if (t == EV_P) done_ = proposal(&s, ev, seq, loc);
        else if (t == EV_E) done_ = effect(&s, ev, loc);
        else if (t == EV_R) done_ = 1;
        if (done_ == 0) {
            PyObject *r = call4(stage[t], st, ev, w, loc);
            if (r == NULL) done_ = -1;
            Py_XDECREF(r);
        }
        Py_DECREF(loc);
        if (done_ < 0) goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    if (counts != NULL && PyDict_Check(counts)) {
        PyObject *exc_t, *exc_v, *exc_tb;
        PyErr_Fetch(&exc_t, &exc_v, &exc_tb);
        for (int t = 0; t < NEV; t++) {
            if (!n_of[t]) continue;
            PyObject *was = PyDict_GetItem(counts, type_names[t]);
            PyObject *add = PyLong_FromLongLong(n_of[t]);
            PyObject *now = add && was ? PyNumber_Add(was, add) : add;
            if (now != add) Py_XDECREF(add);
            if (now) { PyDict_SetItem(counts, type_names[t], now); Py_DECREF(now); }
            else PyErr_Clear();
        }
        PyErr_Restore(exc_t, exc_v, exc_tb);
    }
    Py_XDECREF(s.writers); Py_XDECREF(s.keys); Py_XDECREF(s.intents); Py_XDECREF(s.memo);
    Py_XDECREF(s.seq_found); Py_XDECREF(packing); Py_XDECREF(counts);
    return result;
}

/* iter_objects(d, t): the items of d whose value is not of type t, as
 * ((k, v) for k, v in d.items() if type(v) is not t) yields them: lazily, in order, each
 * value's type looked at when the iteration reaches it, and an error if d changes size */
typedef struct {
    PyObject_HEAD
    PyObject *d, *skip;
    Py_ssize_t pos, size;
} ObjectsIter;

static void oi_dealloc(ObjectsIter *it)
{
    Py_XDECREF(it->d);
    Py_XDECREF(it->skip);
    PyObject_Free(it);
}

static PyObject *oi_next(ObjectsIter *it)
{
    PyObject *k, *v;
    if (PyDict_GET_SIZE(it->d) != it->size) {
        PyErr_SetString(PyExc_RuntimeError, "dictionary changed size during iteration");
        return NULL;
    }
    while (PyDict_Next(it->d, &it->pos, &k, &v))
        if ((PyObject *)Py_TYPE(v) != it->skip) return PyTuple_Pack(2, k, v);
    return NULL;
}

static PyTypeObject ObjectsIterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tc_lane.ObjectsIter",
    .tp_basicsize = sizeof(ObjectsIter),
    .tp_dealloc = (destructor)oi_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)oi_next,
};

static PyObject *objects(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_CheckExact(args[0]) || !PyType_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "iter_objects(dict, type)");
        return NULL;
    }
    ObjectsIter *it = PyObject_New(ObjectsIter, &ObjectsIterType);
    if (it == NULL) return NULL;
    Py_INCREF(args[0]);
    Py_INCREF(args[1]);
    it->d = args[0];
    it->skip = args[1];
    it->pos = 0;
    it->size = PyDict_GET_SIZE(args[0]);
    return (PyObject *)it;
}

/* the native digest of a flat call, for tests: 16 bytes, or None */
static PyObject *py_flat_digest(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) { PyErr_SetString(PyExc_TypeError, "flat_digest(event)"); return NULL; }
    int t;
    for (t = 0; t < NEV && Py_TYPE(args[0]) != ev_type[t]; t++) ;
    if (!configured || (t != EV_P && t != EV_E)) {
        PyErr_SetString(PyExc_TypeError, "a proposal or an effect, after setup");
        return NULL;
    }
    PyObject *memo = PyDict_New();
    PyObject *d = memo ? flat_digest(memo, args[0], t) : NULL;
    Py_XDECREF(memo);
    if (d == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return d;
}

/* SHA-256 of bytes by OpenSSL (for the known-answer check), or None */
static PyObject *sha_check(PyObject *self, PyObject *data)
{
    unsigned char md[32];
    if (!PyBytes_Check(data)) { PyErr_SetString(PyExc_TypeError, "bytes"); return NULL; }
    if (!native_sha256(PyBytes_AS_STRING(data), (size_t)PyBytes_GET_SIZE(data), md)) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)md, 32);
}

static PyObject *sha_off(PyObject *self, PyObject *unused)
{
    evp_ctx = NULL;
    Py_RETURN_NONE;
}

static PyObject *py_crc32(PyObject *self, PyObject *data)
{
    if (!PyBytes_Check(data)) { PyErr_SetString(PyExc_TypeError, "bytes"); return NULL; }
    return PyLong_FromUnsignedLong(crc32_of((const unsigned char *)PyBytes_AS_STRING(data),
                                            PyBytes_GET_SIZE(data)));
}

static PyObject *failed_line(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong(failed);
}

static PyObject *py_flat_dump(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "flat_dump(tool, scope, args)"); return NULL; }
    dump_buf.n = 0;
    int r = flat_dump(&dump_buf, args[0], args[1], args[2]);
    if (r < 0) return PyErr_NoMemory();
    if (r == 0) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(dump_buf.p, (Py_ssize_t)dump_buf.n);
}

static PyMethodDef methods[] = {
    {"setup", lane_setup, METH_O, "setup(config): the classes, slots and constants of the core"},
    {"feed", (PyCFunction)(void (*)(void))feed, METH_FASTCALL,
     "feed(checker, events, file_index, first_line, fallback[, route])"},
    {"failed_line", failed_line, METH_NOARGS, "the line of the last feed's exception"},
    {"sha_check", sha_check, METH_O, "sha_check(data): OpenSSL's SHA-256 of data, or None"},
    {"sha_off", sha_off, METH_NOARGS, "use hashlib from now on"},
    {"crc32", py_crc32, METH_O, "crc32(data): zlib's CRC-32, as the router computes it"},
    {"iter_objects", (PyCFunction)(void (*)(void))objects, METH_FASTCALL,
     "iter_objects(d, t): the items of d whose value is not of type t, lazily"},
    {"flat_digest", (PyCFunction)(void (*)(void))py_flat_digest, METH_FASTCALL,
     "flat_digest(event): the lane's digest of its call, or None"},
    {"flat_dump", (PyCFunction)(void (*)(void))py_flat_dump, METH_FASTCALL,
     "flat_dump(tool, scope, args): the sorted dump of a flat call, or None"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tc_lane", NULL, -1, methods};

PyMODINIT_FUNC PyInit_tc_lane(void)
{
    if (PyType_Ready(&ObjectsIterType) < 0) return NULL;
    crc_init();
    verbatim_init();
    one_int = PyLong_FromLong(1);
    return PyModule_Create(&module);
}
