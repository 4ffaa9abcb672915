/* The log checker's native lane: `Conformance.feed`'s common cases, compiled.
 *
 * A CPython extension built on first use (checker/logs/lane.py). It works on the very
 * objects the Python core uses (the checker's dicts, its Writer, Key and Intent objects,
 * read and written by slot offset) and mirrors, statement for statement, the fast paths of
 * `Conformance.feed`, `chains.transition`, `intents.proposal`, `intents.effect`,
 * `chains.close`, `Store.pack` and `intents.digest` (for the flat calls
 * `canon.flat_digest_v1` serves). Anything else -- a new writer, a seq out of order, an
 * unusual key, intent or value -- is handed to the Python function that would have run, at
 * the point it would have run, so the two paths leave the same state behind (tests compare
 * them on every fixture). Its tables (state codes, legal successors, flags, limits, the
 * slots' offsets) are the Python's, given to setup() by lane.py's config(). A change to one of
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
enum { W_BASE, W_NXT, W_HI_LOC, W_IDX, NW };
static const char *WRITER_NAMES[NW] = {"base", "nxt", "hi_loc", "idx"};

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

static PyObject *lane_setup(PyObject *Py_UNUSED(self), PyObject *cfg)
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
/* chains.transition's common case (its first branch) */
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

/* zlib's CRC-32 (reflected, polynomial 0xEDB88320), for shards.shard_of: eight bytes a
 * step by eight tables ("slicing by 8"; table k maps a byte to its CRC k bytes further on),
 * the rest a byte a step */
static uint32_t crc_table[8][256];

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            crc_table[k][n] = crc_table[0][crc_table[k - 1][n] & 0xFF] ^ (crc_table[k - 1][n] >> 8);
}

static inline uint64_t load8(const unsigned char *p)      /* little-endian, any alignment */
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static uint32_t crc32_of(const unsigned char *p, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFU;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t v = load8(p) ^ c;
        c = crc_table[7][v & 0xFF] ^ crc_table[6][(v >> 8) & 0xFF]
            ^ crc_table[5][(v >> 16) & 0xFF] ^ crc_table[4][(v >> 24) & 0xFF]
            ^ crc_table[3][(v >> 32) & 0xFF] ^ crc_table[2][(v >> 40) & 0xFF]
            ^ crc_table[1][(v >> 48) & 0xFF] ^ crc_table[0][v >> 56];
    }
    for (; n > 0; p++, n--) c = crc_table[0][(c ^ *p) & 0xFF] ^ (c >> 8);
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

/* Add the lines of each type seen (`n_of`) to the dict `counts`, whatever error is pending
   (kept as it was: the counts are the caller's even when the batch stopped). */
