/* Native scan of a Kineto ``traceEvents`` array into profui event columns.
 *
 * The common events (complete "X" events of a known category, instants with a category,
 * correlation flow events) are turned into columns here, in one pass over the JSON text
 * with the GIL released. Everything else, and every event with anything unusual about it
 * (escaped names, named pid/tid, non-integer ids, ...), is returned as a "special" (event
 * index, start, end) for the pure-Python converter, which stays the reference for every rule:
 * convert.py documents them, tests compare the two paths on every shared trace and on
 * generated events.
 *
 * No Kineto name is spelled here: the categories, args keys, instant category and flow
 * categories all come from mapping.py through native.py (the ``Policy``). Times are not
 * converted here either: ``ts``/``dur`` are checked to be JSON numbers and handed back as text
 * for timeparse.us_to_ns, the one conversion of every time.
 *
 * What is applied to a row (mirroring convert._build_columns), with the policy's keys:
 * - args keys that become columns are cut from the args text: external id, correlation;
 *   device/stream on device-side kinds (int32 values; else null, and convert._finish_rows
 *   takes them from pid/tid); bytes on memcpy/memset; a memcpy's
 *   non-numeric string kind; an MTIA DMA's direction/size (the row becomes a memcpy);
 * - a category that is not the kind's canonical one is kept as args cat (added last);
 * - args are written compact (no whitespace), "{}" becomes null.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- growable buffers ------------------------------------------------------------------ */

typedef struct {
    char *p;
    size_t n, cap;
} Buf;

static int grow(Buf *b, size_t extra) {
    if (b->n + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->n + extra) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) return -1;
    b->p = q;
    b->cap = cap;
    return 0;
}

static inline int put(Buf *b, const void *src, size_t len) {
    if (!len) return 0;
    if (grow(b, len)) return -1;
    memcpy(b->p + b->n, src, len);
    b->n += len;
    return 0;
}

static inline int put_i64(Buf *b, int64_t v) { return put(b, &v, 8); }
static inline int put_i32(Buf *b, int32_t v) { return put(b, &v, 4); }
static inline int put_u8(Buf *b, uint8_t v) { return put(b, &v, 1); }

/* A validity bitmap (Arrow layout: bit i of byte i/8, LSB first). */
static int put_bit(Buf *b, size_t row, int valid) {
    size_t need = row / 8 + 1;
    if (b->n < need) {
        if (grow(b, need - b->n)) return -1;
        memset(b->p + b->n, 0, need - b->n);
        b->n = need;
    }
    if (valid) b->p[row / 8] |= (char)(1u << (row % 8));
    return 0;
}

/* A string column: int64 offsets (starting with 0), data, validity. */
typedef struct {
    Buf off, data, valid;
} StrCol;

static int str_init(StrCol *c) { return put_i64(&c->off, 0); }

static int str_put(StrCol *c, size_t row, const char *s, size_t len, int valid) {
    if (valid && put(&c->data, s, len)) return -1;
    if (put_i64(&c->off, (int64_t)c->data.n)) return -1;
    return put_bit(&c->valid, row, valid);
}

/* An int64 column with validity. */
typedef struct {
    Buf v, valid;
} IntCol;

static int int_put(IntCol *c, size_t row, int64_t v, int valid) {
    if (put_i64(&c->v, valid ? v : 0)) return -1;
    return put_bit(&c->valid, row, valid);
}

/* ---- JSON scanning ------------------------------------------------------------------------ */

typedef struct {
    const char *s, *e;
} Span;

static inline const char *ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

/* p at the opening quote; returns the end of the string (after the closing quote). */
static const char *scan_string(const char *p, const char *e, int *esc) {
    p++;
    for (;;) {
        const char *q = memchr(p, '"', (size_t)(e - p));
        if (!q) return NULL;
        const char *b = memchr(p, '\\', (size_t)(q - p));
        if (!b) return q + 1;
        *esc = 1;
        if (b + 2 > e) return NULL;
        p = b + 2;
    }
}

enum { ITEM_ERROR = -1, ITEM_LAST = 0, ITEM_MORE = 1 };

