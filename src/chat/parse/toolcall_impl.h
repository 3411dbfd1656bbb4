/* toolcall_impl.h - internals of the tool-call parser. Not a public header:
 * see toolcall.h for the contract.
 *
 * Structure: toolcall.c is the core (events, ids, content and its
 * whitespace rules, the calls, the public API) and drives one family
 * back-end per parser through toolcall_family_t:
 *   toolcall_json.c     JSON objects (hermes, llama3_json, mistral, granite,
 *                       phi4_mini_json, nemotron_json, cohere_command3,
 *                       apriel, minimax, gigachat3 / 31, apertus), with
 *                       toolcall_obj.c (one call object) and
 *                       toolcall_scan.c (JSON syntax)
 *   toolcall_tagged.c   name + JSON arguments (deepseek_v3, deepseek_v31,
 *                       kimi_k2, solar_open, functionary_v31 / v32, gemma4
 *                       with toolcall_gemma.c)
 *   toolcall_xml.c      name + typed parameters (qwen3_coder, seed_oss,
 *                       glm45, minimax_m2, deepseek_v32 / v4, kimi_k3,
 *                       minimax_m3, hy_v3, minicpm5), values typed by
 *                       toolcall_params.c
 *   toolcall_pythonic.c pythonic
 *   toolcall_harmony.c  gpt-oss
 * A back-end sees the text one byte at a time (step) and at the end
 * (finish), and reports through the core services below: content bytes,
 * held text (released as content when it turns out not to be a call), call
 * start / argument fragments / end. Its own state lives in the union `u`.
 */
#ifndef LF_TOOLCALL_IMPL_H
#define LF_TOOLCALL_IMPL_H

#include "chat/parse/toolcall.h"
#include "chat/parse/toolcall_scan.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *p; /* NUL-terminated when not NULL */
    size_t len, cap;
} buf_t;

typedef struct {
    char *id;
    char *name;
    buf_t args;
    bool complete;
} call_t;

typedef struct {
    toolcall_ev_kind_t kind;
    int32_t index;
    size_t off, len;
} ev_rec_t;

/* ---- JSON-object family state (toolcall_json.c, toolcall_obj.c) ---- */

typedef enum {
    JS_CONTENT,   /* content; looks for the opening markup */
    JS_START,     /* llama3_json / granite: message start or between calls */
    JS_OPEN,      /* after the opening markup: whitespace, then '{' or '[' */
    JS_ARR,       /* in a list: after '[' or ',': '{' (or ']') */
    JS_ARR_AFTER, /* in a list: after an element: ',' or ']' */
    JS_M_NAME,    /* mistral v11: [TOOL_CALLS]name([CALL_ID]id)[ARGS]{...} */
    JS_H_AFTER,   /* hermes: after an object, before </tool_call> */
    JS_OBJ,       /* inside a call object */
    JS_DONE       /* no more calls (llama3_json / granite after the calls) */
} js_state_t;

typedef enum { ROLE_OTHER, ROLE_NAME, ROLE_ARGS } role_t;

typedef enum {
    OBJ_MORE,         /* byte consumed, object goes on */
    OBJ_DONE,         /* byte consumed, object closed */
    OBJ_FAIL,         /* byte NOT consumed: syntax error at it */
    OBJ_FAIL_CONSUMED /* byte consumed, but this is not a call */
} obj_res_t;

typedef struct {
    js_state_t st;
    bool failed_open; /* a block's opening markup turned out not to be a call:
                       * its closing markup is content too */
    size_t pt_pos;    /* JS_START: bytes of the message-start marker matched */
    /* call object parser */
    tcscan_t scan;
    buf_t key;
    bool in_key;
    role_t next_role;
    bool in_name, name_done, name_seen;
    buf_t name_raw;
    bool in_args, args_started, args_done, args_seen;
    bool in_args_str; /* arguments given as a JSON string holding the object */
    buf_t args_str;
    buf_t cur_args;
    bool committed;
    size_t args_emitted;
    bool arr_mode; /* inside [ ... ] */
    bool bare;     /* mistral v11: the object is the arguments itself */
    buf_t m_name;  /* mistral v11: the name, as a JSON string literal */
    size_t m_pos;  /* mistral v11: bytes of [ARGS] / [CALL_ID] matched */
    bool m_in_id;  /* mistral v11: inside the [CALL_ID] value */
    bool m_args;   /* mistral v11: [ARGS] seen, the object follows */
} tcjson_t;

/* ---- the other families' state --------------------------------------- */

/* Markers between the parts of a call, and the section around calls
 * (tc_section_step), for the name + arguments families. */
typedef struct {
    char mk[96];      /* bytes of the marker(s) being matched */
    size_t mk_len;
    bool in_section;  /* inside section_open ... section_close */
    int sec_calls;    /* calls made in the current section */
} tcsec_t;