static void add_counts(PyObject *counts, const long long *n_of) {
    if (counts == NULL || !PyDict_Check(counts)) return;
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

static PyObject *feed(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
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
    add_counts(counts, n_of);
    Py_XDECREF(s.writers); Py_XDECREF(s.keys); Py_XDECREF(s.intents); Py_XDECREF(s.memo);
    Py_XDECREF(s.seq_found); Py_XDECREF(packing); Py_XDECREF(counts);
    return result;
}

/* ----- the line index: validate's pre-pass, and the shards' pick and feed (logs/index.py) ---
 * scan_line finds, without decoding, a line's type, writer, seq and the name it is routed
 * by (key, else an effect's idempotency_key), when they are plain: the line one JSON object,
 * those fields once each, their strings without escapes (so their bytes are the decoded
 * str's UTF-8), seq a plain integer. Anything else is not taken here: the Python side
 * decodes that line (it may still be a fine line). Other fields are only skipped: the
 * shard that owns the line decodes it in full, so a line this scan misreads is still
 * refused, and that error, the log's first, is the report. */
enum { SC_TYPE, SC_WRITER, SC_SEQ, SC_KEY, SC_IDEM };
typedef struct {
    const char *writer, *name;
    Py_ssize_t wlen, nlen;
    long long seq;
    int type;
} Scan;

static inline const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

/* Eight bytes at a time (SWAR): the high bit of each byte of x that is a quote, a
 * backslash or (with `control`) below 0x20. Only the lowest set bit is sure (a borrow can
 * mark bytes above a true one), which is the one the scans below use. */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
static inline uint64_t special8(uint64_t x, int control)
{
    uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
    uint64_t m = ((q - ONES) & ~q) | ((b - ONES) & ~b);
    if (control) m |= (x - ONES * 0x20) & ~x;
    return m & HIGHS;
}

/* the first byte from q before e that is a quote, a backslash or (with `control`) below
 * 0x20; e if none */
static inline const char *next_special(const char *q, const char *e, int control)
{
    for (; e - q >= 8; q += 8) {
        uint64_t m = special8(load8((const unsigned char *)q), control);
        if (m) return q + (__builtin_ctzll(m) >> 3);
    }
    for (; q < e; q++)
        if (*q == '"' || *q == '\\' || (control && (unsigned char)*q < 0x20)) return q;
    return e;
}

/* the string at p (p[0] == '"') if plain: its content, and the position after it */
static const char *plain_string(const char *p, const char *e, const char **s, Py_ssize_t *n)
{
    const char *q = next_special(++p, e, 1);
    if (q >= e || *q != '"') return NULL;       /* an escape, a control byte, or no end */
    *s = p;
    *n = q - p;
    return q + 1;
}

static const char *skip_string(const char *p, const char *e)
{
    for (p++; (p = next_special(p, e, 0)) < e; p++) {
        if (*p == '"') return p + 1;
        p++;                                    /* a backslash: past what it escapes */
    }
    return NULL;
}

/* past the JSON value at p (a string, number, literal, or a nested object or array) */
static const char *skip_value(const char *p, const char *e)
{
    if (p >= e) return NULL;
    if (*p == '"') return skip_string(p, e);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < e) {
            char c = *p;
            if (c == '"') {
                p = skip_string(p, e);
                if (p == NULL) return NULL;
                continue;
            }
            if (c == '{' || c == '[') depth++;
            else if ((c == '}' || c == ']') && --depth == 0) return p + 1;
            p++;
        }
        return NULL;
    }
    const char *q = p;
    while (q < e && *q != ',' && *q != '}' && *q != ' ' && *q != '\t' && *q != '\r') q++;
    return q > p ? q : NULL;
}

static int field_of(const char *s, Py_ssize_t n)
{
    if (n == 4 && !memcmp(s, "type", 4)) return SC_TYPE;
    if (n == 6 && !memcmp(s, "writer", 6)) return SC_WRITER;
    if (n == 3 && !memcmp(s, "seq", 3)) return SC_SEQ;
    if (n == 3 && !memcmp(s, "key", 3)) return SC_KEY;
    if (n == 15 && !memcmp(s, "idempotency_key", 15)) return SC_IDEM;
    return -1;
}

static int type_of(const char *s, Py_ssize_t n)
{
    static const char *names[NEV] = {"proposal", "transition", "effect", "crash", "restart"};
    for (int t = 0; t < NEV; t++)
        if ((Py_ssize_t)strlen(names[t]) == n && !memcmp(s, names[t], (size_t)n)) return t;
    return -1;
}

