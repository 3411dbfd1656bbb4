/* test_toolcall_layout.c - the forced-call layouts (toolcall_layout.h)
 * agree with the parsers: for every format with a layout, one call and two
 * calls written in it (as a forced grammar makes the model write them, and
 * with the optional spaces and newlines dropped) parse back into exactly
 * those calls with no content; the formats without one are the variants
 * the layout cannot say; the "auto" trigger is a marker and starts the
 * layout. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "chat/parse/toolcall.h"
#include "chat/parse/toolcall_layout.h"
#include "tap.h"

/* open CALL [sep CALL] close; compact: the free runs of spaces and
 * newlines (toolcall_layout_space_free) dropped; spacious: a newline and a
 * space in every gap between pieces (toolcall_layout_gap). The arguments:
 * JSON, Gemma 4's object syntax, or in the XML-style layouts the parameter
 * elements (a raw string and a typed value). */
static void compose_x(const toolcall_force_layout_t *L, bool two, bool compact, bool spacious, char *out, size_t cap);
static void compose(const toolcall_force_layout_t *L, bool two, bool compact, char *out, size_t cap)
{
    compose_x(L, two, compact, false, out, cap);
}

static void compose_x(const toolcall_force_layout_t *L, bool two, bool compact, bool spacious, char *out, size_t cap)
{
    char city[512], close1[128], close2[128];
    if (L->elem_close) { /* element values: each closed by its own tag */
        snprintf(close1, sizeof close1, "%scity%s", L->elem_close, L->param_mid_raw);
        snprintf(close2, sizeof close2, "%sdays%s", L->elem_close, L->param_mid_raw);
    } else {
        snprintf(close1, sizeof close1, "%s", L->param_close ? L->param_close : "");
        snprintf(close2, sizeof close2, "%s", close1);
    }
    if (L->param_open) /* a raw string (a literal in pythonic) and a typed value */
        snprintf(city, sizeof city, "%scity%s%s%s%s%sdays%s3%s", L->param_open, L->param_mid_raw,
                 L->json_values ? "\"Paris\"" : "Paris", close1, L->param_sep, L->param_open, L->param_mid_json,
                 close2);
    else if (L->value_delim) /* Gemma 4's syntax: a bare key, a delimited one */
        snprintf(city, sizeof city, "{city: %sParis%s, %sdays%s: 3}", L->value_delim, L->value_delim, L->value_delim,
                 L->value_delim);
    else
        snprintf(city, sizeof city, "{\"city\": \"Paris\", \"days\": 3}");
    const char *pieces[] = {L->open,     L->call_prefix, "get_weather", L->name_suffix, city,
                            L->call_suffix, two ? L->call_sep : "", two ? L->call_prefix : "", two ? "get_time" : "",
                            two ? L->name_suffix : "", two && !L->param_open ? "{}" : "", two ? L->call_suffix : "", L->close};
    const char *args_end = !L->param_open ? "}" : L->param_close ? L->param_close : L->param_mid_raw;
    const char *end = L->call_suffix && *L->call_suffix ? L->call_suffix : args_end;
    size_t w = 0;
    for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++) {
        /* the gap before piece i */
        const char *left = i == 1 ? L->open : i == 5 ? args_end : i == 6 ? end : i == 7 ? (*L->call_sep ? L->call_sep : end)
                         : i == 11 ? args_end : i == 12 ? end : NULL;
        if (spacious && left && (pieces[i] && *pieces[i]) && toolcall_layout_gap(left, pieces[i]) && w + 2 < cap) {
            out[w++] = '\n';
            out[w++] = ' ';
        }
        bool layout = i != 2 && i != 4 && i != 8 && i != 10; /* names and arguments stay */
        bool word_left = i == 3 || i == 9, word_right = i == 1 || i == 7; /* next to a name */
        const char *p = pieces[i] ? pieces[i] : "";
        for (size_t k = 0; p[k] && w + 1 < cap;) {
            if (p[k] == TOOLCALL_LAYOUT_NUMBER[0]) { /* call numbers: 0, 1 */
                out[w++] = i < 6 ? '0' : '1';
                k++;
                continue;
            }
            if (p[k] == TOOLCALL_LAYOUT_JSON_TYPE[0]) { /* the type of days: 3 */
                const char *ty = "integer";
                for (; *ty && w + 1 < cap; ty++)
                    out[w++] = *ty;
                k++;
                continue;
            }
            if (p[k] == TOOLCALL_LAYOUT_ID[0]) { /* call ids */
                const char *id = i < 6 ? "a1b2c3d4e5" : "f6g7h8i9j0";
                for (; *id && w + 1 < cap; id++)
                    out[w++] = *id;
                k++;
                continue;
            }
            size_t run = compact && layout ? strspn(p + k, " \n") : 0;
            if (run && toolcall_layout_space_free(p, k, k + run, word_left, word_right)) {
                k += run;
                continue;
            }
            size_t n = run ? run : 1;
            for (size_t q = 0; q < n && w + 1 < cap; q++)
                out[w++] = p[k + q];
            k += n;
        }
    }
    out[w] = '\0';
}

