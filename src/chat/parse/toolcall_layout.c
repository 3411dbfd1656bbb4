/* toolcall_layout.c - the call layout of each tool-call format (see
 * toolcall_layout.h): three rows by hand, the others composed once from the
 * formats' descriptions (the canonical texts the parsers read and the chat
 * templates show the model). */
#include "chat/parse/toolcall_layout.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static toolcall_force_layout_t layouts[TOOLCALL_FORMAT_COUNT];
static bool have[TOOLCALL_FORMAT_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* composed pieces live here (a few hundred bytes per format) */
static char pool[16384];
static size_t pool_used;

static const char *cat(const char *a, const char *b, const char *c)
{
    char tmp[512];
    int n = snprintf(tmp, sizeof tmp, "%s%s%s", a ? a : "", b ? b : "", c ? c : "");
    if (n < 0 || (size_t)n >= sizeof tmp || pool_used + (size_t)n + 1 > sizeof pool)
        return NULL;
    char *p = pool + pool_used;
    memcpy(p, tmp, (size_t)n + 1);
    pool_used += (size_t)n + 1;
    return p;
}

/* The piece's leading control token when it starts with one (the trigger
 * of "auto" mode), else NULL. */
static const char *leading_marker(const toolcall_format_desc_t *d, const char *piece)
{
    for (const char *const *t = d->tokens; piece && t && *t; t++)
        if (!strncmp(piece, *t, strlen(*t)))
            return *t;
    return NULL;
}

static bool derive(const toolcall_format_desc_t *d, toolcall_force_layout_t *L)
{
    /* variants the layout cannot say: Gemma's strings or header attributes
     * outside their families, a value type without its string word,
     * parameters without their tags */
    if ((d->string_delim && d->layout != TOOLCALL_LAYOUT_NAME_JSON) ||
        ((d->name_attr || d->name_end) && d->layout != TOOLCALL_LAYOUT_NAME_PARAMS) ||
        (d->value_attr && !d->value_attr_string) ||
        (d->layout == TOOLCALL_LAYOUT_NAME_PARAMS && (!d->key_open || (!d->value_close && !d->item_tag))))
        return false;
    L->open = d->section_open ? d->section_open : "";
    L->close = d->section_close ? d->section_close : "";
    L->call_sep = d->call_sep ? d->call_sep : "";
    L->markers = d->tokens;
    const char *name_key = d->name_key ? d->name_key : "name";
    const char *args_key = d->args_key ? d->args_key : "arguments";
    switch (d->layout) {
    case TOOLCALL_LAYOUT_JSON_OBJECT: /* {"name": "N", "arguments": {...}} */
        L->call_prefix = cat(d->call_open, "{\"", cat(name_key, "\": \"", NULL));
        L->name_suffix = cat("\", \"", args_key, "\": ");
        L->call_suffix = cat("}", d->call_close, NULL);
        break;
    case TOOLCALL_LAYOUT_JSON_NAMED: /* {"N": {...}} */
        L->call_prefix = cat(d->call_open, "{\"", NULL);
        L->name_suffix = "\": ";
        L->call_suffix = cat("}", d->call_close, NULL);
        break;
    case TOOLCALL_LAYOUT_NAME_PARAMS: /* call_open N name_close, then key_open K key_close [value_open] V value_close */
        L->open = d->section_open ? cat(d->section_open, "\n", NULL) : "";
        L->close = d->section_close ? cat("\n", d->section_close, NULL) : "";
        L->call_sep = d->call_sep ? d->call_sep : "\n";
        L->call_prefix = cat(d->call_open, d->name_prefix, NULL);
        /* glm45 has no name_close: the name ends at the newline; kimi_k3
         * numbers its calls in the header (index="N") and ends it with
         * name_end. Its alternative form, all arguments as one JSON block
         * in args_open / args_close, is not written. */
        L->name_suffix = d->name_close ? cat(d->name_close, "\n", NULL) : "\n";
        if (d->name_attr)
            L->name_suffix = cat(cat(d->name_close, d->name_attr, TOOLCALL_LAYOUT_NUMBER "\""), d->name_end, "\n");
        L->call_suffix = cat("\n", d->call_close, NULL);
        L->param_open = d->key_open;
        if (d->value_attr) { /* key_close value_attr FLAG" key_end: DSML's string="true" / "false", kimi_k3's type="T" */
            L->param_mid_raw = cat(d->key_close, d->value_attr, cat(d->value_attr_string, "\"", d->key_end));
            L->param_mid_json = cat(d->key_close, d->value_attr,
                                    cat(d->value_attr_json ? d->value_attr_json : TOOLCALL_LAYOUT_JSON_TYPE, "\"",
                                        d->key_end));
        } else {
            L->param_mid_raw = cat(d->key_close, d->key_end, NULL);
            L->param_mid_json = L->param_mid_raw;
        }
        if (d->value_open) {
            L->param_mid_raw = cat(L->param_mid_raw, "\n", d->value_open);
            L->param_mid_json = cat(L->param_mid_json, "\n", d->value_open);
        }
        L->param_close = d->value_close;
        /* minimax_m3: each value is an element, closed by its own tag; a
         * value that is not a string is written as JSON text, which its
         * reader takes as well as nested elements */
        if (!d->value_close) {
            L->elem_close = cat(d->key_open, "/", NULL);
            L->item_tag = d->item_tag ? d->item_tag : "item";
        }
        L->raw_newlines = !d->value_attr; /* typed by the schema, the newlines trimmed (toolcall_params.c) */
        L->param_sep = "\n";
        break;
    case TOOLCALL_LAYOUT_PYTHONIC: /* [N(K=V, ...), ...]: every value a Python (or JSON) literal */
        L->call_prefix = "";
        L->name_suffix = d->name_close;
        L->call_suffix = d->call_close;
        L->param_open = "";
        L->param_mid_raw = L->param_mid_json = d->key_close;
        L->param_close = "";
        L->param_sep = ", ";
        L->json_values = true;
        break;
    case TOOLCALL_LAYOUT_HARMONY: { /* gpt-oss: a commentary message to functions.N, its body the arguments */
        /* the prompt ends with <|start|>assistant: a call opens with the
         * channel; another message (a second call) with <|start|>assistant */
        const char *open = d->call_open, *start = "<|start|>assistant";
        if (open && !strncmp(open, start, strlen(start)))
            open += strlen(start);
        L->open = L->close = "";
        L->call_sep = start;
        L->call_prefix = cat(open, d->name_prefix, NULL);
        L->name_suffix = d->name_close;
        L->call_suffix = d->call_close;
        L->markers = d->tokens;
        return L->call_prefix && L->name_suffix && L->call_suffix; /* no auto trigger: content is a message too */
    }
    case TOOLCALL_LAYOUT_NAME_JSON: /* name_prefix N name_close [args_open] {...} [args_close] */
        if (!d->name_close && !d->string_delim) /* Gemma's arguments follow the name */
            return false;
        L->value_delim = d->string_delim;
        L->call_prefix = d->id_close ? cat(d->call_open, TOOLCALL_LAYOUT_ID, cat(d->id_close, d->name_prefix, NULL))
                                     : cat(d->call_open, d->name_prefix, NULL);
        if (d->prompt_opens) { /* the prompt ends with call_open: the first call starts at once */
            L->call_prefix = d->name_prefix ? d->name_prefix : "";
            L->call_sep = d->call_open;
            L->at_once = true;
        }
        /* kimi_k2's header is functions.NAME:INDEX */
        L->name_suffix = d->format == TOOLCALL_FORMAT_KIMI_K2 ? cat(":" TOOLCALL_LAYOUT_NUMBER, d->name_close, d->args_open)
                                                              : cat(d->name_close, d->args_open, NULL);
        L->call_suffix = cat(d->args_close, d->call_close, NULL);
        break;
    default:
        return false;
    }
    const char *first = d->section_open ? d->section_open : d->call_open;
    L->auto_trigger = d->prompt_opens ? NULL : leading_marker(d, first);
    /* Kimi K3's <|open|> opens its think and response sections too: no
     * unambiguous start for "auto" */
    if (d->name_attr)
        L->auto_trigger = NULL;
    return L->call_prefix && L->name_suffix && L->call_suffix;
}

static void build(void)
{
    for (int f = 1; f < TOOLCALL_FORMAT_COUNT; f++) {
        const toolcall_format_desc_t *d = toolcall_format_desc((toolcall_format_t)f);
        if (d)
            have[f] = derive(d, &layouts[f]);
    }
    /* by hand: the texts these models are trained on, which their
     * descriptions leave to the parser's leniency */
    /* <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call> */
    layouts[TOOLCALL_FORMAT_HERMES] = (toolcall_force_layout_t){
        .open = "", .close = "", .call_prefix = "<tool_call>\n{\"name\": \"", .name_suffix = "\", \"arguments\": ",
        .call_suffix = "}\n</tool_call>", .call_sep = "\n", .auto_trigger = "<tool_call>",
        .markers = toolcall_format_desc(TOOLCALL_FORMAT_HERMES)->tokens};
    /* {"name": "f", "parameters": {...}} (Llama 3.1 JSON tool calls) */
    layouts[TOOLCALL_FORMAT_LLAMA3_JSON] = (toolcall_force_layout_t){
        .open = "", .close = "", .call_prefix = "{\"name\": \"", .name_suffix = "\", \"parameters\": ",
        .call_suffix = "}", .call_sep = "; ", .auto_trigger = "<|python_tag|>",
        .markers = toolcall_format_desc(TOOLCALL_FORMAT_LLAMA3_JSON)->tokens};
    /* <|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {...}}, ...]<|END_ACTION|> */
    layouts[TOOLCALL_FORMAT_COHERE] = (toolcall_force_layout_t){
        .open = "<|START_ACTION|>[", .close = "]<|END_ACTION|>",
        .call_prefix = "{\"tool_call_id\": \"" TOOLCALL_LAYOUT_NUMBER "\", \"tool_name\": \"",
        .name_suffix = "\", \"parameters\": ", .call_suffix = "}", .call_sep = ",", .auto_trigger = "<|START_ACTION|>",
        .markers = toolcall_format_desc(TOOLCALL_FORMAT_COHERE)->tokens};
    have[TOOLCALL_FORMAT_HERMES] = have[TOOLCALL_FORMAT_LLAMA3_JSON] = have[TOOLCALL_FORMAT_COHERE] = true;
}

const toolcall_force_layout_t *toolcall_force_layout(toolcall_format_t fmt)
{
    pthread_once(&once, build);
    return (unsigned)fmt < TOOLCALL_FORMAT_COUNT && have[fmt] ? &layouts[fmt] : NULL;
}

static bool word_char(unsigned char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
           ch == '-' || ch == '.' || ch == '=' || ch == '`' || ch >= 0x80;
}

bool toolcall_layout_space_free(const char *piece, size_t i, size_t j, bool word_left, bool word_right)
{
    bool left = i == 0 ? word_left : word_char((unsigned char)piece[i - 1]);
    bool right = piece[j] == '\0' ? word_right : word_char((unsigned char)piece[j]);
    return !left && !right;
}

bool toolcall_layout_gap(const char *left, const char *right)
{
    if (!left || !*left || !right || !*right)
        return false;
    return !word_char((unsigned char)left[strlen(left) - 1]) && !word_char((unsigned char)right[0]);
}