/* 1 and *o filled when the line is plain (see above), else 0 */
static int scan_line(const char *p, Py_ssize_t len, Scan *o)
{
    const char *e = p + len, *s, *key = NULL, *idem = NULL;
    Py_ssize_t n, klen = 0, ilen = 0;
    int have = 0;
    o->type = -1;
    p = skip_ws(p, e);
    if (p >= e || *p != '{') return 0;
    p = skip_ws(p + 1, e);
    for (;;) {
        if (p >= e || *p != '"' || (p = plain_string(p, e, &s, &n)) == NULL) return 0;
        p = skip_ws(p, e);
        if (p >= e || *p != ':') return 0;
        p = skip_ws(p + 1, e);
        int f = field_of(s, n);
        if (f >= 0) {
            if (have & (1 << f)) return 0;      /* twice: the decoder decides which */
            have |= 1 << f;
        }
        if (f == SC_SEQ) {
            long long v = 0;
            const char *q = p;
            while (q < e && *q >= '0' && *q <= '9' && q - p < 18) v = v * 10 + (*q++ - '0');
            if (q == p || (*p == '0' && q - p > 1) || (q < e && ((*q >= '0' && *q <= '9')
                || *q == '.' || *q == 'e' || *q == 'E'))) return 0;
            o->seq = v;
            p = q;
        } else if (f >= 0) {
            if (p < e && *p == 'n' && e - p >= 4 && !memcmp(p, "null", 4)
                && (f == SC_KEY || f == SC_IDEM)) {
                p += 4;                           /* a null name: as left out */
            } else {
                if (p >= e || *p != '"' || (p = plain_string(p, e, &s, &n)) == NULL) return 0;
                if (f == SC_TYPE && (o->type = type_of(s, n)) < 0) return 0;
                if (f == SC_WRITER) { o->writer = s; o->wlen = n; }
                if (f == SC_KEY) { key = s; klen = n; }
                if (f == SC_IDEM) { idem = s; ilen = n; }
            }
        } else if ((p = skip_value(p, e)) == NULL) {
            return 0;
        }
        p = skip_ws(p, e);
        if (p < e && *p == ',') { p = skip_ws(p + 1, e); continue; }
        if (p < e && *p == '}') { p = skip_ws(p + 1, e); break; }
        return 0;
    }
    if (p != e || !(have & (1 << SC_TYPE)) || !(have & (1 << SC_WRITER)) || !(have & (1 << SC_SEQ)))
        return 0;
    o->name = NULL;
    o->nlen = 0;
    if (o->type == EV_C || o->type == EV_R) return 1;
    if (key != NULL) { o->name = key; o->nlen = klen; }
    else if (o->type == EV_E && idem != NULL) { o->name = idem; o->nlen = ilen; }
    return o->name != NULL;
}

/* kinds of an indexed line */
enum { IX_NONE, IX_KEYED, IX_ALL };

/* A few writers' names and Writer objects, looked at before the dict (most logs have few
 * writers, which take turns); a miss goes to the dict. Reset by index(..., by_bytes) when
 * the dict is another one. */
#define WCACHE 64
/* per entry, within one index() call: the writer's next seq and last location as C values
 * (`held`), written back to the Writer (`dirty`) before Python can look (note_seq, the
 * entry's eviction, the call's end), and read again in the next call */
static struct { PyObject *name, *w; long idx; uint64_t base; long long nxt; uint64_t hi;
                int held, dirty; } wcache[WCACHE];
static PyObject *wcache_dict;

/* write entry h's next seq and last location back to its Writer; -1 on no memory */
static int wcache_flush(int h)
{
    if (!wcache[h].dirty) return 0;
    PyObject *nx = PyLong_FromLongLong(wcache[h].nxt), *hi = PyLong_FromUnsignedLongLong(wcache[h].hi);
    if (nx == NULL || hi == NULL) { Py_XDECREF(nx); Py_XDECREF(hi); return -1; }
    put(wcache[h].w, w_off[W_NXT], nx);
    put(wcache[h].w, w_off[W_HI_LOC], hi);
    wcache[h].dirty = 0;
    return 0;
}

/* every entry written back and let go of its values (the end of an index() call); -1 on
 * no memory */
static int wcache_flush_all(void)
{
    int bad = 0;
    for (int h = 0; h < WCACHE; h++) {
        if (wcache[h].w != NULL && wcache_flush(h) < 0) bad = -1;
        wcache[h].held = 0;
    }
    return bad;
}

static void wcache_reset(PyObject *d)
{
    for (int i = 0; i < WCACHE; i++) {
        Py_CLEAR(wcache[i].name); Py_CLEAR(wcache[i].w);
        wcache[i].held = wcache[i].dirty = 0;      /* written back at every call's end */
    }
    Py_XDECREF(wcache_dict);
    Py_INCREF(d);
    wcache_dict = d;
}

/* the Writer of name p[0:n] (a new reference), made by new_writer when new, with its
 * index and base (which a Writer keeps from its making on; *idx -1: not a usual Writer,
 * Python's to take); NULL on error */
