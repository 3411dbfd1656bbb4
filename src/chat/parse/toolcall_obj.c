/* toolcall_obj.c - the call-object parser: follows one JSON object with
 * the scanner, finds the top-level keys, collects the name and the
 * arguments (compacted), and says when the object is done or is not a call.
 * See toolcall.h for the rules and toolcall.c for how it is driven.
 */
#include "chat/parse/toolcall_impl.h"

#include <json-c/json.h>

void tcobj_start(toolcall_t *tc)
{
    tcscan_init(&tc->u.js.scan);
    tc->u.js.key.len = 0;
    tc->u.js.in_key = false;
    tc->u.js.next_role = ROLE_OTHER;
    tc->u.js.in_name = tc->u.js.name_done = tc->u.js.name_seen = false;
    tc->u.js.name_raw.len = 0;
    tc->u.js.in_args = tc->u.js.args_started = tc->u.js.args_done = tc->u.js.args_seen = false;
    tc->u.js.in_args_str = false;
    tc->u.js.args_str.len = 0;
    tc->u.js.cur_args.len = 0;
    tc->u.js.committed = false;
    tc->u.js.args_emitted = 0;
    tc->u.js.bare = false;
    tc->u.js.st = JS_OBJ;
}

/* mistral v11: the name is known, the object that follows is the arguments. */
void tcobj_start_bare(toolcall_t *tc)
{
    tcobj_start(tc);
    tc->u.js.bare = true;
    tc->u.js.arr_mode = false;
    buf_add(tc, &tc->u.js.name_raw, tc->u.js.m_name.p, tc->u.js.m_name.len);
    buf_addc(tc, &tc->u.js.name_raw, '"');
    tc->u.js.name_seen = tc->u.js.name_done = true;
    tc->u.js.args_seen = true;
}

static bool key_is(const buf_t *k, const char *s)
{
    return k->len == strlen(s) && memcmp(k->p, s, k->len) == 0;
}

/* "arguments": "{\"a\": 1}" (an object serialised into a string, as some
 * fine-tunes write it): decodes the string and takes the object inside,
 * compacted like any arguments. False if the string holds no object. The
 * call then commits when the string closes, not when it starts. */
static bool args_from_string(toolcall_t *tc)
{
    if (tc->nomem || !tc->u.js.args_str.p)
        return false;
    json_object *o = json_tokener_parse(tc->u.js.args_str.p);
    bool ok = o && json_object_is_type(o, json_type_string);
    if (ok) {
        const char *t = json_object_get_string(o);
        size_t n = (size_t)json_object_get_string_len(o);
        tcscan_t sc;
        tcscan_init(&sc);
        tcscan_res_t r = TCSCAN_R_WS;
        size_t i = 0;
        while (i < n && r != TCSCAN_R_END) {
            unsigned char c = (unsigned char)t[i++];
            if (sc.depth == 0 && sc.st == TCSCAN_VALUE && !is_ws(c) && c != '{')
                break;
            r = tcscan_byte(&sc, c);
            if (r == TCSCAN_R_ERR)
                break;
            if (r != TCSCAN_R_WS)
                buf_addc(tc, &tc->u.js.cur_args, (char)c);
        }
        while (i < n && is_ws((unsigned char)t[i]))
            i++;
        ok = r == TCSCAN_R_END && i == n;
    }
    json_object_put(o);
    if (!ok) {
        tc->u.js.cur_args.len = 0;
        return false;
    }
    tc->u.js.args_started = tc->u.js.args_done = true;
    return true;
}