/* Gemma 4's argument syntax -> JSON (toolcall_gemma.c). */
typedef struct {
    const char *delim; /* the string delimiter, <|"|> */
    int st;
    uint8_t stack[TCSCAN_MAX_DEPTH]; /* '{' / '[' per open container */
    int depth;
    char mk[8];        /* bytes of a possible delimiter */
    size_t mk_len;
    bool key;          /* the string being read is a key */
    bool opening;      /* reading a string's opening delimiter */
} tcgemma_t;

void tcgemma_init(tcgemma_t *g, const char *delim);
/* Feeds one byte of the arguments (from their '{'); writes the JSON bytes
 * it stands for to out (at most 64) and their count to *n. Returns 0 (go
 * on), 1 (the outer object is complete) or -1 (not the syntax). */
int tcgemma_byte(tcgemma_t *g, unsigned char c, char *out, size_t *n);

typedef struct {
    int st;
    buf_t name;       /* the call's header (name, kimi's id) being read */
    tcscan_t scan;    /* the arguments object */
    tcgemma_t gemma;  /* gemma4: its argument syntax, turned into JSON */
    tcsec_t sec;
    bool committed;
    bool content_msg; /* functionary_v32: in a message to the content recipient */
} tctag_t;

typedef struct {
    int st;
    buf_t name, key, value;
    buf_t vopen, vclose; /* element values: the tags that nest / end the value */
    int depth;        /* element values: nesting of the same tag */
    int vkind;        /* how the value is typed (toolcall_xml.c) */
    bool in_cdata;    /* inside <![CDATA[ ... ]]> */
    tcsec_t sec;
    int nparams;      /* parameters emitted for the open call */
    bool args_closed; /* the arguments object is complete (a JSON block) */
    bool committed;
} tcxml_t;

typedef struct {
    int st;
    int depth;        /* nesting inside a value */
    char quote;       /* inside a string literal: its quote */
    bool esc;
    buf_t name, key, value;
    int nparams;
    int list_calls;   /* calls announced in the current list */
    bool committed;
    size_t m_pos;
} tcpy_t;

typedef struct {
    int st;
    tcscan_t scan;    /* a call's arguments object */
    char mk[16];      /* bytes of a terminator being matched */
    size_t mk_len;
    bool committed;
} tcharm_t;

/* ---- the parser ------------------------------------------------------- */

typedef struct toolcall_family toolcall_family_t;

#define TC_TAG_MAX 64 /* longest marker looked for in content */

struct toolcall {
    toolcall_config_t cfg;
    const toolcall_format_desc_t *desc;
    const toolcall_family_t *fam;
    uint64_t rng_state;
    bool finished;

    buf_t content;    /* every content byte released (the result) */
    buf_t ws_pending; /* trailing whitespace of content, not decided yet */
    bool after_call;  /* no content byte since the last call: drop spaces */

    char tag[TC_TAG_MAX]; /* tc_scan_markers: possible start of a marker */
    size_t tag_len;
    buf_t raw;        /* held since the opening markup, pre-commit */

    call_t *calls;
    size_t ncalls, cap_calls;
    bool call_open;   /* the last call is still receiving arguments */

    buf_t evtext;
    ev_rec_t *evs;
    size_t nev, cap_ev;
    toolcall_event_t *out;
    size_t cap_out;

    bool nomem;

    union {
        tcjson_t js;
        tctag_t tg;
        tcxml_t xm;
        tcpy_t py;
        tcharm_t hm;
    } u;
};

struct toolcall_family {
    void (*init)(toolcall_t *tc);
    void (*step)(toolcall_t *tc, unsigned char c);
    void (*finish)(toolcall_t *tc); /* release what is held, close an open call */
    void (*release)(toolcall_t *tc); /* free the family's buffers */
};

extern const toolcall_family_t toolcall_family_json, toolcall_family_tagged, toolcall_family_xml,
    toolcall_family_pythonic, toolcall_family_harmony;

/* ---- growable byte buffers ------------------------------------------- */
/* A failed allocation sets tc->nomem and later adds do nothing (the public
 * call then reports LF_ERR_NOMEM). */