static PyObject *writer_of_bytes(PyObject *by_bytes, PyObject *new_writer, const char *p,
                                 Py_ssize_t n, long *idx, uint64_t *base, int *slot)
{
    uint32_t h = crc32_of((const unsigned char *)p, n) % WCACHE;   /* any hash would do */
    PyObject *c = wcache[h].name;
    *slot = (int)h;
    if (c != NULL && PyBytes_GET_SIZE(c) == n && !memcmp(PyBytes_AS_STRING(c), p, (size_t)n)) {
        *idx = wcache[h].idx;
        *base = wcache[h].base;
        Py_INCREF(wcache[h].w);
        return wcache[h].w;
    }
    if (wcache[h].w != NULL && wcache_flush((int)h) < 0) return NULL;   /* evicted */
    wcache[h].held = 0;
    PyObject *key = PyBytes_FromStringAndSize(p, n);
    if (key == NULL) return NULL;
    PyObject *w = PyDict_GetItemWithError(by_bytes, key);
    if (w != NULL) Py_INCREF(w);
    else if (!PyErr_Occurred()) w = PyObject_CallOneArg(new_writer, key);
    if (w != NULL) {
        int ok = 1;
        *idx = Py_TYPE(w) == writer_type ? small(SLOT(w, w_off[W_IDX]), &ok) : (ok = 0);
        if (!ok || *idx < 0 || *idx >= 0xFFFFFFFEL || !fits(SLOT(w, w_off[W_BASE]), U64, base))
            *idx = -1;
        wcache[h].idx = *idx;
        wcache[h].base = *base;
        Py_XSETREF(wcache[h].name, key);
        Py_INCREF(w);
        Py_XSETREF(wcache[h].w, w);
    } else {
        Py_DECREF(key);
    }
    return w;
}

/* index(buf, pos, first, fi, limit, by_bytes, new_writer, found, kind, widx, crc): the
 * pre-pass over the complete lines of buf from byte pos (each ends with a newline), the
 * first being number `first` of file fi: the writer stage once, for every shard (the
 * writer's next seq, else `writers.note_seq` with `found`; its number, from the Writer
 * objects `by_bytes` maps its name's bytes to, `new_writer(bytes)` making one), and per
 * line its kind, its writer's index + 1 (0: a line to ignore) and its routing name's
 * CRC-32, written at the line's number into the buffers. Returns (bytes taken, lines
 * taken): it stops at a line it cannot take (not plain, too long, past the buffers, a
 * location past 64 bits), which the Python side then takes. */