/* After an item of an object or array: past a comma (more items follow) or past ``close``. */
static int next_item(const char **pp, const char *e, char close) {
    const char *p = ws(*pp, e);
    if (p < e && *p == ',') {
        *pp = ws(p + 1, e);
        return ITEM_MORE;
    }
    if (p < e && *p == close) {
        *pp = p + 1;
        return ITEM_LAST;
    }
    return ITEM_ERROR;
}

static inline int is_num_char(char c) {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Skip one JSON value at p, copying it compact into out when out is not NULL. */
static const char *value(const char *p, const char *e, Buf *out, int depth) {
    if (p >= e) return NULL;
    char c = *p;
    if (c == '"') {
        int esc = 0;
        const char *q = scan_string(p, e, &esc);
        if (!q || (out && put(out, p, (size_t)(q - p)))) return NULL;
        return q;
    }
    if (c == '{' || c == '[') {
        if (depth > 500) return NULL;
        char close = c == '{' ? '}' : ']';
        if (out && put(out, &c, 1)) return NULL;
        p = ws(p + 1, e);
        if (p < e && *p == close) {
            if (out && put(out, &close, 1)) return NULL;
            return p + 1;
        }
        for (;;) {
            if (c == '{') {
                if (p >= e || *p != '"') return NULL;
                int esc = 0;
                const char *q = scan_string(p, e, &esc);
                if (!q || (out && put(out, p, (size_t)(q - p)))) return NULL;
                p = ws(q, e);
                if (p >= e || *p != ':') return NULL;
                if (out && put(out, ":", 1)) return NULL;
                p = ws(p + 1, e);
            }
            p = value(p, e, out, depth + 1);
            if (!p) return NULL;
            int more = next_item(&p, e, close);
            if (more == ITEM_ERROR || (out && put(out, more ? "," : &close, 1))) return NULL;
            if (!more) return p;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        const char *q = p;
        while (q < e && is_num_char(*q)) q++;
        if (out && put(out, p, (size_t)(q - p))) return NULL;
        return q;
    }
    if (e - p >= 4 && (!memcmp(p, "true", 4) || !memcmp(p, "null", 4))) {
        if (out && put(out, p, 4)) return NULL;
        return p + 4;
    }
    if (e - p >= 5 && !memcmp(p, "false", 5)) {
        if (out && put(out, p, 5)) return NULL;
        return p + 5;
    }
    return NULL;
}

static inline int span_is(Span s, const char *lit, size_t n) {
    return (size_t)(s.e - s.s) == n && !memcmp(s.s, lit, n);
}

static inline int is_null(Span v) { return span_is(v, "null", 4); }

/* A plain JSON integer that fits int64. */
static int span_int(Span v, int64_t *out) {
    const char *p = v.s;
    int neg = 0;
    if (p < v.e && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= v.e) return 0;
    uint64_t acc = 0;
    for (; p < v.e; p++) {
        if (*p < '0' || *p > '9') return 0;
        if (acc > (UINT64_MAX - 9) / 10) return 0;
        acc = acc * 10 + (uint64_t)(*p - '0');
    }
    if (neg) {
        if (acc > (uint64_t)INT64_MAX + 1) return 0;
        *out = (int64_t)(0 - acc);
    } else {
        if (acc > (uint64_t)INT64_MAX) return 0;
        *out = (int64_t)acc;
    }
    return 1;
}

/* True when v is exactly one JSON number (RFC 8259 grammar): what msgspec accepts as one. */
static int span_is_number(Span v) {
    const char *p = v.s, *e = v.e;
    if (p < e && *p == '-') p++;
    if (p >= e) return 0;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < e && *p >= '0' && *p <= '9') p++;
    } else {
        return 0;
    }
    if (p < e && *p == '.') {
        const char *fs = ++p;
        while (p < e && *p >= '0' && *p <= '9') p++;
        if (p == fs) return 0;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        const char *xs = p;
        while (p < e && *p >= '0' && *p <= '9') p++;
        if (p == xs) return 0;
    }
    return p == e;
}

/* ---- policy ------------------------------------------------------------------------------ */

enum {
    F_DEVICE = 1,  /* device-side kind: device/stream from args */
    F_MEMCPY = 2,
    F_MEMSET = 4,
    F_RUNTIME = 8,
    F_DMA = 16,    /* MTIA ccp events: a direction in args makes the row a memcpy */
    F_CANON = 32,  /* the category is the kind's canonical one: no args cat */
};

