/* toolcall_impl.h - internals shared by toolcall.c (format state machines,
 * events, public API) and toolcall_obj.c (the call-object parser). Not a
 * public header: see toolcall.h for the contract.
 */
#ifndef LF_TOOLCALL_IMPL_H
#define LF_TOOLCALL_IMPL_H

#include "chat/parse/toolcall.h"
#include "chat/parse/toolcall_scan.h"

#include <stdlib.h>
#include <string.h>

#define HERMES_OPEN "<tool_call>"
#define HERMES_CLOSE "</tool_call>"
#define MISTRAL_OPEN "[TOOL_CALLS]"
#define PYTHON_TAG "<|python_tag|>"
#define MISTRAL_ARGS "[ARGS]"

typedef struct {
    char *p; /* NUL-terminated when not NULL */
    size_t len, cap;
} buf_t;

typedef struct {
    char id[TOOLCALL_ID_LEN + 1];
    char *name;
    buf_t args;
    bool complete;
} call_t;

typedef struct {
    toolcall_ev_kind_t kind;
    int32_t index;
    size_t off, len;
} ev_rec_t;

typedef enum {
    ST_CONTENT,   /* content; hermes/mistral look for the opening markup */
    ST_L3_START,  /* llama3_json: message start or between calls */
    ST_OPEN,      /* after the opening markup: whitespace, then '{' or '[' */
    ST_ARR,       /* mistral: after '[' or ',': '{' (or ']') */
    ST_ARR_AFTER, /* mistral: after an element: ',' or ']' */
    ST_M_NAME,    /* mistral v11: [TOOL_CALLS]name[ARGS]{...}: the name */
    ST_H_AFTER,   /* hermes: after an object, before </tool_call> */
    ST_OBJ,       /* inside a call object */
    ST_DONE       /* finished: content */
} state_t;

typedef enum { ROLE_OTHER, ROLE_NAME, ROLE_ARGS } role_t;

typedef enum {
    OBJ_MORE,         /* byte consumed, object goes on */
    OBJ_DONE,         /* byte consumed, object closed */
    OBJ_FAIL,         /* byte NOT consumed: syntax error at it */
    OBJ_FAIL_CONSUMED /* byte consumed, but this is not a call */
} obj_res_t;

struct toolcall {
    toolcall_config_t cfg;
    uint64_t rng_state;
    state_t st;

    buf_t content;    /* every content byte released (the result) */
    buf_t ws_pending; /* trailing whitespace of content, not decided yet */
    bool after_call;  /* no content byte since the last call: drop spaces */
    bool failed_open; /* a block's opening markup turned out not to be a call:
                       * its closing markup is content too */

    char tag[16]; /* ST_CONTENT: possible start of a markup tag */
    size_t tag_len;
    size_t pt_pos; /* ST_L3_START: bytes of <|python_tag|> matched */
    buf_t raw;     /* held since the opening markup, pre-commit */

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
    bool arr_mode; /* mistral: inside [ ... ] */
    bool bare;     /* mistral v11: the object is the arguments itself */
    buf_t m_name;  /* mistral v11: the name, as a JSON string literal */
    size_t m_pos;  /* mistral v11: bytes of [ARGS] matched */

    call_t *calls;
    size_t ncalls, cap_calls;

    buf_t evtext;
    ev_rec_t *evs;
    size_t nev, cap_ev;
    toolcall_event_t *out;
    size_t cap_out;

    bool nomem;
};

/* Growable byte buffers; a failed allocation sets tc->nomem and later adds
 * do nothing (the public call then reports LF_ERR_NOMEM). */

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

/* Call-object parser (toolcall_obj.c). */
void tcobj_start(toolcall_t *tc);      /* resets it; state ST_OBJ */
void tcobj_start_bare(toolcall_t *tc); /* mistral v11: object = arguments */
obj_res_t tcobj_byte(toolcall_t *tc, unsigned char c);
char *tcobj_decode_name(toolcall_t *tc); /* malloc'd name or NULL */
bool tcobj_args_valid(const buf_t *a);   /* a JSON object, per json-c */

#endif