static PyObject *py_index(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) { PyErr_SetString(PyExc_TypeError, "index(buf, pos, first, fi, limit, by_bytes, new_writer, found, kind, widx, crc)"); return NULL; }
    PyObject *by_bytes = args[5], *new_writer = args[6], *found = args[7];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    long long first = PyLong_AsLongLong(args[2]), fi = PyLong_AsLongLong(args[3]);
    Py_ssize_t limit = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (!configured || !PyBytes_CheckExact(args[0]) || !PyDict_CheckExact(by_bytes)) {
        PyErr_SetString(PyExc_TypeError, "index: after setup, buf bytes, by_bytes a dict");
        return NULL;
    }
    if (wcache_dict != by_bytes) wcache_reset(by_bytes);
    Py_buffer kb, wb, cb;
    if (PyObject_GetBuffer(args[8], &kb, PyBUF_WRITABLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[9], &wb, PyBUF_WRITABLE) < 0) { PyBuffer_Release(&kb); return NULL; }
    if (PyObject_GetBuffer(args[10], &cb, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&kb); PyBuffer_Release(&wb); return NULL;
    }
    uint8_t *kind = kb.buf;
    uint32_t *widx = wb.buf, *crc = cb.buf;
    Py_ssize_t cap = kb.len;
    if (wb.len / 4 < cap) cap = wb.len / 4;
    if (cb.len / 4 < cap) cap = cb.len / 4;
    const char *base_p = PyBytes_AS_STRING(args[0]), *end = base_p + PyBytes_GET_SIZE(args[0]);
    const char *p = base_p + pos;
    long long no = first;
    int err = 0;
    while (p < end) {
        const char *q = memchr(p, '\n', (size_t)(end - p));
        if (q == NULL) break;                   /* not a complete line: the caller's */
        Py_ssize_t len = q - p, j;
        if (no < 0 || no >= cap || fi < 0 || fi >= (1LL << 23) || no >= (1LL << LINE_BITS)
            || len > limit) break;
        for (j = 0; j < len && (p[j] == ' ' || (p[j] >= '\t' && p[j] <= '\r')); j++) ;
        if (j == len) {                         /* blank (bytes.isspace): no event */
            kind[no] = IX_NONE; widx[no] = 0; crc[no] = 0;
            p = q + 1; no++;
            continue;
        }
        Scan sc = {0};
        if (!scan_line(p, len, &sc)) break;
        uint64_t base = 0;
        long idx = -1;
        int h = 0;
        PyObject *w = writer_of_bytes(by_bytes, new_writer, sc.writer, sc.wlen, &idx, &base, &h);
        if (w == NULL) { err = 1; break; }
        int ok = idx >= 0, keep = 1;
        if (ok && !wcache[h].held) {
            wcache[h].nxt = small(SLOT(w, w_off[W_NXT]), &ok);
            wcache[h].held = ok;
        }
        if (!ok) {
            Py_DECREF(w);
            break;                              /* unusual: Python's */
        }
        uint64_t loc = base | (uint64_t)fi << LINE_BITS | (uint64_t)no;
        if (wcache[h].nxt == sc.seq) {           /* the writer's next line */
            wcache[h].nxt = sc.seq + 1;
            wcache[h].hi = loc;
            wcache[h].dirty = 1;
        } else {                                 /* writers.note_seq decides */
            PyObject *lo = wcache_flush(h) < 0 ? NULL : PyLong_FromUnsignedLongLong(loc);
            PyObject *seq = lo ? PyLong_FromLongLong(sc.seq) : NULL;
            PyObject *r = seq ? call4(note_seq, w, seq, found, lo) : NULL;
            keep = r ? PyObject_IsTrue(r) : -1;
            wcache[h].held = 0;                  /* Python may have changed it */
            Py_XDECREF(r); Py_XDECREF(seq); Py_XDECREF(lo);
        }
        Py_DECREF(w);
        if (keep < 0) { err = 1; break; }
        kind[no] = sc.name ? IX_KEYED : IX_ALL;
        widx[no] = keep ? (uint32_t)(idx + 1) : 0;
        crc[no] = sc.name ? crc32_of((const unsigned char *)sc.name, sc.nlen) : 0;
        p = q + 1;
        no++;
    }
    PyBuffer_Release(&kb); PyBuffer_Release(&wb); PyBuffer_Release(&cb);
    if (wcache_flush_all() < 0 && !err) { PyErr_NoMemory(); err = 1; }
    if (err) return NULL;
    return Py_BuildValue("(nL)", (Py_ssize_t)(p - base_p) - pos, no - first);
}

static PyObject *py_index_done(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(unused))
{
    wcache_reset(Py_None);      /* let the writers go */
    Py_CLEAR(wcache_dict);
    Py_RETURN_NONE;
}

/* pick(buf, pos, end, first, lines, kind, crc, me, shards, owned): of the lines of buf
 * from byte pos (each ends with a newline, but one ending at `end`, the end of the file's
 * last line), at most `lines`, the first being number `first`, those a shard decodes: its
 * keyed lines (CRC-32 modulo the shards is `me`, or, for the fixup, in the set `owned` of
 * CRC-32s) and every crash or restart line. Returns (their bytes, their numbers, bytes
 * taken, lines taken). */
