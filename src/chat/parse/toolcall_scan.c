/* toolcall_scan.c - incremental JSON syntax scanner (see toolcall_scan.h). */
#include "chat/parse/toolcall_scan.h"

#include <string.h>

void tcscan_init(tcscan_t *s)
{
    memset(s, 0, sizeof *s);
    s->st = TCSCAN_VALUE;
}

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_num(unsigned char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

static int is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A value just completed at the current depth. */
static tcscan_res_t value_done(tcscan_t *s)
{
    if (s->depth == 0) {
        s->st = TCSCAN_DONE;
        return TCSCAN_R_END;
    }
    s->st = TCSCAN_AFTER;
    return TCSCAN_R_CONT;
}

static tcscan_res_t push(tcscan_t *s, unsigned char c)
{
    if (s->depth == TCSCAN_MAX_DEPTH)
        return TCSCAN_R_ERR;
    s->stack[s->depth++] = c;
    s->st = c == '{' ? TCSCAN_KEY_OR_END : TCSCAN_VALUE_OR_END;
    return TCSCAN_R_CONT;
}

static tcscan_res_t start_value(tcscan_t *s, unsigned char c)
{
    if (is_ws(c))
        return TCSCAN_R_WS;
    switch (c) {
    case '{':
    case '[':
        return push(s, c);
    case '"':
        s->st = TCSCAN_STR;
        s->str_is_key = 0;
        return TCSCAN_R_CONT;
    case 't':
        s->lit = "true";
        break;
    case 'f':
        s->lit = "false";
        break;
    case 'n':
        s->lit = "null";
        break;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) {
            s->st = TCSCAN_NUM;
            return TCSCAN_R_CONT;
        }
        return TCSCAN_R_ERR;
    }
    s->st = TCSCAN_LIT;
    s->lit_pos = 1;
    return TCSCAN_R_CONT;
}

tcscan_res_t tcscan_byte(tcscan_t *s, unsigned char c)
{
    switch (s->st) {
    case TCSCAN_VALUE:
        return start_value(s, c);
    case TCSCAN_VALUE_OR_END:
        if (c == ']') {
            s->depth--;
            return value_done(s);
        }
        return start_value(s, c);
    case TCSCAN_KEY_OR_END:
    case TCSCAN_KEY:
        if (is_ws(c))
            return TCSCAN_R_WS;
        if (c == '}' && s->st == TCSCAN_KEY_OR_END) {
            s->depth--;
            return value_done(s);
        }
        if (c != '"')
            return TCSCAN_R_ERR;
        s->st = TCSCAN_STR;
        s->str_is_key = 1;
        return TCSCAN_R_CONT;
    case TCSCAN_COLON:
        if (is_ws(c))
            return TCSCAN_R_WS;
        if (c != ':')
            return TCSCAN_R_ERR;
        s->st = TCSCAN_VALUE;
        return TCSCAN_R_CONT;
    case TCSCAN_AFTER: {
        if (is_ws(c))
            return TCSCAN_R_WS;
        uint8_t top = s->stack[s->depth - 1];
        if (c == ',') {
            s->st = top == '{' ? TCSCAN_KEY : TCSCAN_VALUE;
            return TCSCAN_R_CONT;
        }
        if ((c == '}' && top == '{') || (c == ']' && top == '[')) {
            s->depth--;
            return value_done(s);
        }
        return TCSCAN_R_ERR;
    }
    case TCSCAN_STR:
        if (c == '"') {
            if (s->str_is_key) {
                s->st = TCSCAN_COLON;
                return TCSCAN_R_CONT;
            }
            return value_done(s);
        }
        if (c == '\\') {
            s->st = TCSCAN_ESC;
            return TCSCAN_R_CONT;
        }
        return c < 0x20 ? TCSCAN_R_ERR : TCSCAN_R_CONT;
    case TCSCAN_ESC:
        if (c == 'u') {
            s->st = TCSCAN_HEX;
            s->hex_left = 4;
            return TCSCAN_R_CONT;
        }
        if (!strchr("\"\\/bfnrt", c) || c == 0)
            return TCSCAN_R_ERR;
        s->st = TCSCAN_STR;
        return TCSCAN_R_CONT;
    case TCSCAN_HEX:
        if (!is_hex(c))
            return TCSCAN_R_ERR;
        if (--s->hex_left == 0)
            s->st = TCSCAN_STR;
        return TCSCAN_R_CONT;
    case TCSCAN_NUM:
        if (is_num(c))
            return TCSCAN_R_CONT;
        if (s->depth == 0) {
            s->st = TCSCAN_DONE;
            return TCSCAN_R_END_BEFORE;
        }
        s->st = TCSCAN_AFTER;
        return tcscan_byte(s, c);
    case TCSCAN_LIT:
        if (c != (unsigned char)s->lit[s->lit_pos])
            return TCSCAN_R_ERR;
        if (s->lit[++s->lit_pos] == '\0')
            return value_done(s);
        return TCSCAN_R_CONT;
    case TCSCAN_DONE:
        return TCSCAN_R_END_BEFORE;
    }
    return TCSCAN_R_ERR;
}
