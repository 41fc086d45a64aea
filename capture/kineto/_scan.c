/* Native tokenizer of a Kineto ``traceEvents`` array: rule-free, it only splits events.
 *
 * The common events (complete "X" events of a category the policy lists, instants with a
 * category, flow events of the policy's flow categories with a number for ``ts``) are split
 * here, in one pass over the JSON text with the GIL released (a large text in parts scanned at
 * once, joined in order: "the array in parts" below), into their top-level fields and
 * their ``args`` object:
 * - ``ts``/``dur`` (checked to be JSON numbers) as text, ``name``/``cat`` as text, ``pid``/
 *   ``tid`` as int64, the category's kind code (a lookup in the policy's table), the event index;
 * - the args as ``body``: an opening brace, then every entry written compact and followed by a
 *   comma (``{"a":1,"b":[1,2],``);
 * - for each args key of the policy (the keys convert.py's rules read; mapping.RULE_KEYS), for
 *   the rows that have it: the row, the raw JSON text of its value and the byte span of its
 *   entry in body.
 * No value here is converted, compared or cut: convert._args_rules applies every args rule, once,
 * to these columns, and the pure-Python path produces the same columns from msgspec.
 * Everything else, and every event the tokenizer cannot split faithfully (escaped names or keys,
 * a policy key twice, named pid/tid, a number that is not one, ...), is returned as a "special"
 * (event index, start, end) for the Python path, which builds the same columns for it.
 *
 * No Kineto name is spelled here: categories, args keys and flow categories come from
 * mapping.py through native.py (the ``Policy``).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#define PROFUI_THREADS 1
#endif

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

/* True when the string at [p, q) (quotes included) holds only the escapes msgspec writes back
 * as they are (\" \\ \b \f \n \r \t): a \u or \/ escape is spelled otherwise on the Python path. */
static int string_as_written(const char *p, const char *q) {
    for (const char *b = p; (b = memchr(b, '\\', (size_t)(q - b))) != NULL; b += 2)
        if (b + 1 >= q || !memchr("\"\\bfnrt", b[1], 7)) return 0;
    return 1;
}

/* How many bytes of the number at [p, q) to copy so that it reads as msgspec writes the value
 * it decodes, or 0 when that spelling is not a prefix of it (the event is then a special).
 * Integers (no leading zero, not -0) are written as they are; a plain decimal in fixed notation
 * loses its trailing zeros but the one of "x.0" (Kineto writes "5.300000"), and must then be the
 * shortest decimal that reads back as the same double, as msgspec writes floats: any decimal of
 * at most 15 significant digits is; one of 16 or 17 is checked with strtod/snprintf (both
 * correctly rounded in glibc). Exponents, 16+ integer digits and values below 1e-4 are left to
 * the Python path, whose notation for them differs. */
static size_t number_as_written(const char *p, const char *q) {
    int neg = p < q && *p == '-';
    const char *ip = p + neg, *t = ip;
    while (t < q && *t >= '0' && *t <= '9') t++;
    size_t int_len = (size_t)(t - ip);
    if (!int_len || (int_len > 1 && *ip == '0')) return 0;
    if (t == q) return neg && int_len == 1 && *ip == '0' ? 0 : (size_t)(q - p);
    if (*t != '.' || int_len > 15) return 0;
    const char *frac = t + 1, *f = frac;
    while (f < q && *f >= '0' && *f <= '9') f++;
    if (f != q || f == frac) return 0;
    while (f > frac + 1 && f[-1] == '0') f--; /* trailing zeros go, "x.0" stays */
    size_t frac_len = (size_t)(f - frac), sig = int_len + frac_len;
    if (frac_len == 1 && *frac == '0') return (size_t)(f - p);
    if (*ip == '0') {
        size_t lead = 0;
        while (lead < frac_len && frac[lead] == '0') lead++;
        if (lead > 3) return 0;
        sig = frac_len - lead;
    }
    if (sig <= 15) return (size_t)(f - p);
    if (sig > 17) return 0;
    char text[48], digits[20], shorter[48];
    size_t n = (size_t)(f - p), k = 0;
    memcpy(text, p, n);
    text[n] = 0;
    double x = strtod(text, NULL);
    for (const char *c = text; *c; c++)
        if (*c >= '0' && *c <= '9' && (k || *c != '0')) digits[k++] = *c;
    /* the closest decimal of sig digits must be this one, and none of sig - 1 digits reads back */
    snprintf(shorter, sizeof shorter, "%.*e", (int)sig - 1, x);
    for (size_t i = 0, j = 0; shorter[i] && shorter[i] != 'e'; i++)
        if (shorter[i] >= '0' && shorter[i] <= '9' && (j < k ? shorter[i] != digits[j++] : 1)) return 0;
    snprintf(shorter, sizeof shorter, "%.*e", (int)sig - 2, x);
    return strtod(shorter, NULL) == x ? 0 : n;
}