static PyObject *py_pick(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10) { PyErr_SetString(PyExc_TypeError, "pick(buf, pos, end, first, lines, kind, crc, me, shards, owned)"); return NULL; }
    if (!PyBytes_CheckExact(args[0])) { PyErr_SetString(PyExc_TypeError, "pick: buf bytes"); return NULL; }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), stop = PyLong_AsSsize_t(args[2]);
    long long first = PyLong_AsLongLong(args[3]), lines = PyLong_AsLongLong(args[4]);
    long me = PyLong_AsLong(args[7]), shards = PyLong_AsLong(args[8]);
    PyObject *owned = args[9];
    if (PyErr_Occurred()) return NULL;
    if (shards < 1 || (owned != Py_None && !PyAnySet_Check(owned))
        || pos < 0 || stop > PyBytes_GET_SIZE(args[0])) {
        PyErr_SetString(PyExc_ValueError, "pick: shards >= 1, owned a set or None, pos and end in buf");
        return NULL;
    }
    Py_buffer kb, cb;
    if (PyObject_GetBuffer(args[5], &kb, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[6], &cb, PyBUF_SIMPLE) < 0) { PyBuffer_Release(&kb); return NULL; }
    const uint8_t *kind = kb.buf;
    const uint32_t *crc = cb.buf;
    const char *b0 = PyBytes_AS_STRING(args[0]), *p = b0 + pos, *end = b0 + PyBytes_GET_SIZE(args[0]);
    PyObject *raw = PyList_New(0), *nums = PyList_New(0), *out = NULL;
    long long no = first;
    if (raw == NULL || nums == NULL) goto done;
    while (no < first + lines && p < end) {
        const char *q = memchr(p, '\n', (size_t)(end - p));
        if (q == NULL) {
            if (p - b0 >= stop) break;           /* an unfinished line: the next buffer's */
            q = end;
        }
        if (no < 0 || no >= kb.len || no >= cb.len / 4) break;
        int take = kind[no] == IX_ALL;
        if (kind[no] == IX_KEYED) {
            if (owned == Py_None) {
                take = (long)(crc[no] % (uint32_t)shards) == me;
            } else {
                PyObject *c = PyLong_FromUnsignedLong(crc[no]);
                take = c ? PySet_Contains(owned, c) : -1;
                Py_XDECREF(c);
                if (take < 0) goto done;
            }
        }
        if (take) {
            PyObject *b = PyBytes_FromStringAndSize(p, q - p), *x = PyLong_FromLongLong(no);
            int bad = b == NULL || x == NULL || PyList_Append(raw, b) < 0 || PyList_Append(nums, x) < 0;
            Py_XDECREF(b); Py_XDECREF(x);
            if (bad) goto done;
        }
        p = q < end ? q + 1 : end;
        no++;
    }
    out = Py_BuildValue("(OOnL)", raw, nums, (Py_ssize_t)(p - b0) - pos, no - first);
done:
    Py_XDECREF(raw); Py_XDECREF(nums);
    PyBuffer_Release(&kb); PyBuffer_Release(&cb);
    return out;
}

/* feed_at(st, events, numbers, fi, widx, shift, lead, fallback, crash): `Conformance.feed`
 * with the writer stage done by the index: events[i] is line numbers[i] of file fi, its
 * writer's index + 1 widx[numbers[i]] (0: a repeated seq, ignored; `shift`: the writer's
 * place in a location). Crash and restart lines are counted by the lead only; a crash is
 * noted by `crash(ev, loc, widx)` in every shard. What the common cases do not take goes
 * to `fallback(ev, loc)`. */
