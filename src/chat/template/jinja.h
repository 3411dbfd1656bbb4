/* jinja.h - internal interfaces of the chat-template Jinja interpreter.
 *
 * Not a public header: only src/chat/ includes it (the public API is
 * chat_template.h). The interpreter has three stages, one file each:
 *   jinja_lex.c     source -> tokens (whitespace control, trim/lstrip_blocks,
 *                   raw blocks)
 *   jinja_parse.c   tokens -> AST (jnode_t), allocated in the template arena
 *   jinja_eval.c    AST + context -> text, values allocated in a render arena
 * and the Python semantics it relies on:
 *   jinja_ops.c       binary operators, comparisons, `in`
 *   jinja_filters.c   filters            jinja_tests.c    `is` tests
 *   jinja_builtins.c  str/dict methods and the globals (range, namespace,
 *                     raise_exception, strftime_now, dict)
 *   jinja_format.c    `fmt % args`       jinja_case.c     upper/lower/title
 *   jinja_wordwrap.c  the wordwrap filter (textwrap.wrap)
 *   jinja_value.c     the value model: str()/repr(), ==, ordering, json.dumps
 *   jinja_arena.c     the bump allocator
 * Undefined values carry in u.str.s (or NULL) the reason they are undefined,
 * used as the message when they are used in a way that fails.
 *
 * Invariants: the AST is immutable after parsing, so one compiled template
 * may be rendered by several threads at once; every value lives in the arena
 * of one render and dies with it (no refcounting, no individual frees).
 */
#ifndef LF_CHAT_JINJA_H
#define LF_CHAT_JINJA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ---- arena ------------------------------------------------------------ */
typedef struct jarena jarena_t;
/* budget: maximum bytes the arena may hold (0 = unlimited). */
jarena_t *jarena_new(size_t budget);
void jarena_free(jarena_t *a);
/* Zeroed memory, 16-byte aligned; NULL when the budget is exhausted. */
void *jarena_alloc(jarena_t *a, size_t n);
char *jarena_strndup(jarena_t *a, const char *s, size_t n);

/* ---- values ----------------------------------------------------------- */
typedef enum {
    JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR,
    JV_LIST,   /* list, tuple (is_tuple) or generator (is_gen) */
    JV_DICT,   /* dict with string keys, insertion-ordered */
    JV_NS,     /* namespace(): a dict whose attributes may be assigned */
    JV_MACRO,  /* a template macro */
    JV_FUNC,   /* a global function (range, namespace, raise_exception...) */
    JV_METHOD  /* a bound method: self + name (e.g. dict.items) */
} jv_kind_t;

typedef struct jv jv_t;
typedef struct jnode jnode_t;

typedef enum { JVIEW_NONE, JVIEW_ITEMS, JVIEW_KEYS, JVIEW_VALUES, JVIEW_RANGE } jview_t;

typedef struct {
    jv_t **items;
    size_t n, cap;
    jview_t view;          /* dict view or range: prints and serializes as Python's */
    int64_t range[3];      /* JVIEW_RANGE: start, stop, step */
    const char *gen_error; /* generator whose (lazy) iteration fails */
} jlist_t;

/* Keys are any hashable value (str, int, float, bool, None, tuples of
 * these). keys[i]/klens[i] is the key's canonical text: the string itself
 * for str keys; for other keys a "\xff"-tagged encoding in which keys that
 * Python considers equal (1, 1.0, True) coincide, with kobj[i] the key
 * value (NULL for str keys). */
typedef struct {
    const char **keys;
    size_t *klens;
    jv_t **kobj;
    jv_t **vals;
    size_t n, cap;
} jdict_t;

struct jv {
    jv_kind_t kind;
    bool is_tuple, is_gen;
    bool is_group; /* a tuple from |groupby: (grouper, list), also as attributes */
    bool is_safe; /* JV_STR: a markupsafe.Markup (from |safe or |escape) */
    union {
        bool b;
        int64_t i;
        double f;
        struct { const char *s; size_t n; } str; /* NUL-terminated too */
        jlist_t *list;
        jdict_t *dict;
        struct { const jnode_t *node; void *scope; } macro; /* closure: defining scope */
        int func;
        struct { jv_t *self; const char *name; } method;
    } u;
};