/* Feeds one byte of the call object (from its '{' on). */
obj_res_t tcobj_byte(toolcall_t *tc, unsigned char c)
{
    tcscan_t *s = &tc->u.js.scan;
    int pre_depth = s->depth;
    tcscan_state_t pre_st = s->st;
    tcscan_res_t r = tcscan_byte(s, c);
    if (r == TCSCAN_R_ERR || r == TCSCAN_R_END_BEFORE)
        return OBJ_FAIL;
    if (pre_depth == 0 && r != TCSCAN_R_WS && c != '{')
        return OBJ_FAIL; /* a call is an object */
    if (tc->u.js.bare) {
        if (r != TCSCAN_R_WS) {
            buf_addc(tc, &tc->u.js.cur_args, (char)c);
            tc->u.js.args_started = true;
        }
        if (r == TCSCAN_R_END)
            tc->u.js.args_done = true;
        return r == TCSCAN_R_END ? OBJ_DONE : OBJ_MORE;
    }

    if (pre_depth == 1 && (pre_st == TCSCAN_KEY_OR_END || pre_st == TCSCAN_KEY) && c == '"') {
        tc->u.js.in_key = true;
        tc->u.js.key.len = 0;
    } else if (tc->u.js.in_key) {
        if (pre_st == TCSCAN_STR && s->st == TCSCAN_COLON) {
            tc->u.js.in_key = false;
            role_t role = ROLE_OTHER;
            const toolcall_format_desc_t *d = tc->desc;
            if (d->layout == TOOLCALL_LAYOUT_JSON_NAMED) {
                /* {"NAME": {...}}: the first key is the name */
                if (tc->u.js.name_seen)
                    return tc->u.js.committed ? OBJ_MORE : OBJ_FAIL_CONSUMED;
                buf_addc(tc, &tc->u.js.name_raw, '"');
                buf_add(tc, &tc->u.js.name_raw, tc->u.js.key.p ? tc->u.js.key.p : "", tc->u.js.key.len);
                buf_addc(tc, &tc->u.js.name_raw, '"');
                tc->u.js.name_seen = tc->u.js.name_done = true;
                tc->u.js.next_role = ROLE_ARGS;
                return OBJ_MORE;
            }
            if (key_is(&tc->u.js.key, "name") || (d->name_key && key_is(&tc->u.js.key, d->name_key)))
                role = tc->u.js.name_seen ? ROLE_OTHER : ROLE_NAME;
            else if (key_is(&tc->u.js.key, "arguments") || key_is(&tc->u.js.key, "parameters") ||
                     (d->args_key && key_is(&tc->u.js.key, d->args_key)))
                role = tc->u.js.args_seen ? ROLE_OTHER : ROLE_ARGS;
            else if (tc->cfg.format == TOOLCALL_FORMAT_LLAMA3_JSON && !tc->u.js.committed &&
                     !key_is(&tc->u.js.key, "type"))
                return OBJ_FAIL_CONSUMED; /* not a call object: content */
            tc->u.js.next_role = role;
        } else {
            buf_addc(tc, &tc->u.js.key, (char)c);
        }
    } else if (pre_depth == 1 && pre_st == TCSCAN_VALUE && r != TCSCAN_R_WS) {
        role_t role = tc->u.js.next_role;
        tc->u.js.next_role = ROLE_OTHER;
        if (role == ROLE_NAME) {
            if (c != '"')
                return OBJ_FAIL_CONSUMED;
            tc->u.js.name_seen = tc->u.js.in_name = true;
            buf_addc(tc, &tc->u.js.name_raw, (char)c);
        } else if (role == ROLE_ARGS) {
            tc->u.js.args_seen = true;
            if (c == '"') {
                tc->u.js.in_args_str = true;
                buf_addc(tc, &tc->u.js.args_str, (char)c);
            } else if (c == '{') {
                tc->u.js.args_started = tc->u.js.in_args = true;
                buf_addc(tc, &tc->u.js.cur_args, (char)c);
            } else {
                return OBJ_FAIL_CONSUMED;
            }
        }
    } else if (tc->u.js.in_name) {
        buf_addc(tc, &tc->u.js.name_raw, (char)c);
        if (s->depth == 1 && s->st == TCSCAN_AFTER) {
            tc->u.js.in_name = false;
            tc->u.js.name_done = true;
        }
    } else if (tc->u.js.in_args_str) {
        buf_addc(tc, &tc->u.js.args_str, (char)c);
        if (s->depth == 1 && s->st == TCSCAN_AFTER) {
            tc->u.js.in_args_str = false;
            if (!args_from_string(tc))
                return OBJ_FAIL_CONSUMED;
        }
    } else if (tc->u.js.in_args) {
        if (r != TCSCAN_R_WS)
            buf_addc(tc, &tc->u.js.cur_args, (char)c);
        if (s->depth == 1) {
            tc->u.js.in_args = false;
            tc->u.js.args_done = true;
        }
    }
    return r == TCSCAN_R_END ? OBJ_DONE : OBJ_MORE;
}

/* Decodes the JSON string literal of the name; NULL if not a non-empty
 * string (or out of memory). */
char *tcobj_decode_name(toolcall_t *tc)
{
    if (tc->nomem || !tc->u.js.name_raw.p)
        return NULL;
    json_object *o = json_tokener_parse(tc->u.js.name_raw.p);
    char *name = NULL;
    if (o && json_object_is_type(o, json_type_string) && json_object_get_string_len(o) > 0) {
        name = strdup(json_object_get_string(o));
        if (!name)
            tc->nomem = true;
    }
    json_object_put(o);
    return name;
}

bool tcobj_args_valid(const char *s, size_t n)
{
    if (!s || n == 0)
        return false;
    json_tokener *tok = json_tokener_new_ex(TCSCAN_MAX_DEPTH + 1);
    if (!tok)
        return false;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *o = json_tokener_parse_ex(tok, s, (int)n);
    bool ok = o && json_tokener_get_error(tok) == json_tokener_success &&
              json_tokener_get_parse_end(tok) == n && json_object_is_type(o, json_type_object);
    json_object_put(o);
    json_tokener_free(tok);
    return ok;
}

