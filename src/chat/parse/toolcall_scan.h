/* toolcall_scan.h - incremental JSON syntax scanner (internal to toolcall).
 *
 * Fed one byte at a time, it follows one JSON value (RFC 8259 structure:
 * objects, arrays, strings with escapes, literals; numbers are scanned
 * leniently as runs of [0-9+-.eE], json-c checks them later) and says for
 * each byte whether it is part of the value, insignificant whitespace, the
 * byte that completes the value, or a syntax error. It never allocates;
 * nesting deeper than TCSCAN_MAX_DEPTH is an error. Plain struct, no
 * ownership; one per value being scanned.
 */
#ifndef LF_TOOLCALL_SCAN_H
#define LF_TOOLCALL_SCAN_H

#include <stdint.h>

#define TCSCAN_MAX_DEPTH 64

typedef enum {
    TCSCAN_VALUE = 0,   /* expecting a value */
    TCSCAN_VALUE_OR_END,/* after '[': a value or ']' */
    TCSCAN_KEY_OR_END,  /* after '{': a key string or '}' */
    TCSCAN_KEY,         /* after ',' in an object: a key string */
    TCSCAN_COLON,       /* after a key */
    TCSCAN_AFTER,       /* after a value inside a container: ',' or close */
    TCSCAN_STR,         /* inside a string */
    TCSCAN_ESC,         /* after a backslash */
    TCSCAN_HEX,         /* inside \uXXXX */
    TCSCAN_NUM,         /* inside a number */
    TCSCAN_LIT,         /* inside true/false/null */
    TCSCAN_DONE         /* the value is complete */
} tcscan_state_t;

typedef enum {
    TCSCAN_R_CONT = 0,   /* the byte is part of the value */
    TCSCAN_R_WS,         /* insignificant whitespace */
    TCSCAN_R_END,        /* the byte completes the value */
    TCSCAN_R_END_BEFORE, /* the value (a number) ended before this byte */
    TCSCAN_R_ERR         /* syntax error at this byte */
} tcscan_res_t;

typedef struct {
    uint8_t stack[TCSCAN_MAX_DEPTH]; /* '{' or '[' per open container */
    int depth;
    tcscan_state_t st;
    uint8_t str_is_key;
    uint8_t hex_left;
    const char *lit; /* the literal being matched, lit_pos bytes done */
    uint8_t lit_pos;
} tcscan_t;

void tcscan_init(tcscan_t *s);
tcscan_res_t tcscan_byte(tcscan_t *s, unsigned char c);

#endif