typedef struct {
    char *buf;
    size_t len, cap;
    size_t limit; /* max len; exceeding it is an error */
    bool overflow;
    jarena_t *arena; /* NULL: malloc'ed buffer */
} jbuf_t;

bool jbuf_put(jbuf_t *b, const char *s, size_t n);
bool jbuf_puts(jbuf_t *b, const char *s);

jv_t *jv_new(jarena_t *a, jv_kind_t k);
jv_t *jv_undef(jarena_t *a);
jv_t *jv_none(jarena_t *a);
jv_t *jv_bool(jarena_t *a, bool b);
jv_t *jv_int(jarena_t *a, int64_t i);
jv_t *jv_float(jarena_t *a, double f);
jv_t *jv_str(jarena_t *a, const char *s, size_t n); /* copies */
jv_t *jv_str_own(jarena_t *a, const char *s, size_t n); /* s in arena already */
jv_t *jv_list(jarena_t *a);
jv_t *jv_dict(jarena_t *a, jv_kind_t kind); /* JV_DICT or JV_NS */
bool jv_list_push(jarena_t *a, jv_t *list, jv_t *item);
jv_t *jv_dict_get(const jv_t *d, const char *k, size_t kn); /* NULL if absent */
bool jv_dict_set(jarena_t *a, jv_t *d, const char *k, size_t kn, jv_t *v);
/* Python's hash(): true for str, numbers, bool, None and tuples of these. */
bool jv_is_hashable(const jv_t *v);
/* Lookup / insert by a key of any hashable kind (NULL / false when absent,
 * unhashable or out of memory). */
jv_t *jv_dict_getv(const jv_t *d, const jv_t *key);
bool jv_dict_del(jv_t *d, const jv_t *key); /* false when absent */
bool jv_dict_setv(jarena_t *a, jv_t *d, jv_t *key, jv_t *v);
/* The i-th key as a value (a new str value for str keys). */
jv_t *jv_dict_key(jarena_t *a, const jv_t *d, size_t i);
/* A json-c value as an interpreter value (objects keep their key order,
 * null is None); NULL when nested deeper than 200 or out of memory. */
struct json_object;
jv_t *jv_from_json(jarena_t *a, struct json_object *j, int depth);

bool jv_truthy(const jv_t *v);
const char *jv_type_name(const jv_t *v); /* Python type name */
bool jv_is_iterable(const jv_t *v);
/* Python str() / repr() appended to b. */
bool jv_to_str(jbuf_t *b, const jv_t *v);
bool jv_repr(jbuf_t *b, const jv_t *v);
/* str() as a value (strings are returned as is). NULL on arena exhaustion. */
jv_t *jv_stringify(jarena_t *a, const jv_t *v, size_t limit);
bool jv_equal(const jv_t *x, const jv_t *y);
/* Python ordering: 0 and *res = -1/0/1, or -1 if not comparable. */
int jv_compare(const jv_t *x, const jv_t *y, int *res);
/* Python float repr. */
void jv_format_float(double f, char *out, size_t n);
/* json.dumps(v, ensure_ascii, indent (<0 none), separators, sort_keys).
 * Returns false with msg on an unserializable value. */
typedef struct {
    bool ensure_ascii, sort_keys;
    int indent;             /* < 0: no indent */
    const char *item_sep;   /* NULL: default */
    const char *key_sep;
} jjson_opts_t;
bool jv_to_json(jbuf_t *b, const jv_t *v, const jjson_opts_t *o, char *msg, size_t msgn);
/* Count of code points in a UTF-8 string. */
size_t jutf8_len(const char *s, size_t n);
/* Byte offset of code point index i (clamped to n). */
size_t jutf8_offset(const char *s, size_t n, size_t i);
bool jv_is_pyspace(const char *s, size_t n, size_t *clen); /* Unicode whitespace */

/* ---- tokens ----------------------------------------------------------- */
typedef enum {
    JT_DATA, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END,
    JT_NAME, JT_STRING, JT_INT, JT_FLOAT, JT_OP, JT_EOF
} jtok_kind_t;