#define MAX_KEYS_SEEN 32

/* Skip one JSON value at p, copying it compact into out when out is not NULL. When copying, a
 * value the Python path would spell differently (see string_as_written, number_as_written, or
 * an object with a key twice, of which msgspec keeps the last) gives NULL: the event is then a
 * special, so both paths write the same args text. */
static const char *value(const char *p, const char *e, Buf *out, int depth) {
    if (p >= e) return NULL;
    char c = *p;
    if (c == '"') {
        int esc = 0;
        const char *q = scan_string(p, e, &esc);
        if (!q || (out && esc && !string_as_written(p, q)) || (out && put(out, p, (size_t)(q - p)))) return NULL;
        return q;
    }
    if (c == '{' || c == '[') {
        Span seen[MAX_KEYS_SEEN];
        int nseen = 0;
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
                if (!q) return NULL;
                if (out) {
                    if (esc || nseen == MAX_KEYS_SEEN) return NULL;
                    for (int i = 0; i < nseen; i++)
                        if (seen[i].e - seen[i].s == q - p && !memcmp(seen[i].s, p, (size_t)(q - p))) return NULL;
                    seen[nseen].s = p, seen[nseen].e = q, nseen++;
                    if (put(out, p, (size_t)(q - p))) return NULL;
                }
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
        if (out) {
            size_t n = number_as_written(p, q);
            if (!n || put(out, p, n)) return NULL;
        }
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


/* ---- policy ------------------------------------------------------------------------------ */

#define MAX_FLOW_CATS 8
#define MAX_KEYS 16

typedef struct {
    const char *cat;
    Py_ssize_t len;
    int kind;
} Cat;

typedef struct {
    const char *s;
    Py_ssize_t len;
} Name;

typedef struct {
    Cat *cats;
    Py_ssize_t ncats;
    Name keys[MAX_KEYS];
    Py_ssize_t nkeys;
    uint64_t key_lens; /* bit n: some key is n bytes long */
    Name flow_cats[MAX_FLOW_CATS];
    Py_ssize_t nflow_cats;
    int instant_kind;
} Policy;

static const Cat *find_cat(const Policy *pol, Span s) {
    Py_ssize_t n = s.e - s.s;
    for (Py_ssize_t i = 0; i < pol->ncats; i++)
        if (pol->cats[i].len == n && !memcmp(pol->cats[i].cat, s.s, (size_t)n)) return &pol->cats[i];
    return NULL;
}

/* ---- output ------------------------------------------------------------------------------ */

/* One policy key, for the rows that have it (sparse: most rows have few of the keys). */
typedef struct {
    Buf row;        /* int64: the row */
    Buf start, end; /* int32: the byte span of the entry ("key":value,) in the row's body */
    StrCol value;   /* the raw JSON text of the value (offsets and data; no validity) */
} KeyCol;

typedef struct {
    size_t rows;
    Buf kind, pid, tid, ord;
    StrCol ts, dur, name, cat, body;
    KeyCol keys[MAX_KEYS];
    Buf special;    /* int64 triples: event index, start, end (offsets in the text) */
    Buf meta;       /* uint8 per special: 1 for a metadata event seen for the first time */
    int64_t flows[MAX_FLOW_CATS * 3]; /* per flow category: s f t */
    /* metadata dedupe: open addressing over (hash, start, len) */
    uint64_t *mh;
    int64_t *ms, *ml;
    size_t mcap, mcount;
} Out;

static void str_free(StrCol *c) {
    free(c->off.p);
    free(c->data.p);
    free(c->valid.p);
}

static void out_free(Out *o) {
    Buf *bufs[] = {&o->kind, &o->pid, &o->tid, &o->ord, &o->special, &o->meta};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) free(bufs[i]->p);
    StrCol *strs[] = {&o->ts, &o->dur, &o->name, &o->cat, &o->body};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) str_free(strs[i]);
    for (int k = 0; k < MAX_KEYS; k++) {
        str_free(&o->keys[k].value);
        free(o->keys[k].row.p);
        free(o->keys[k].start.p);
        free(o->keys[k].end.p);
    }
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
} Arg;

typedef struct {
    Span ph, cat, name, pid, tid, ts, dur, args;
    int has_ph, has_cat, has_name, has_pid, has_tid, has_ts, has_dur, has_args;
    int cat_null;
} Ev;

enum { ROW_DONE = 0, SPECIAL = 1, NOMEM = -1 };