/* The args keys the rules read, in the order native.py passes them. */
enum { K_EXT, K_EXT_ALT, K_CORR, K_DEVICE, K_STREAM, K_BYTES, K_KIND, K_DIRECTION, K_SIZE, K_CAT, NKEYS };

#define MAX_FLOW_CATS 8

typedef struct {
    const char *cat;
    Py_ssize_t len;
    int kind, flags;
} Cat;

typedef struct {
    const char *from, *to;
    Py_ssize_t from_len, to_len;
} Dir;

typedef struct {
    const char *s;
    Py_ssize_t len;
} Name;

typedef struct {
    Cat *cats;
    Py_ssize_t ncats;
    Dir *dirs;
    Py_ssize_t ndirs;
    Name keys[NKEYS];
    Name instant_cat;
    Name flow_cats[MAX_FLOW_CATS];
    Py_ssize_t nflow_cats;
    int instant_kind, memcpy_kind;
} Policy;

static const Cat *find_cat(const Policy *pol, Span s) {
    Py_ssize_t n = s.e - s.s;
    for (Py_ssize_t i = 0; i < pol->ncats; i++)
        if (pol->cats[i].len == n && !memcmp(pol->cats[i].cat, s.s, (size_t)n)) return &pol->cats[i];
    return NULL;
}

/* ---- output ------------------------------------------------------------------------------ */

typedef struct {
    size_t rows;
    Buf kind, pid, tid, device, device_valid, stream, stream_valid, ord;
    IntCol corr, ext, nbytes;
    StrCol ts, dur, name, mkind, args;
    Buf special;    /* int64 triples: event index, start, end (offsets in the text) */
    Buf sizes;      /* int64 pairs: correlation, size of runtime rows */
    int64_t flows[MAX_FLOW_CATS * 3]; /* per flow category: s f t */
    /* metadata dedupe: open addressing over (hash, start, len) */
    uint64_t *mh;
    int64_t *ms, *ml;
    size_t mcap, mcount;
    Buf tmp;        /* args being written */
} Out;

static void out_free(Out *o) {
    Buf *bufs[] = {&o->ts.off, &o->ts.data, &o->ts.valid, &o->dur.off, &o->dur.data, &o->dur.valid,
                   &o->kind, &o->pid, &o->tid, &o->device, &o->device_valid, &o->stream, &o->stream_valid, &o->ord,
                   &o->corr.v, &o->corr.valid, &o->ext.v, &o->ext.valid, &o->nbytes.v, &o->nbytes.valid,
                   &o->name.off, &o->name.data, &o->name.valid, &o->mkind.off, &o->mkind.data,
                   &o->mkind.valid, &o->args.off, &o->args.data, &o->args.valid, &o->special,
                   &o->sizes, &o->tmp};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) free(bufs[i]->p);
    free(o->mh);
    free(o->ms);
    free(o->ml);
}

/* A fast 64-bit hash, 8 bytes a step (metadata events are hashed to drop verbatim repeats;
 * equal hashes are confirmed byte by byte). */
static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        s += 8, n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

/* 1: first time this metadata text is seen, 0: a repeat, -1: out of memory. */
static int meta_first(Out *o, const char *base, const char *s, size_t n) {
    if (o->mcount * 2 >= o->mcap) {
        size_t cap = o->mcap ? o->mcap * 2 : 1024;
        uint64_t *mh = calloc(cap, sizeof *mh);
        int64_t *ms = calloc(cap, sizeof *ms), *ml = calloc(cap, sizeof *ml);
        if (!mh || !ms || !ml) {
            free(mh), free(ms), free(ml);
            return -1;
        }
        for (size_t i = 0; i < o->mcap; i++) {
            if (!o->ml[i]) continue;
            size_t j = o->mh[i] & (cap - 1);
            while (ml[j]) j = (j + 1) & (cap - 1);
            mh[j] = o->mh[i], ms[j] = o->ms[i], ml[j] = o->ml[i];
        }
        free(o->mh), free(o->ms), free(o->ml);
        o->mh = mh, o->ms = ms, o->ml = ml, o->mcap = cap;
    }
    uint64_t h = hash_bytes(s, n);
    size_t j = h & (o->mcap - 1);
    while (o->ml[j]) {
        if (o->mh[j] == h && (size_t)o->ml[j] == n && !memcmp(base + o->ms[j], s, n)) return 0;
        j = (j + 1) & (o->mcap - 1);
    }
    o->mh[j] = h, o->ms[j] = s - base, o->ml[j] = (int64_t)n, o->mcount++;
    return 1;
}