typedef struct {
    jtok_kind_t kind;
    int line;
    const char *s; /* name/op/data text (arena), string value (unescaped) */
    size_t n;
    int64_t i;
    double f;
} jtok_t;

typedef struct {
    jtok_t *v;
    size_t n, cap;
} jtoks_t;

/* Tokenizes src with trim_blocks + lstrip_blocks semantics. Token texts
 * live in arena a. Returns false with a message in err. */
bool jinja_lex(jarena_t *a, const char *src, size_t n, jtoks_t *out, char *err, size_t errn);

/* ---- AST -------------------------------------------------------------- */
typedef enum {
    /* expressions */
    JN_CONST_STR, JN_CONST_INT, JN_CONST_FLOAT, JN_CONST_BOOL, JN_CONST_NONE,
    JN_NAME, JN_GETATTR, JN_GETITEM, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST,
    JN_BINOP, JN_NEG, JN_POS, JN_NOT, JN_AND, JN_OR, JN_COMPARE, JN_COND,
    JN_LIST, JN_TUPLE, JN_DICT,
    /* statements */
    JN_OUTPUT, JN_PRINT, JN_IF, JN_FOR, JN_SET, JN_SET_ATTR, JN_SET_BLOCK,
    JN_MACRO, JN_BREAK, JN_CONTINUE, JN_FILTER_BLOCK, JN_CALL_BLOCK, JN_BODY
} jnode_kind_t;

typedef enum {
    JOP_ADD, JOP_SUB, JOP_MUL, JOP_DIV, JOP_FLOORDIV, JOP_MOD, JOP_POW, JOP_CONCAT,
    JOP_EQ, JOP_NE, JOP_LT, JOP_LE, JOP_GT, JOP_GE, JOP_IN, JOP_NOTIN
} jop_t;

typedef struct {
    jnode_t **v;
    size_t n, cap;
} jnodes_t;

struct jnode {
    jnode_kind_t kind;
    int op;     /* jop_t; negation flag of a test; macro: 1 uses varargs, 2 kwargs */
    int line;
    const char *s; /* name, attribute, filter/test name, string constant */
    size_t slen;
    int64_t i;
    double f;
    jnode_t *a, *b, *c;  /* operands / condition / iterable / slice parts */
    jnodes_t list;       /* args, items, body, compare operands */
    jnodes_t list2;      /* kwarg values, dict values, else body, defaults */
    const char **names;  /* kwarg names, loop targets, macro params */
    size_t nnames;
    int *ops;            /* compare operators (list.n of them) */
};

/* Parses tokens into a body node (JN_BODY). Nodes live in arena a. */
jnode_t *jinja_parse(jarena_t *a, const jtoks_t *toks, char *err, size_t errn);

/* ---- evaluation ------------------------------------------------------- */
typedef struct jctx jctx_t;

typedef enum { JR_OK = 0, JR_ERR, JR_BREAK, JR_CONTINUE } jres_t;

typedef struct {
    size_t max_output;   /* bytes */
    size_t max_depth;    /* macro call nesting */
    uint64_t max_steps;  /* loop iterations + calls */
    size_t arena_budget; /* bytes */
    time_t now;          /* strftime_now clock; (time_t)-1 = real time */
    bool extensions;     /* llama.cpp's additions to the sandbox: list / dict
                          * mutation methods and the from_json filter */
} jrender_limits_t;

/* Renders the template body with the variables of dict `vars` (a JV_DICT in
 * arena a). On success returns true and *out and *out_len (in arena a).
 * On failure err holds the message; *is_raise tells a raise_exception. */
bool jinja_render(jarena_t *a, const jnode_t *body, jv_t *vars, const jrender_limits_t *lim,
                  char **out, size_t *out_len, char *err, size_t errn, bool *is_raise);