static PyObject *feed_at(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (!configured) { PyErr_SetString(PyExc_RuntimeError, "lane not set up"); return NULL; }
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "feed_at(st, events, numbers, fi, widx, shift, lead, fallback, crash)");
        return NULL;
    }
    PyObject *st = args[0], *events = args[1], *numbers = args[2], *fallback = args[7], *crash_fn = args[8];
    long long fi = PyLong_AsLongLong(args[3]);
    long shift = PyLong_AsLong(args[5]);
    int lead = PyObject_IsTrue(args[6]);
    if (PyErr_Occurred() || lead < 0) return NULL;
    if (!PyList_CheckExact(events) || !PyList_CheckExact(numbers)
        || PyList_GET_SIZE(events) != PyList_GET_SIZE(numbers)) {
        PyErr_SetString(PyExc_TypeError, "events, numbers: lists of one length");
        return NULL;
    }
    Py_buffer wb;
    if (PyObject_GetBuffer(args[4], &wb, PyBUF_SIMPLE) < 0) return NULL;
    const uint32_t *widx = wb.buf;
    Py_ssize_t cap = wb.len / 4;
    int err = 0;
    Store s = {st, get(st, "writers", &err), get(st, "keys", &err), get(st, "intents", &err),
               get(st, "memo", &err), get(st, "seq_found", &err), 0};
    PyObject *packing = get(st, "packing", &err), *counts = get(st, "counts", &err);
    long long n_of[NEV] = {0};
    PyObject *result = NULL;
    if (err) goto done;
    s.packing = PyObject_IsTrue(packing);
    if (fi < 0 || fi >= (1LL << 23) || shift < LINE_BITS || shift > 63) {
        PyErr_SetString(PyExc_ValueError, "feed_at: file index or shift out of range");
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *ev = PyList_GET_ITEM(events, i);
        long long line = PyLong_AsLongLong(PyList_GET_ITEM(numbers, i));
        if (line == -1 && PyErr_Occurred()) goto done;
        failed = line;
        if (line < 0 || line >= cap || line >= (1LL << LINE_BITS)) {
            PyErr_SetString(PyExc_ValueError, "feed_at: a line past the index");
            goto done;
        }
        uint32_t wi = widx[line];
        if (wi == 0) continue;                 /* a repeated seq: every shard ignores it */
        int t;
        for (t = 0; t < NEV && Py_TYPE(ev) != ev_type[t]; t++) ;
        if (t == NEV) { PyErr_SetString(PyExc_TypeError, "feed_at: not an event"); goto done; }
        PyObject *loc;
        if (((uint64_t)wi >> (64 - shift)) != 0) {      /* past 64 bits: Python's int */
            PyObject *a = PyLong_FromUnsignedLong(wi), *sh = a ? PyLong_FromLong(shift) : NULL;
            PyObject *hi = sh ? PyNumber_Lshift(a, sh) : NULL;
            PyObject *rest = PyLong_FromUnsignedLongLong((uint64_t)fi << LINE_BITS | (uint64_t)line);
            loc = hi && rest ? PyNumber_Or(hi, rest) : NULL;
            Py_XDECREF(a); Py_XDECREF(sh); Py_XDECREF(hi); Py_XDECREF(rest);
        } else {
            loc = PyLong_FromUnsignedLongLong((uint64_t)wi << shift | (uint64_t)fi << LINE_BITS
                                              | (uint64_t)line);
        }
        if (loc == NULL) goto done;
        int done_ = 0;
        if (t == EV_C || t == EV_R) {
            if (lead) n_of[t]++;
            if (t == EV_C) {
                PyObject *wio = PyLong_FromUnsignedLong(wi);
                PyObject *r = wio ? call3(crash_fn, ev, loc, wio) : NULL;
                Py_XDECREF(wio);
                if (r == NULL) done_ = -1;
                Py_XDECREF(r);
            }
            Py_DECREF(loc);
            if (done_ < 0) goto done;
            continue;
        }
        n_of[t]++;
        if (t == EV_T) done_ = transition(&s, ev, SLOT(ev, ev_off[t][F_WRITER]), SLOT(ev, ev_off[t][F_SEQ]), loc);
        else if (t == EV_P) done_ = proposal(&s, ev, SLOT(ev, ev_off[t][F_SEQ]), loc);
        else done_ = effect(&s, ev, loc);
        if (done_ == 0) {
            PyObject *r = PyObject_CallFunctionObjArgs(fallback, ev, loc, NULL);
            if (r == NULL) done_ = -1;
            Py_XDECREF(r);
        }
        Py_DECREF(loc);
        if (done_ < 0) goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&wb);
    add_counts(counts, n_of);
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

static PyObject *objects(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
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
static PyObject *py_flat_digest(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
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
static PyObject *sha_check(PyObject *Py_UNUSED(self), PyObject *data)
{
    unsigned char md[32];
    if (!PyBytes_Check(data)) { PyErr_SetString(PyExc_TypeError, "bytes"); return NULL; }
    if (!native_sha256(PyBytes_AS_STRING(data), (size_t)PyBytes_GET_SIZE(data), md)) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)md, 32);
}

static PyObject *sha_off(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(unused))
{
    evp_ctx = NULL;
    Py_RETURN_NONE;
}

static PyObject *py_crc32(PyObject *Py_UNUSED(self), PyObject *data)
{
    if (!PyBytes_Check(data)) { PyErr_SetString(PyExc_TypeError, "bytes"); return NULL; }
    return PyLong_FromUnsignedLong(crc32_of((const unsigned char *)PyBytes_AS_STRING(data),
                                            PyBytes_GET_SIZE(data)));
}

/* the bitmap index of a digest (bytes, at least 3 long): its first three bytes,
 * little-endian, as `shards.prefix_bitmap` reads them; -1 with TypeError if not a digest */