/* Parse the args object's top-level entries; 0 when unusual (escaped keys, a key twice, too many). */
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
        for (Arg *o = args; o < g; o++) /* a key twice: msgspec keeps the last */
            if (o->key.e - o->key.s == g->key.e - g->key.s && !memcmp(o->key.s, g->key.s, (size_t)(q - p - 2)))
                return 0;
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

/* Which policy key an args key is (-1: none). */
static int key_index(const Policy *pol, Span key) {
    size_t n = (size_t)(key.e - key.s);
    if (n < 64 && !(pol->key_lens >> n & 1)) return -1;
    for (Py_ssize_t k = 0; k < pol->nkeys; k++)
        if (span_is(key, pol->keys[k].s, (size_t)pol->keys[k].len)) return (int)k;
    return -1;
}

static int row(Out *o, const Policy *pol, const Ev *ev, int kind, int64_t index, Buf *body) {
    Arg args[MAX_ARGS];
    int nargs = 0;
    if (ev->has_args && !parse_args(ev->args, args, &nargs)) return SPECIAL;
    int64_t pid = 0, tid = 0;
    if (!span_is_number(ev->ts)) return SPECIAL;
    if (ev->has_dur && !span_is_number(ev->dur)) return SPECIAL;
    if (ev->has_pid && !span_int(ev->pid, &pid)) return SPECIAL;
    if (ev->has_tid && !span_int(ev->tid, &tid)) return SPECIAL;

    /* the body: every entry compact, followed by a comma; the spans of the policy's keys */
    size_t vs[MAX_KEYS], ve[MAX_KEYS];
    int32_t start[MAX_KEYS], end[MAX_KEYS];
    for (Py_ssize_t k = 0; k < pol->nkeys; k++) start[k] = end[k] = -1;
    body->n = 0;
    if (put(body, "{", 1)) return NOMEM;
    for (int i = 0; i < nargs; i++) {
        int k = key_index(pol, args[i].key);
        if (k >= 0) {
            if (start[k] >= 0) return SPECIAL; /* twice: the Python path keeps the last value */
            char c = *args[i].val.s;
            if ((c == '-' || (c >= '0' && c <= '9')) && !span_is_number(args[i].val)) return SPECIAL;
            start[k] = (int32_t)body->n;
        }
        if (put(body, args[i].key.s - 1, (size_t)(args[i].key.e - args[i].key.s) + 2) || put(body, ":", 1))
            return NOMEM;
        size_t at = body->n;
        if (!value(args[i].val.s, args[i].val.e, body, 0)) return SPECIAL;
        if (k >= 0) vs[k] = at, ve[k] = body->n;
        if (put(body, ",", 1)) return NOMEM;
        if (body->n > INT32_MAX) return SPECIAL;
        if (k >= 0) end[k] = (int32_t)body->n;
    }

    size_t r = o->rows;
    const char *name = ev->has_name ? ev->name.s : "";
    size_t name_len = ev->has_name ? (size_t)(ev->name.e - ev->name.s) : 0;
    if (str_put(&o->ts, r, ev->ts.s, (size_t)(ev->ts.e - ev->ts.s), 1) ||
        str_put(&o->dur, r, ev->dur.s, ev->has_dur ? (size_t)(ev->dur.e - ev->dur.s) : 0, ev->has_dur) ||
        put_u8(&o->kind, (uint8_t)kind) || put_i64(&o->pid, pid) || put_i64(&o->tid, tid) ||
        put_i64(&o->ord, index) || str_put(&o->name, r, name, name_len, 1) ||
        str_put(&o->cat, r, ev->cat.s, (size_t)(ev->cat.e - ev->cat.s), 1) ||
        str_put(&o->body, r, body->p ? body->p : "", body->n, 1))
        return NOMEM;
    for (Py_ssize_t k = 0; k < pol->nkeys; k++) {
        if (start[k] < 0) continue;
        KeyCol *c = &o->keys[k];
        if (put_i64(&c->row, (int64_t)r) || put_i32(&c->start, start[k]) || put_i32(&c->end, end[k]) ||
            put(&c->value.data, body->p + vs[k], ve[k] - vs[k]) || put_i64(&c->value.off, (int64_t)c->value.data.n))
            return NOMEM;
    }
    o->rows++;
    return ROW_DONE;
}