static inline void buf_add(toolcall_t *tc, buf_t *b, const char *s, size_t n)
{
    if (tc->nomem)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 64;
        while (ncap < b->len + n + 1)
            ncap *= 2;
        char *np = realloc(b->p, ncap);
        if (!np) {
            tc->nomem = true;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static inline void buf_addc(toolcall_t *tc, buf_t *b, char c)
{
    buf_add(tc, b, &c, 1);
}

static inline void buf_free(buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static inline bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Trims whitespace around s (n bytes): moves *s, returns the new length. */
static inline size_t tc_trim(const char **s, size_t n)
{
    while (n && is_ws((unsigned char)**s))
        (*s)++, n--;
    while (n && is_ws((unsigned char)(*s)[n - 1]))
        n--;
    return n;
}

/* Marker matching with a small held buffer: adds c to mk (len bytes held,
 * cap the buffer size) and checks it against cands (n of them, NULL entries
 * ignored): the index of a complete candidate (bytes cleared), -1 while
 * they are a prefix of one, -2 when of none (the bytes, c included, stay in
 * mk for the caller to re-feed or release). */
static inline int tc_mk_feed(char *mk, size_t *len, size_t cap, unsigned char c, const char *const *cands, int n)
{
    if (*len < cap)
        mk[(*len)++] = (char)c;
    bool prefix = false;
    for (int i = 0; i < n; i++) {
        if (!cands[i])
            continue;
        size_t l = strlen(cands[i]);
        if (*len == l && !memcmp(mk, cands[i], l)) {
            *len = 0;
            return i;
        }
        prefix = prefix || (*len < l && !memcmp(mk, cands[i], *len));
    }
    return prefix ? -1 : -2;
}

/* ---- core services (toolcall.c) --------------------------------------- */

/* Content bytes, with the whitespace rules of toolcall.h. */
void tc_content(toolcall_t *tc, const char *s, size_t n);
/* Held text: bytes since an opening markup, not yet known to be a call. */
void tc_raw_add(toolcall_t *tc, const char *s, size_t n);
void tc_raw_release(toolcall_t *tc); /* not a call: the held text is content */
/* Looks for the markers of list (NULL-terminated) in content: holds a
 * possible prefix, emits bytes that cannot start one as content. Returns
 * the index of a complete marker (its text is in tc->tag, tc->tag_len, not
 * emitted; the caller decides and clears tag_len), else -1. */
int tc_scan_markers(toolcall_t *tc, unsigned char c, const char *const *list);
/* Releases the held marker prefix as content (at the end). */
void tc_scan_flush(toolcall_t *tc);
/* Announces a call named name (n bytes; copied) with the given id (NULL:
 * a generated one). Drops the held text and the whitespace before it.
 * false when the name is empty or memory runs out. */
bool tc_call_start(toolcall_t *tc, const char *name, size_t n, const char *id);
/* An arguments fragment of the open call. */
void tc_call_args(toolcall_t *tc, const char *s, size_t n);
/* Ends the open call; complete when done and its arguments are a valid
 * JSON object. */
void tc_call_end(toolcall_t *tc, bool done);

/* Between the calls of a section: whitespace, call_open (a call begins:
 * raw holds its markup), section_close (the section ends, markup dropped).
 * Anything else ends the section: before any call it was not one (its text
 * is released as content: NOT_CALLS), after calls it was not closed
 * (LEFT: *n_held bytes in held, at most sizeof sec->mk, are content to
 * feed again). */
typedef enum { TC_SEC_MORE, TC_SEC_CALL, TC_SEC_CLOSED, TC_SEC_NOT_CALLS, TC_SEC_LEFT } tcsec_res_t;
tcsec_res_t tc_section_step(toolcall_t *tc, tcsec_t *sec, unsigned char c, const char *call_open,
                            const char *section_close, char *held, size_t *n_held);
/* Not a call after all: the held text is content, the section is left. */
void tc_section_abandon(toolcall_t *tc, tcsec_t *sec);
/* Feeds n bytes (at most 256, copied first) through the family's step
 * again, after a state change. */
void tc_refeed(toolcall_t *tc, const char *s, size_t n);

/* Call-object parser of the JSON family (toolcall_obj.c). */
void tcobj_start(toolcall_t *tc);      /* resets it; state JS_OBJ */
void tcobj_start_bare(toolcall_t *tc); /* mistral v11: object = arguments */
obj_res_t tcobj_byte(toolcall_t *tc, unsigned char c);
char *tcobj_decode_name(toolcall_t *tc); /* malloc'd name or NULL */
bool tcobj_args_valid(const char *s, size_t n); /* a JSON object, per json-c */

/* Parameter typing (toolcall_params.c): appends to out the JSON text of
 * the raw value of parameter key of function fn, typed by tools (may be
 * NULL). See toolcall.h for the rules. */
void tc_param_json(toolcall_t *tc, buf_t *out, const char *fn, const char *key, const char *raw, size_t n);
/* Appends a JSON string literal of s (n bytes). */
void tc_json_string(toolcall_t *tc, buf_t *out, const char *s, size_t n);
/* Appends s compacted (whitespace outside strings removed) if it is
 * exactly one JSON value; false (out unchanged) otherwise. */
bool tc_json_value(toolcall_t *tc, buf_t *out, const char *s, size_t n);
/* minimax_m3's element values: the raw text of parameter key of function
 * fn, where objects are child elements <k>...</k> and arrays <item>
 * elements (each tag prefixed by the format's key_open), as JSON typed by
 * the schema (leaves as tc_param_json types them). */
void tc_element_json(toolcall_t *tc, buf_t *out, const char *fn, const char *key, const char *raw, size_t n);
/* Converts a Python literal (str, int, float, True/False/None, list,
 * tuple, dict) to compact JSON appended to out; false (out unchanged) when
 * s is not exactly one literal (whitespace around allowed). */
bool tc_pyliteral_json(toolcall_t *tc, buf_t *out, const char *s, size_t n);

#endif