/* Evaluation services used by filters and builtins (jinja_eval.c). */
jarena_t *jctx_arena(jctx_t *c);
bool jctx_fail(jctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool jctx_raise(jctx_t *c, const char *msg, size_t n);
bool jctx_step(jctx_t *c);
/* Charges `units` of work (elements scanned) to the step budget; false with
 * an error once it is exhausted. Every O(n) primitive pays, so nested scans
 * of big lists end in an error instead of a hang. */
bool jctx_charge(jctx_t *c, uint64_t units);
time_t jctx_now(jctx_t *c);
bool jctx_extensions(jctx_t *c);
size_t jctx_limit(jctx_t *c);
jv_t *jctx_call(jctx_t *c, jv_t *fn, jv_t **args, size_t nargs, const char **kwn, jv_t **kwv, size_t nkw);
jv_t *jctx_getattr(jctx_t *c, jv_t *obj, const char *name, size_t n);
jv_t *jctx_getitem(jctx_t *c, jv_t *obj, jv_t *key);
/* Materializes any iterable into a list value (dict -> keys, str -> chars).
 * NULL with an error set for non-iterables. */
jv_t *jctx_iterate(jctx_t *c, jv_t *v);

/* Filters and tests (jinja_filters.c). NULL result = error set in c. */
jv_t *jinja_filter(jctx_t *c, const char *name, jv_t *v, jv_t **args, size_t nargs,
                   const char **kwn, jv_t **kwv, size_t nkw);
/* Returns 0/1, or -1 with an error set. */
int jinja_test(jctx_t *c, const char *name, jv_t *v, jv_t **args, size_t nargs);

/* Methods and global functions (jinja_builtins.c). */
enum { JF_RANGE, JF_NAMESPACE, JF_RAISE, JF_STRFTIME, JF_DICT, JF_COUNT };
extern const char *const jinja_func_names[JF_COUNT];
jv_t *jinja_call_func(jctx_t *c, int func, jv_t **args, size_t nargs, const char **kwn,
                      jv_t **kwv, size_t nkw);
/* true if `name` is a method of obj's type (str, dict, list; the mutating
 * list / dict methods only with extensions). */
bool jinja_has_method(jctx_t *c, const jv_t *obj, const char *name);
jv_t *jinja_call_method(jctx_t *c, jv_t *self, const char *name, jv_t **args, size_t nargs,
                        const char **kwn, jv_t **kwv, size_t nkw);

/* String helpers shared by methods and filters (jinja_builtins.c).
 * strip: chars NULL/None = Unicode whitespace; which 1 left, 2 right, 3 both.
 * replace: count < 0 = all. case: 0 lower, 1 upper, 2 str.title (Python),
 * 3 first letter up (capitalize after lower), 4 the |title filter (Jinja2:
 * words start after whitespace, '-', '(', '{', '[' or '<'). */
jv_t *jinja_str_strip(jctx_t *c, jv_t *s, const jv_t *chars, int which);
jv_t *jinja_str_replace(jctx_t *c, jv_t *s, jv_t *old, jv_t *new_, int64_t count);
jv_t *jinja_str_case(jctx_t *c, jv_t *s, int mode);

/* HTML-escapes a str value (Markup escaping); returns a safe string. */
jv_t *jinja_escape(jctx_t *c, jv_t *v);

/* Python `fmt % args` (jinja_format.c); args may be a tuple, a mapping or
 * a single value. NULL with an error set on a bad format. */
jv_t *jinja_percent_format(jctx_t *c, jv_t *fmt, jv_t *args);

/* Binary operators (jinja_ops.c): a jop_t applied to two values. binop
 * returns NULL and compare_op -1 with an error set. */
jv_t *jinja_binop(jctx_t *c, int op, jv_t *x, jv_t *y);
int jinja_compare_op(jctx_t *c, int op, jv_t *x, jv_t *y);

/* textwrap.wrap of one line (no line breaks inside) appended to b, the
 * wrapped pieces joined with sep (jinja_wordwrap.c). false with an error
 * set when the step budget or memory runs out. */
bool jinja_wrap_line(jctx_t *c, jbuf_t *b, const char *s, size_t n, int64_t width, bool long_words, bool hyphens,
                     const jv_t *sep);

/* Python slicing of a list or string. */
jv_t *jinja_slice(jctx_t *c, jv_t *obj, jv_t *start, jv_t *stop, jv_t *step);

#endif