/* Parse the event object at p (its end in *end); dispatch it. */
static int event(Out *o, const Policy *pol, const char *base, const char *p, const char *e, const char **end,
                 int64_t index, Buf *body) {
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
    int special = 1, meta = 0;
    if (!unusual && ev.has_ph && ev.ph.e - ev.ph.s == 1) {
        char ph = *ev.ph.s;
        int has_cat = ev.has_cat && !ev.cat_null;
        if (ph == 'X' && has_cat && ev.has_ts) {
            const Cat *c = find_cat(pol, ev.cat);
            if (c) special = row(o, pol, &ev, c->kind, index, body);
        } else if ((ph == 'i' || ph == 'I') && has_cat && ev.has_ts) {
            special = row(o, pol, &ev, pol->instant_kind, index, body);
        } else if ((ph == 's' || ph == 'f' || ph == 't') && has_cat && ev.has_ts && span_is_number(ev.ts)) {
            /* (a flow whose ts is not a number is a special: the Python path counts it dropped) */
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
            special = meta = first;
        }
    }
    if (special == NOMEM) return NOMEM;
    if (special) {
        if (put_i64(&o->special, index) || put_i64(&o->special, sp.s - base) || put_i64(&o->special, sp.e - base) ||
            put_u8(&o->meta, (uint8_t)meta))
            return NOMEM;
    }
    return 0;
}

/* ---- Python entry point ------------------------------------------------------------------ */

/* A column buffer handed to Python as it is: writable through the buffer protocol (Arrow and
 * numpy wrap it without a copy; len() is its size in bytes; the args text is cut in place,
 * the only reader being its column), freed with its last reference.
 * Copied into bytes instead, every byte of the columns was written twice and every page of
 * them faulted in twice (3M events: ~800 MB, a third of the scan's CPU time). */
typedef struct {
    PyObject_HEAD
    char *p;
    Py_ssize_t n;
} Owned;

static char no_bytes[1];

static void owned_dealloc(PyObject *self) {
    free(((Owned *)self)->p);
    Py_TYPE(self)->tp_free(self);
}

static int owned_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Owned *o = (Owned *)self;
    return PyBuffer_FillInfo(view, self, o->p ? o->p : no_bytes, o->n, 0, flags);
}

static Py_ssize_t owned_length(PyObject *self) { return ((Owned *)self)->n; }

static PyBufferProcs owned_as_buffer = {owned_getbuffer, NULL};
static PySequenceMethods owned_as_sequence = {.sq_length = owned_length};

static PyTypeObject OwnedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "profui.capture.kineto._scan.Owned",
    .tp_basicsize = sizeof(Owned),
    .tp_dealloc = owned_dealloc,
    .tp_as_sequence = &owned_as_sequence,
    .tp_as_buffer = &owned_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A buffer of the scan's output (read-only bytes, freed with the object).",
};

/* The buffer, handed over (trimmed to its size); b is left empty. NULL when out of memory
 * (the buffer is freed). */
static PyObject *bytes_of(Buf *b) {
    char *p = b->p;
    Py_ssize_t n = (Py_ssize_t)b->n;
    b->p = NULL;
    b->n = b->cap = 0;
    if (p && n) {
        char *q = realloc(p, (size_t)n);
        if (q) p = q;
    } else {
        free(p);
        p = NULL;
    }
    Owned *o = PyObject_New(Owned, &OwnedType);
    if (!o) {
        free(p);
        return NULL;
    }
    o->p = p;
    o->n = n;
    return (PyObject *)o;
}

static PyObject *str_of(StrCol *c) { return Py_BuildValue("(NNN)", bytes_of(&c->valid), bytes_of(&c->off), bytes_of(&c->data)); }

static int read_names(PyObject *list, Name *names, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        char *s;
        if (!PyArg_Parse(PyList_GetItem(list, i), "y#", &s, &names[i].len)) return -1;
        names[i].s = s;
    }
    return 0;
}

static int read_policy(PyObject *cats, PyObject *keys, PyObject *flow_cats, Policy *pol) {
    pol->nkeys = PyList_Size(keys);
    if (pol->nkeys < 0 || pol->nkeys > MAX_KEYS) {
        PyErr_SetString(PyExc_TypeError, "keys: too many args keys");
        return -1;
    }
    pol->nflow_cats = PyList_Size(flow_cats);
    if (pol->nflow_cats < 0 || pol->nflow_cats > MAX_FLOW_CATS) {
        PyErr_SetString(PyExc_TypeError, "flow_cats: too many flow categories");
        return -1;
    }
    if (read_names(keys, pol->keys, pol->nkeys) || read_names(flow_cats, pol->flow_cats, pol->nflow_cats)) return -1;
    for (Py_ssize_t k = 0; k < pol->nkeys; k++)
        if (pol->keys[k].len < 64) pol->key_lens |= (uint64_t)1 << pol->keys[k].len;
    pol->ncats = PyList_Size(cats);
    if (pol->ncats < 0) return -1;
    pol->cats = calloc((size_t)pol->ncats + 1, sizeof(Cat));
    if (!pol->cats) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < pol->ncats; i++) {
        PyObject *item = PyList_GetItem(cats, i);
        char *s;
        if (!PyArg_ParseTuple(item, "y#i", &s, &pol->cats[i].len, &pol->cats[i].kind)) return -1;
        pol->cats[i].cat = s;
    }
    return 0;
}