/* ---- one event ---------------------------------------------------------------------------- */

#define MAX_ARGS 256

typedef struct {
    Span key, val; /* key without its quotes */
    int cut;
} Arg;

typedef struct {
    Span ph, cat, name, pid, tid, ts, dur, args;
    int has_ph, has_cat, has_name, has_pid, has_tid, has_ts, has_dur, has_args;
    int cat_null;
} Ev;

enum { ROW_DONE = 0, SPECIAL = 1, NOMEM = -1 };

/* Parse the args object's top-level entries; 0 when unusual (escaped keys, too many). */
static int parse_args(Span a, Arg *args, int *n) {
    const char *p = ws(a.s + 1, a.e), *e = a.e;
    *n = 0;
    if (p < e && *p == '}') return 1;
    for (;;) {
        if (p >= e || *p != '"' || *n >= MAX_ARGS) return 0;
        int esc = 0;
        const char *q = scan_string(p, e, &esc);
        if (!q || esc) return 0;
        Arg *g = &args[(*n)++];
        g->key.s = p + 1;
        g->key.e = q - 1;
        g->cut = 0;
        p = ws(q, e);
        if (p >= e || *p != ':') return 0;
        p = ws(p + 1, e);
        g->val.s = p;
        p = value(p, e, NULL, 0);
        if (!p) return 0;
        g->val.e = p;
        int more = next_item(&p, e, '}');
        if (more != ITEM_MORE) return more == ITEM_LAST;
    }
}

static Arg *find_arg(Arg *args, int n, Name key, int *dup) {
    Arg *found = NULL;
    for (int i = 0; i < n; i++) {
        if (span_is(args[i].key, key.s, (size_t)key.len)) {
            if (found) *dup = 1;
            found = &args[i];
        }
    }
    return found;
}