/* The request's tools: the XML-style parsers type a value by its schema. */
static const char tools_json[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\","
    " \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}}}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"parameters\": {\"type\": \"object\"}}}]";

int main(void)
{
    json_object *tools = json_tokener_parse(tools_json);
    int n_layouts = 0;
    for (int f = 1; f < TOOLCALL_FORMAT_COUNT; f++) {
        toolcall_format_t fmt = (toolcall_format_t)f;
        const toolcall_format_desc_t *d = toolcall_format_desc(fmt);
        const toolcall_force_layout_t *L = toolcall_force_layout(fmt);
        if (!d)
            continue;
        bool sayable = d->layout == TOOLCALL_LAYOUT_JSON_OBJECT || d->layout == TOOLCALL_LAYOUT_JSON_NAMED ||
                       d->layout == TOOLCALL_LAYOUT_NAME_JSON || d->layout == TOOLCALL_LAYOUT_NAME_PARAMS ||
                       d->layout == TOOLCALL_LAYOUT_HARMONY || d->layout == TOOLCALL_LAYOUT_PYTHONIC;
        if (!L) {
            /* only the families the layout cannot say, and the variants it names */
            tap_ok(!sayable || d->item_tag || !d->value_close,
                   "%s: no layout (element values)",
                   d->name);
            continue;
        }
        n_layouts++;
        for (int v = 0; v < 6; v++) {
            bool two = v & 1, compact = (v & 2) != 0, spacious = (v & 4) != 0;
            char text[1024];
            compose_x(L, two, compact, spacious, text, sizeof text);
            toolcall_config_t cfg = {fmt, NULL, NULL, 7, tools};
            toolcall_t *p = toolcall_parse(&cfg, text, strlen(text), NULL);
            toolcall_call_t a, b;
            bool ok = p && toolcall_count(p) == (two ? 2 : 1) && toolcall_get(p, 0, &a) &&
                      !strcmp(a.name, "get_weather") && !strcmp(a.arguments, "{\"city\":\"Paris\",\"days\":3}") && a.complete &&
                      (!two || (toolcall_get(p, 1, &b) && !strcmp(b.name, "get_time") && !strcmp(b.arguments, "{}"))) &&
                      !toolcall_content(p, NULL);
            if (!tap_ok(ok, "%s: %s call%s%s parse back", d->name, two ? "two" : "one", two ? "s" : "",
                        compact ? " (compact)" : spacious ? " (spacious)" : ""))
                tap_diag("text: %s -> %d calls, content %s", text, p ? (int)toolcall_count(p) : -1,
                         p && toolcall_content(p, NULL) ? toolcall_content(p, NULL) : "(none)");
            toolcall_free(p);
        }
        if (L->auto_trigger) {
            bool is_marker = toolcall_format_is_marker(fmt, L->auto_trigger);
            char first[1024];
            compose(L, false, false, first, sizeof first);
            tap_ok(is_marker && !strncmp(first, L->auto_trigger, strlen(L->auto_trigger)) ==
                                    (fmt != TOOLCALL_FORMAT_LLAMA3_JSON),
                   "%s: the auto trigger %s is a marker%s", d->name, L->auto_trigger,
                   fmt == TOOLCALL_FORMAT_LLAMA3_JSON ? " (llama3_json: <|python_tag|> precedes the calls)"
                                                      : " and opens the calls");
        }
    }
    tap_ok(n_layouts >= 32, "layouts for %d formats", n_layouts);
    tap_ok(!toolcall_force_layout(TOOLCALL_FORMAT_NONE) && !toolcall_force_layout(TOOLCALL_FORMAT_COUNT),
           "none for none or out of range");
    json_object_put(tools);
    return tap_done();
}