/* ---- a mapped file's pages behind the scan ----------------------------------------------- */

/* The text of a file mapped read-only (reader.read_bytes) need not stay resident once scanned:
 * its pages are dropped every DROP_STEP bytes and read back from the page cache if needed
 * again (the specials are copied out after the scan). Never called on memory of our own. */
#define DROP_STEP ((ptrdiff_t)32 << 20)

static const char *drop_pages(const char *from, const char *to) {
#ifdef MADV_DONTNEED
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)from + page - 1) & ~(page - 1), hi = (uintptr_t)to & ~(page - 1);
    if (hi <= lo) return from;
    (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
    return (const char *)hi;
#else
    (void)to;
    return from;
#endif
}

/* ---- the array in parts, scanned at once ---------------------------------------------------- */

/* A text of many events is cut into parts scanned by threads of their own. Part k > 0 starts at
 * a guessed event boundary: the first '{' after "}", a comma and white space, found from an even
 * cut of the text. The guess is only trusted once the part before it, scanned from a known item
 * start, reaches exactly that position as the start of its next event: every event after it then
 * parses as the sequential scan parses it, and the part's columns are appended (its rows, event
 * indexes and value offsets shifted; its first-seen metadata checked against the parts before).
 * Where it does not (the "}, {" lay in a string or a nested array), the part's columns are
 * dropped and the scan goes on from where the part before it stopped, in the calling thread:
 * the result never depends on the guesses, only the time does. */
#define MAX_PARTS 16
#define GUESS_WINDOW ((ptrdiff_t)1 << 20)
#define PART_STACK ((size_t)4 << 20)

typedef struct {
    const Policy *pol;
    const char *base, *e;
    const char *from, *limit; /* items starting at from, up to the first one at or past limit */
    int first, mapped;        /* first: from is the text's start (the array's '[' is read) */
    Out o;
    Buf body;
    int64_t index;            /* events scanned */
    int joined;               /* parts whose columns these are (their starts held) */
    const char *stop;         /* where the scan stopped: the next item's start, or past ']' */
    int closed, status;
} Part;

/* Scan items of pt's array from p until one starts at or past limit (NULL: no limit). */
static void run_part(Part *pt, const char *p, const char *limit) {
    const char *dropped = p;
    pt->status = 0;
    for (;;) {
        if (limit && p >= limit) break;
        const char *end = NULL;
        pt->status = event(&pt->o, pt->pol, pt->base, p, pt->e, &end, pt->index++, &pt->body);
        if (pt->status) break;
        p = end;
        if (pt->mapped && p - dropped >= DROP_STEP) dropped = drop_pages(dropped, p);
        int more = next_item(&p, pt->e, ']');
        if (more == ITEM_ERROR) pt->status = -2;
        if (more != ITEM_MORE) {
            pt->closed = more == ITEM_LAST;
            break;
        }
    }
    pt->stop = p;
}

static void *part_main(void *arg) {
    Part *pt = arg;
    const char *p = pt->from;
    if (pt->first) {
        p = ws(p, pt->e);
        if (p >= pt->e || *p != '[') {
            pt->status = -2;
            pt->stop = p;
            return NULL;
        }
        p = ws(p + 1, pt->e);
        if (p < pt->e && *p == ']') {
            pt->closed = 1;
            pt->stop = p + 1;
            return NULL;
        }
    }
    run_part(pt, p, pt->limit);
    return NULL;
}

/* The start of an event after `at`, by the look of the text: the '{' of "}" ws "," ws "{";
 * NULL when none lies within GUESS_WINDOW. */
static const char *guess_item(const char *at, const char *e) {
    const char *end = e - at > GUESS_WINDOW ? at + GUESS_WINDOW : e;
    for (const char *p = at; p < end; p++) {
        p = memchr(p, '}', (size_t)(end - p));
        if (!p) return NULL;
        const char *q = ws(p + 1, end);
        if (q < end && *q == ',') {
            q = ws(q + 1, end);
            if (q < end && *q == '{') return q;
        }
    }
    return NULL;
}

/* Append src's columns to dst's: src's rows follow dst's, its events are numbered on from
 * `events` (the events dst scanned). src is emptied. 0, or NOMEM. */
/* n int64 values of src, each plus shift, after dst's. */
static int put_shifted(Buf *dst, const int64_t *src, size_t n, int64_t shift) {
    if (!n) return 0;
    if (grow(dst, n * 8)) return -1;
    int64_t *d = (int64_t *)(dst->p + dst->n);
    for (size_t i = 0; i < n; i++) d[i] = src[i] + shift;
    dst->n += n * 8;
    return 0;
}