static int row(Out *o, const Policy *pol, const Ev *ev, int kind, int flags, int64_t index) {
    Arg args[MAX_ARGS];
    int nargs = 0, dup = 0;
    const Name *key = pol->keys;
    if (ev->has_args && !parse_args(ev->args, args, &nargs)) return SPECIAL;
    int64_t pid = 0, tid = 0;
    /* times: JSON numbers, converted in Python (a missing dur is null there) */
    if (!span_is_number(ev->ts)) return SPECIAL;
    if (ev->has_dur && !span_is_number(ev->dur)) return SPECIAL;
    if (ev->has_pid && !span_int(ev->pid, &pid)) return SPECIAL;
    if (ev->has_tid && !span_int(ev->tid, &tid)) return SPECIAL;

    if (find_arg(args, nargs, key[K_EXT_ALT], &dup) || find_arg(args, nargs, key[K_CAT], &dup)) return SPECIAL;
    int64_t ext = 0, corr = 0, nbytes = 0, v;
    int has_ext = 0, has_corr = 0, has_bytes = 0;
    Arg *g = find_arg(args, nargs, key[K_EXT], &dup);
    if (g) {
        if (!span_int(g->val, &ext)) return SPECIAL;
        has_ext = 1, g->cut = 1;
    }
    g = find_arg(args, nargs, key[K_CORR], &dup);
    if (g && !is_null(g->val)) {
        if (!span_int(g->val, &corr)) return SPECIAL;
        has_corr = 1, g->cut = 1;
    }
    int32_t device = 0, stream = 0;
    int dev_set = 0, stream_set = 0;
    Span mk = {NULL, NULL};
    int has_mk = 0;
    if (flags & F_DEVICE) {
        g = find_arg(args, nargs, key[K_DEVICE], &dup);
        if (g && !is_null(g->val)) {
            if (!span_int(g->val, &v)) return SPECIAL;
            if (v >= INT32_MIN && v <= INT32_MAX) device = (int32_t)v, dev_set = 1, g->cut = 1;
        }
        g = find_arg(args, nargs, key[K_STREAM], &dup);
        if (g && !is_null(g->val)) {
            if (!span_int(g->val, &v)) return SPECIAL;
            if (v >= INT32_MIN && v <= INT32_MAX) stream = (int32_t)v, stream_set = 1, g->cut = 1;
        }
        Arg *dir = (flags & F_DMA) ? find_arg(args, nargs, key[K_DIRECTION], &dup) : NULL;
        if (dir) {
            /* an MTIA DMA transfer: a copy, its kind from the direction, bytes from size */
            if (dir->val.s >= dir->val.e || *dir->val.s != '"') return SPECIAL;
            int esc = 0;
            if (!scan_string(dir->val.s, dir->val.e, &esc) || esc) return SPECIAL;
            Span d = {dir->val.s + 1, dir->val.e - 1};
            mk = d, has_mk = 1;
            for (Py_ssize_t i = 0; i < pol->ndirs; i++) {
                if (span_is(d, pol->dirs[i].from, (size_t)pol->dirs[i].from_len)) {
                    mk.s = pol->dirs[i].to, mk.e = pol->dirs[i].to + pol->dirs[i].to_len;
                    break;
                }
            }
            dir->cut = 1;
            g = find_arg(args, nargs, key[K_SIZE], &dup);
            if (g) {
                if (!is_null(g->val)) {
                    if (!span_int(g->val, &nbytes)) return SPECIAL;
                    has_bytes = 1;
                }
                g->cut = 1;
            }
            kind = pol->memcpy_kind;
        } else if (flags & (F_MEMCPY | F_MEMSET)) {
            g = find_arg(args, nargs, key[K_BYTES], &dup);
            if (g && !is_null(g->val)) {
                if (!span_int(g->val, &nbytes)) return SPECIAL;
                has_bytes = 1, g->cut = 1;
            }
            if (flags & F_MEMCPY) {
                g = find_arg(args, nargs, key[K_KIND], &dup);
                if (g && g->val.s < g->val.e && *g->val.s == '"') {
                    int esc = 0;
                    if (!scan_string(g->val.s, g->val.e, &esc) || esc) return SPECIAL;
                    Span k = {g->val.s + 1, g->val.e - 1};
                    int digits = 1;
                    for (const char *c = k.s; c < k.e; c++) {
                        if ((unsigned char)*c >= 0x80) return SPECIAL; /* str.isdigit is Unicode-aware */
                        if (*c < '0' || *c > '9') digits = 0;
                    }
                    if (k.e > k.s && !digits) mk = k, has_mk = 1, g->cut = 1;
                }
                /* without one, the kind from the name: convert._finish_rows */
            }
        }
    } else if ((flags & F_RUNTIME) && has_corr) {
        g = find_arg(args, nargs, key[K_SIZE], &dup);
        if (g && !is_null(g->val)) {
            if (!span_int(g->val, &v)) return SPECIAL;
            if (put_i64(&o->sizes, corr) || put_i64(&o->sizes, v)) return NOMEM;
        }
    }
    if (dup) return SPECIAL;

    /* the args text: compact, cut keys left out, a non-canonical category added last */
    Buf *t = &o->tmp;
    t->n = 0;
    if (put(t, "{", 1)) return NOMEM;
    int first = 1;
    for (int i = 0; i < nargs; i++) {
        if (args[i].cut) continue;
        if (!first && put(t, ",", 1)) return NOMEM;
        first = 0;
        if (put(t, args[i].key.s - 1, (size_t)(args[i].key.e - args[i].key.s) + 2) || put(t, ":", 1)) return NOMEM;
        if (!value(args[i].val.s, args[i].val.e, t, 0)) return SPECIAL;
    }
    if (!(flags & F_CANON)) {
        if (!first && put(t, ",", 1)) return NOMEM;
        first = 0;
        if (put(t, "\"", 1) || put(t, key[K_CAT].s, (size_t)key[K_CAT].len) || put(t, "\":", 2) ||
            put(t, ev->cat.s - 1, (size_t)(ev->cat.e - ev->cat.s) + 2))
            return NOMEM;
    }
    if (put(t, "}", 1)) return NOMEM;
    int has_args_text = !first;

    size_t r = o->rows;
    const char *name = ev->has_name ? ev->name.s : "";
    size_t name_len = ev->has_name ? (size_t)(ev->name.e - ev->name.s) : 0;
    if (str_put(&o->ts, r, ev->ts.s, (size_t)(ev->ts.e - ev->ts.s), 1) ||
        str_put(&o->dur, r, ev->dur.s, ev->has_dur ? (size_t)(ev->dur.e - ev->dur.s) : 0, ev->has_dur) ||
        put_u8(&o->kind, (uint8_t)kind) ||
        put_i64(&o->pid, pid) || put_i64(&o->tid, tid) || put_i32(&o->device, device) ||
        put_bit(&o->device_valid, r, dev_set) || put_i32(&o->stream, stream) ||
        put_bit(&o->stream_valid, r, stream_set) || put_i64(&o->ord, index) || int_put(&o->corr, r, corr, has_corr) ||
        int_put(&o->ext, r, ext, has_ext) || int_put(&o->nbytes, r, nbytes, has_bytes) ||
        str_put(&o->name, r, name, name_len, 1) ||
        str_put(&o->mkind, r, mk.s, has_mk ? (size_t)(mk.e - mk.s) : 0, has_mk) ||
        str_put(&o->args, r, t->p, t->n, has_args_text))
        return NOMEM;
    o->rows++;
    return ROW_DONE;
}