static long prefix_of(PyObject *d)
{
    if (!PyBytes_Check(d) || PyBytes_GET_SIZE(d) < 3) {
        PyErr_SetString(PyExc_TypeError, "digests are bytes of 3 or more");
        return -1;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(d);
    return (long)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16);
}

/* prefix_bits(digests, nbytes): a bitmap of nbytes bytes with the bit of each digest's
 * prefix set (the items of any iterable: Shard.run's bitmap, `shards.prefix_bitmap`) */
static PyObject *prefix_bits(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "prefix_bits(digests, nbytes)"); return NULL; }
    Py_ssize_t nbytes = PyLong_AsSsize_t(args[1]);
    if (nbytes == -1 && PyErr_Occurred()) return NULL;
    if (nbytes < 0 || nbytes > (1 << 21)) {
        PyErr_SetString(PyExc_ValueError, "prefix_bits: nbytes 0 .. 2**21");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, nbytes), *it = NULL, *d;
    if (out == NULL || (it = PyObject_GetIter(args[0])) == NULL) { Py_XDECREF(out); return NULL; }
    unsigned char *bits = (unsigned char *)PyBytes_AS_STRING(out);
    memset(bits, 0, (size_t)nbytes);
    while ((d = PyIter_Next(it)) != NULL) {
        long i = prefix_of(d);
        Py_DECREF(d);
        if (i >= 0 && (i >> 3) >= nbytes) {
            PyErr_SetString(PyExc_ValueError, "prefix_bits: a prefix past the bitmap");
            i = -1;
        }
        if (i < 0) break;
        bits[i >> 3] |= (unsigned char)(1u << (i & 7));
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) { Py_DECREF(out); return NULL; }
    return out;
}

/* prefix_hits(digests, bitmap): the digests (keys of a dict, in order) whose prefix bit
 * is set in bitmap (Shard.candidates, `shards.prefixed`) */
static PyObject *prefix_hits(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_CheckExact(args[0]) || !PyBytes_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "prefix_hits(digests: dict, bitmap: bytes)");
        return NULL;
    }
    const unsigned char *bits = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    Py_ssize_t nbytes = PyBytes_GET_SIZE(args[1]), pos = 0;
    PyObject *out = PyList_New(0), *d;
    if (out == NULL) return NULL;
    while (PyDict_Next(args[0], &pos, &d, NULL)) {
        long i = prefix_of(d);
        if (i < 0 || ((i >> 3) < nbytes && (bits[i >> 3] >> (i & 7) & 1)
                      && PyList_Append(out, d) < 0)) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static PyObject *failed_line(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(unused))
{
    return PyLong_FromLongLong(failed);
}

static PyObject *py_flat_dump(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
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
    {"index", (PyCFunction)(void (*)(void))py_index, METH_FASTCALL,
     "index(buf, pos, first, fi, limit, by_bytes, new_writer, found, kind, widx, crc)"},
    {"index_done", py_index_done, METH_NOARGS, "forget the writers index() looked up"},
    {"pick", (PyCFunction)(void (*)(void))py_pick, METH_FASTCALL,
     "pick(buf, pos, end, first, lines, kind, crc, me, shards, owned): the lines a shard decodes"},
    {"feed_at", (PyCFunction)(void (*)(void))feed_at, METH_FASTCALL,
     "feed_at(st, events, numbers, fi, widx, shift, lead, fallback, crash)"},
    {"failed_line", failed_line, METH_NOARGS, "the line of the last feed's exception"},
    {"prefix_bits", (PyCFunction)(void (*)(void))prefix_bits, METH_FASTCALL,
     "prefix_bits(digests, nbytes): the bitmap of the digests' 3-byte prefixes"},
    {"prefix_hits", (PyCFunction)(void (*)(void))prefix_hits, METH_FASTCALL,
     "prefix_hits(digests, bitmap): the digests whose prefix bit is set"},
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

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tc_lane", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_tc_lane(void)
{
    if (PyType_Ready(&ObjectsIterType) < 0) return NULL;
    crc_init();
    verbatim_init();
    one_int = PyLong_FromLong(1);
    return PyModule_Create(&module);
}