/* The validity bits of src's n rows after dst's first r0 (dst has no bit set past r0). */
static int put_bits(Buf *dst, size_t r0, const Buf *src, size_t n) {
    if (!n) return 0;
    if (put_bit(dst, r0 + n - 1, 0)) return -1; /* sized and zeroed to the last row */
    const unsigned char *s = (const unsigned char *)src->p;
    unsigned char *d = (unsigned char *)dst->p + r0 / 8;
    size_t bytes = (n + 7) / 8, room = dst->n - r0 / 8;
    unsigned shift = (unsigned)(r0 % 8);
    for (size_t j = 0; j < bytes; j++) { /* src's bits past n are 0 (put_bit sets, never clears) */
        d[j] |= (unsigned char)(s[j] << shift);
        if (shift && j + 1 < room) d[j + 1] |= (unsigned char)(s[j] >> (8 - shift));
    }
    return 0;
}

/* One text column of src's n rows after dst's r0; src's is freed. */
static int append_str(StrCol *d, StrCol *s, size_t r0, size_t n) {
    int bad = put_shifted(&d->off, (const int64_t *)s->off.p + 1, n, (int64_t)d->data.n) ||
              put(&d->data, s->data.p, s->data.n) || put_bits(&d->valid, r0, &s->valid, n);
    str_free(s), memset(s, 0, sizeof(StrCol));
    return bad ? NOMEM : 0;
}

static int append_rest(Out *dst, Out *src, int64_t events, const char *base, const Policy *pol, size_t r0, size_t n);

typedef struct {
    StrCol *d, *s;
    size_t r0, n;
    int status;
} StrJob;

static void *append_str_job(void *arg) {
    StrJob *j = arg;
    j->status = append_str(j->d, j->s, j->r0, j->n);
    return NULL;
}

static int append_out(Out *dst, Out *src, int64_t events, const char *base, const Policy *pol) {
    size_t r0 = dst->rows, n = src->rows;
    /* the args text, the largest column, is copied on a thread of its own beside the others:
     * the copy's time is mostly the fresh pages it writes */
    StrJob body = {&dst->body, &src->body, r0, n, 0};
    int body_apart = 0;
#ifdef PROFUI_THREADS
    pthread_t body_thread;
    body_apart = !pthread_create(&body_thread, NULL, append_str_job, &body);
#endif
    if (!body_apart) append_str_job(&body);
    int status = append_rest(dst, src, events, base, pol, r0, n);
#ifdef PROFUI_THREADS
    if (body_apart) pthread_join(body_thread, NULL);
#endif
    if (status || body.status) return NOMEM;
    dst->rows += n;
    return 0;
}

/* All of append_out but the args text. */
static int append_rest(Out *dst, Out *src, int64_t events, const char *base, const Policy *pol, size_t r0, size_t n) {
    if (put_shifted(&dst->ord, (const int64_t *)src->ord.p, n, events)) return NOMEM;
    free(src->ord.p), memset(&src->ord, 0, sizeof(Buf));
    Buf *plain[][2] = {{&dst->kind, &src->kind}, {&dst->pid, &src->pid}, {&dst->tid, &src->tid}};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        if (put(plain[i][0], plain[i][1]->p, plain[i][1]->n)) return NOMEM;
        free(plain[i][1]->p), memset(plain[i][1], 0, sizeof(Buf));
    }
    StrCol *strs[][2] = {{&dst->ts, &src->ts}, {&dst->dur, &src->dur}, {&dst->name, &src->name}, {&dst->cat, &src->cat}};
    for (size_t c = 0; c < sizeof strs / sizeof strs[0]; c++)
        if (append_str(strs[c][0], strs[c][1], r0, n)) return NOMEM;
    for (Py_ssize_t k = 0; k < pol->nkeys; k++) {
        KeyCol *d = &dst->keys[k], *s = &src->keys[k];
        size_t m = s->row.n / 8;
        if (put_shifted(&d->row, (const int64_t *)s->row.p, m, (int64_t)r0) ||
            put_shifted(&d->value.off, (const int64_t *)s->value.off.p + 1, m, (int64_t)d->value.data.n) ||
            put(&d->start, s->start.p, s->start.n) || put(&d->end, s->end.p, s->end.n) ||
            put(&d->value.data, s->value.data.p, s->value.data.n))
            return NOMEM;
        free(s->row.p), free(s->start.p), free(s->end.p), str_free(&s->value);
        memset(s, 0, sizeof(KeyCol));
    }
    int64_t *sp = (int64_t *)src->special.p;
    for (size_t i = 0; i < src->meta.n; i++) {
        int meta = src->meta.p[i];
        if (meta) {
            int first = meta_first(dst, base, base + sp[3 * i + 1], (size_t)(sp[3 * i + 2] - sp[3 * i + 1]));
            if (first < 0) return NOMEM;
            if (!first) continue; /* a metadata event a part before this one had */
        }
        if (put_i64(&dst->special, sp[3 * i] + events) || put_i64(&dst->special, sp[3 * i + 1]) ||
            put_i64(&dst->special, sp[3 * i + 2]) || put_u8(&dst->meta, (uint8_t)meta))
            return NOMEM;
    }
    for (int i = 0; i < MAX_FLOW_CATS * 3; i++) dst->flows[i] += src->flows[i];
    return 0;
}