/* Parse the event object at p (its end in *end); dispatch it. */
static int event(Out *o, const Policy *pol, const char *base, const char *p, const char *e, const char **end,
                 int64_t index) {
    const char *start = p;
    Ev ev;
    memset(&ev, 0, sizeof ev);
    int unusual = 0;
    if (p >= e || *p != '{') return -2;
    p = ws(p + 1, e);
    if (p < e && *p == '}') {
        p++;
    } else {
        for (;;) {
            if (p >= e || *p != '"') return -2;
            int esc = 0;
            const char *q = scan_string(p, e, &esc);
            if (!q) return -2;
            Span key = {p + 1, q - 1};
            p = ws(q, e);
            if (p >= e || *p != ':') return -2;
            p = ws(p + 1, e);
            Span val = {p, NULL};
            p = value(p, e, NULL, 0);
            if (!p) return -2;
            val.e = p;
            if (esc) {
                unusual = 1;
            } else {
                Span *slot = NULL;
                int *has = NULL;
                size_t kl = (size_t)(key.e - key.s);
                switch (kl) {
                case 2:
                    if (!memcmp(key.s, "ph", 2)) slot = &ev.ph, has = &ev.has_ph;
                    else if (!memcmp(key.s, "ts", 2)) slot = &ev.ts, has = &ev.has_ts;
                    else if (!memcmp(key.s, "id", 2)) slot = NULL;
                    break;
                case 3:
                    if (!memcmp(key.s, "cat", 3)) slot = &ev.cat, has = &ev.has_cat;
                    else if (!memcmp(key.s, "pid", 3)) slot = &ev.pid, has = &ev.has_pid;
                    else if (!memcmp(key.s, "tid", 3)) slot = &ev.tid, has = &ev.has_tid;
                    else if (!memcmp(key.s, "dur", 3)) slot = &ev.dur, has = &ev.has_dur;
                    break;
                case 4:
                    if (!memcmp(key.s, "name", 4)) slot = &ev.name, has = &ev.has_name;
                    else if (!memcmp(key.s, "args", 4)) slot = &ev.args, has = &ev.has_args;
                    break;
                }
                if (slot) {
                    if (*has) unusual = 1;
                    *slot = val;
                    *has = 1;
                }
            }
            int more = next_item(&p, e, '}');
            if (more == ITEM_ERROR) return -2;
            if (!more) break;
        }
    }
    *end = p;

    /* value types as the Python path expects them; strings used as text must be unescaped */
    int esc = 0;
    if (ev.has_ph) {
        if (*ev.ph.s != '"' || (scan_string(ev.ph.s, ev.ph.e, &esc), esc)) unusual = 1;
        else ev.ph.s++, ev.ph.e--;
    }
    if (ev.has_cat) {
        if (is_null(ev.cat)) {
            ev.cat_null = 1;
        } else if (*ev.cat.s != '"' || (esc = 0, scan_string(ev.cat.s, ev.cat.e, &esc), esc)) {
            unusual = 1;
        } else {
            ev.cat.s++, ev.cat.e--;
        }
    }
    if (ev.has_name) {
        esc = 0;
        if (*ev.name.s != '"' || (scan_string(ev.name.s, ev.name.e, &esc), esc)) unusual = 1;
        else ev.name.s++, ev.name.e--;
    }
    if (ev.has_args && *ev.args.s != '{') unusual = 1;
    Span sp = {start, p};
    int special = 1;
    if (!unusual && ev.has_ph && ev.ph.e - ev.ph.s == 1) {
        char ph = *ev.ph.s;
        int has_cat = ev.has_cat && !ev.cat_null;
        if (ph == 'X' && has_cat && ev.has_ts) {
            const Cat *c = find_cat(pol, ev.cat);
            if (c) special = row(o, pol, &ev, c->kind, c->flags, index);
        } else if ((ph == 'i' || ph == 'I') && has_cat && ev.has_ts) {
            int flags = span_is(ev.cat, pol->instant_cat.s, (size_t)pol->instant_cat.len) ? F_CANON : 0;
            special = row(o, pol, &ev, pol->instant_kind, flags, index);
        } else if ((ph == 's' || ph == 'f' || ph == 't') && has_cat) {
            for (Py_ssize_t i = 0; i < pol->nflow_cats; i++) {
                if (span_is(ev.cat, pol->flow_cats[i].s, (size_t)pol->flow_cats[i].len)) {
                    o->flows[i * 3 + (ph == 's' ? 0 : ph == 'f' ? 1 : 2)]++;
                    special = 0;
                    break;
                }
            }
        } else if (ph == 'M') {
            int first = meta_first(o, base, sp.s, (size_t)(sp.e - sp.s));
            if (first < 0) return NOMEM;
            special = first;
        }
    }
    if (special == NOMEM) return NOMEM;
    if (special) {
        if (put_i64(&o->special, index) || put_i64(&o->special, sp.s - base) || put_i64(&o->special, sp.e - base))
            return NOMEM;
    }
    return 0;
}