/* Scan the text in `nparts` parts at once (threads where there are POSIX threads), then join
 * them in order into parts[0]. Its status: 0, -2 (not an array of events, or with `rest` 0,
 * followed by more than white space) or NOMEM. */
static int scan_parts(Part *parts, int nparts, int rest) {
    Part *head = &parts[0];
    int started[MAX_PARTS] = {0};
#ifdef PROFUI_THREADS
    pthread_t threads[MAX_PARTS];
    /* a stack as deep as the calling thread's may need: value() nests 500 deep (~0.3 MB), and
     * some C libraries give a new thread 128 KiB */
    pthread_attr_t attr;
    int has_attr = !pthread_attr_init(&attr);
    int sized = has_attr && !pthread_attr_setstacksize(&attr, PART_STACK);
    for (int k = 1; k < nparts; k++)
        started[k] = !pthread_create(&threads[k], sized ? &attr : NULL, part_main, &parts[k]);
    if (has_attr) pthread_attr_destroy(&attr);
#endif
    part_main(head);
    for (int k = 1; k < nparts; k++) {
        Part *pt = &parts[k];
#ifdef PROFUI_THREADS
        if (started[k]) pthread_join(threads[k], NULL);
#endif
        if (head->status) continue;          /* an error before this part: the sequential one */
        if (head->closed) continue;          /* the array ended: what follows must be white space */
        if (started[k] && head->stop == pt->from) {
            if (pt->status) {
                head->status = pt->status;   /* what the sequential scan meets there */
                continue;
            }
            int64_t events = head->index;
            if (append_out(&head->o, &pt->o, events, head->base, head->pol)) {
                head->status = NOMEM;
                continue;
            }
            head->index += pt->index;
            head->stop = pt->stop, head->closed = pt->closed;
            head->joined++;
        } else {
            out_free(&pt->o), memset(&pt->o, 0, sizeof(Out));
            run_part(head, head->stop, pt->limit); /* a wrong guess: go on here instead */
        }
    }
    if (!head->status && !head->closed) head->status = -2;
    if (!head->status && !rest && ws(head->stop, head->e) != head->e) head->status = -2;
    return head->status;
}

static PyObject *scan(PyObject *self, PyObject *a) {
    (void)self;
    Py_buffer view;
    PyObject *cats, *keys, *flow_cats;
    Policy pol;
    int mapped = 0, nparts = 1, rest = 0;
    memset(&pol, 0, sizeof pol);
    if (!PyArg_ParseTuple(a, "y*O!O!O!i|pip", &view, &PyList_Type, &cats, &PyList_Type, &keys, &PyList_Type, &flow_cats,
                          &pol.instant_kind, &mapped, &nparts, &rest))
        return NULL;
    PyObject *result = NULL;
    Part parts[MAX_PARTS];
    memset(parts, 0, sizeof parts);
    Out o;
    memset(&o, 0, sizeof o);
    if (read_policy(cats, keys, flow_cats, &pol) < 0) goto done;
    const char *base = view.buf, *e = base + view.len;
    if (nparts < 1) nparts = 1;
    if (nparts > MAX_PARTS) nparts = MAX_PARTS;
#ifndef PROFUI_THREADS
    nparts = 1;
#endif
    int status = 0, joined, n = 0;
    int64_t index;
    Py_BEGIN_ALLOW_THREADS
    /* the parts' starts: the text's, then a guessed event start past each even cut (their pages
     * may have to be read in: without the GIL, as the scan) */
    parts[n++].from = base;
    for (int k = 1; k < nparts; k++) {
        const char *g = guess_item(base + (ptrdiff_t)((double)view.len * k / nparts), e);
        if (g && g > parts[n - 1].from + 1) parts[n++].from = g;
    }
    for (int k = 0; k < n; k++) {
        Part *pt = &parts[k];
        pt->pol = &pol, pt->base = base, pt->e = e, pt->first = k == 0, pt->mapped = mapped;
        pt->limit = k + 1 < n ? parts[k + 1].from : NULL;
        if (str_init(&pt->o.ts) || str_init(&pt->o.dur) || str_init(&pt->o.name) || str_init(&pt->o.cat) ||
            str_init(&pt->o.body))
            status = NOMEM;
        for (Py_ssize_t j = 0; j < pol.nkeys; j++)
            if (str_init(&pt->o.keys[j].value)) status = NOMEM;
    }
    parts[0].joined = 1;
    if (!status) status = scan_parts(parts, n, rest);
    Py_END_ALLOW_THREADS
    o = parts[0].o;
    memset(&parts[0].o, 0, sizeof(Out));
    index = parts[0].index;
    joined = parts[0].joined;
    Py_ssize_t end = parts[0].stop ? (Py_ssize_t)(parts[0].stop - base) : 0;
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
    PyObject *keycols = PyList_New(pol.nkeys);
    if (!keycols) {
        Py_DECREF(flows);
        goto done;
    }
    for (Py_ssize_t k = 0; k < pol.nkeys; k++) {
        KeyCol *c = &o.keys[k];
        PyObject *t = Py_BuildValue("(NNNNN)", bytes_of(&c->row), bytes_of(&c->start), bytes_of(&c->end),
                                    bytes_of(&c->value.off), bytes_of(&c->value.data));
        if (!t) {
            Py_DECREF(flows);
            Py_DECREF(keycols);
            goto done;
        }
        PyList_SET_ITEM(keycols, k, t);
    }
    result = Py_BuildValue("{s:i,s:n,s:n,s:n,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N}",
                           "parts", joined, "end", end, "rows", (Py_ssize_t)o.rows, "events", (Py_ssize_t)index,
                           "ts", str_of(&o.ts), "dur", str_of(&o.dur), "kind", bytes_of(&o.kind),
                           "pid", bytes_of(&o.pid), "tid", bytes_of(&o.tid), "ord", bytes_of(&o.ord),
                           "name", str_of(&o.name), "cat", str_of(&o.cat), "body", str_of(&o.body),
                           "keys", keycols, "special", bytes_of(&o.special), "flows", flows);
done:
    out_free(&o);
    for (int k = 0; k < MAX_PARTS; k++) {
        out_free(&parts[k].o);
        free(parts[k].body.p);
    }
    free(pol.cats);
    PyBuffer_Release(&view);
    return result;
}

/* The offset of the array that is the value of the top-level key `key` of the JSON object in
 * the text (its first such key), or -1: not an object, no such key before the walk meets
 * something it cannot read (a key spelled with an escape, broken JSON), or its value is not an
 * array. The values before it are skipped, not checked: the caller's JSON decoder checks the
 * whole text and finds the array's span itself. */
static PyObject *array_of_key(PyObject *self, PyObject *a) {
    (void)self;
    Py_buffer view;
    const char *key;
    Py_ssize_t klen;
    if (!PyArg_ParseTuple(a, "y*y#", &view, &key, &klen)) return NULL;
    const char *base = view.buf, *e = base + view.len, *p = base;
    Py_ssize_t at = -1;
    Py_BEGIN_ALLOW_THREADS
    if (e - p >= 3 && !memcmp(p, "\xef\xbb\xbf", 3)) p += 3; /* a byte-order mark, as the decoder skips it */
    p = ws(p, e);
    if (p < e && *p == '{') {
        p = ws(p + 1, e);
        while (p < e && *p == '"') {
            int esc = 0;
            const char *q = scan_string(p, e, &esc);
            if (!q || esc) break;
            int match = q - p - 2 == klen && !memcmp(p + 1, key, (size_t)klen);
            p = ws(q, e);
            if (p >= e || *p != ':') break;
            p = ws(p + 1, e);
            if (match) {
                if (p < e && *p == '[') at = p - base;
                break;
            }
            p = value(p, e, NULL, 0);
            if (!p || next_item(&p, e, '}') != ITEM_MORE) break;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(at);
}

static PyMethodDef methods[] = {
    {"array_of_key", array_of_key, METH_VARARGS,
     "array_of_key(text, key) -> offset of the '[' of the top-level key's array value, or -1."},
    {"scan", scan, METH_VARARGS,
     "scan(text, cats, keys, flow_cats, instant_kind, mapped=False, parts=1, rest=False) -> dict of column buffers.\n\n"
     "mapped: text lies in a read-only file mapping whose scanned pages may be dropped.\n"
     "parts: cut the text into this many parts (at most 16) scanned at once; the result's 'parts'\n"
     "counts the parts joined, the first included (the columns are the same for any number).\n"
     "rest: the array may be followed by any text; the result's 'end' is the offset after it.\n"
     "Raises ValueError when text is not a JSON array of objects."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "Native tokenizer of Kineto trace events.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scan(void) {
    if (PyType_Ready(&OwnedType) < 0) return NULL;
    return PyModule_Create(&module);
}