/* ---- Python entry point ------------------------------------------------------------------ */

static PyObject *bytes_of(Buf *b) { return PyBytes_FromStringAndSize(b->p ? b->p : "", (Py_ssize_t)b->n); }

static int read_names(PyObject *list, Name *names, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        char *s;
        if (!PyArg_Parse(PyList_GetItem(list, i), "y#", &s, &names[i].len)) return -1;
        names[i].s = s;
    }
    return 0;
}

static int read_policy(PyObject *cats, PyObject *dirs, PyObject *keys, PyObject *flow_cats, Policy *pol) {
    if (PyList_Size(keys) != NKEYS) {
        PyErr_SetString(PyExc_TypeError, "keys: wrong number of args keys");
        return -1;
    }
    pol->nflow_cats = PyList_Size(flow_cats);
    if (pol->nflow_cats < 0 || pol->nflow_cats > MAX_FLOW_CATS) {
        PyErr_SetString(PyExc_TypeError, "flow_cats: too many flow categories");
        return -1;
    }
    if (read_names(keys, pol->keys, NKEYS) || read_names(flow_cats, pol->flow_cats, pol->nflow_cats)) return -1;
    pol->ncats = PyList_Size(cats);
    pol->ndirs = PyList_Size(dirs);
    if (pol->ncats < 0 || pol->ndirs < 0) return -1;
    pol->cats = calloc((size_t)pol->ncats + 1, sizeof(Cat));
    pol->dirs = calloc((size_t)pol->ndirs + 1, sizeof(Dir));
    if (!pol->cats || !pol->dirs) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < pol->ncats; i++) {
        PyObject *item = PyList_GetItem(cats, i);
        char *s;
        if (!PyArg_ParseTuple(item, "y#ii", &s, &pol->cats[i].len, &pol->cats[i].kind, &pol->cats[i].flags))
            return -1;
        pol->cats[i].cat = s;
    }
    for (Py_ssize_t i = 0; i < pol->ndirs; i++) {
        PyObject *item = PyList_GetItem(dirs, i);
        char *a, *b;
        if (!PyArg_ParseTuple(item, "y#y#", &a, &pol->dirs[i].from_len, &b, &pol->dirs[i].to_len)) return -1;
        pol->dirs[i].from = a, pol->dirs[i].to = b;
    }
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *a) {
    (void)self;
    Py_buffer view;
    PyObject *cats, *dirs, *keys, *flow_cats;
    Policy pol;
    memset(&pol, 0, sizeof pol);
    char *instant_cat;
    if (!PyArg_ParseTuple(a, "y*O!O!O!O!iy#i", &view, &PyList_Type, &cats, &PyList_Type, &dirs, &PyList_Type, &keys,
                          &PyList_Type, &flow_cats, &pol.instant_kind, &instant_cat, &pol.instant_cat.len,
                          &pol.memcpy_kind))
        return NULL;
    pol.instant_cat.s = instant_cat;
    PyObject *result = NULL;
    Out o;
    memset(&o, 0, sizeof o);
    if (read_policy(cats, dirs, keys, flow_cats, &pol) < 0) goto done;
    if (str_init(&o.ts) || str_init(&o.dur) || str_init(&o.name) || str_init(&o.mkind) || str_init(&o.args)) {
        PyErr_NoMemory();
        goto done;
    }
    const char *base = view.buf, *e = base + view.len, *p;
    int status = 0;
    int64_t index = 0;
    Py_BEGIN_ALLOW_THREADS
    p = ws(base, e);
    if (p >= e || *p != '[') {
        status = -2;
    } else {
        p = ws(p + 1, e);
        if (p < e && *p == ']') {
            p++;
        } else {
            for (;;) {
                const char *end = NULL;
                status = event(&o, &pol, base, p, e, &end, index++);
                if (status) break;
                p = end;
                int more = next_item(&p, e, ']');
                if (more == ITEM_ERROR) status = -2;
                if (more != ITEM_MORE) break;
            }
        }
        if (!status && ws(p, e) != e) status = -2;
    }
    Py_END_ALLOW_THREADS
    if (status == NOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    if (status) {
        PyErr_SetString(PyExc_ValueError, "not a JSON array of event objects");
        goto done;
    }
    PyObject *flows = PyList_New(pol.nflow_cats * 3);
    if (!flows) goto done;
    for (Py_ssize_t i = 0; i < pol.nflow_cats * 3; i++) {
        PyObject *c = PyLong_FromLongLong((long long)o.flows[i]);
        if (!c) {
            Py_DECREF(flows);
            goto done;
        }
        PyList_SET_ITEM(flows, i, c);
    }
    result = Py_BuildValue(
        "{s:n,s:n,s:(NNN),s:(NNN),s:N,s:N,s:N,s:(NN),s:(NN),s:N,s:(NN),s:(NN),s:(NN),s:(NNN),s:(NNN),s:(NNN),s:N,s:N,s:N}",
        "rows", (Py_ssize_t)o.rows, "events", (Py_ssize_t)index,
        "ts", bytes_of(&o.ts.valid), bytes_of(&o.ts.off), bytes_of(&o.ts.data),
        "dur", bytes_of(&o.dur.valid), bytes_of(&o.dur.off), bytes_of(&o.dur.data),
        "kind", bytes_of(&o.kind), "pid", bytes_of(&o.pid),
        "tid", bytes_of(&o.tid), "device", bytes_of(&o.device_valid), bytes_of(&o.device),
        "stream", bytes_of(&o.stream_valid), bytes_of(&o.stream),
        "ord", bytes_of(&o.ord),
        "correlation", bytes_of(&o.corr.valid), bytes_of(&o.corr.v),
        "external_id", bytes_of(&o.ext.valid), bytes_of(&o.ext.v),
        "bytes", bytes_of(&o.nbytes.valid), bytes_of(&o.nbytes.v),
        "name", bytes_of(&o.name.valid), bytes_of(&o.name.off), bytes_of(&o.name.data),
        "memcpy_kind", bytes_of(&o.mkind.valid), bytes_of(&o.mkind.off), bytes_of(&o.mkind.data),
        "args", bytes_of(&o.args.valid), bytes_of(&o.args.off), bytes_of(&o.args.data),
        "special", bytes_of(&o.special), "sizes", bytes_of(&o.sizes), "flows", flows);
done:
    out_free(&o);
    free(pol.cats);
    free(pol.dirs);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(text, cats, directions, keys, flow_cats, instant_kind, instant_cat, memcpy_kind)\n"
     "  -> dict of column buffers.\n\n"
     "Raises ValueError when text is not a JSON array of objects."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "Native scan of Kineto trace events.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scan(void) { return PyModule_Create(&module); }
