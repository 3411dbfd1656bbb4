/* api_constraint_parts.c - the pieces of a request grammar (see
 * api_constraint_parts.h): markers, free text, the reasoning block, schema
 * values. */
#include "server/api/api_constraint_parts.h"

#include <stdio.h>
#include <string.h>

#include "grammar/schema/schema.h"

const char *cb_to_json(json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

json_object *cb_jget(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &v) ||
        json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

/* A format marker: its special token when the vocabulary has one, or its text. */
gr_ex_t *cb_marker(cb_t *c, const char *text)
{
    if (!text || !*text)
        return gr_ex_empty(&c->a);
    const vocab_t *v = c->s->vocab;
    int32_t id = vocab_find(v, text, strlen(text));
    gr_ex_t *lit = gr_ex_str(&c->a, text);
    if (id >= 0 && vocab_is_control(v, id))
        return gr_ex_alt2(&c->a, gr_ex_token(&c->a, id), lit);
    return lit;
}

/* Any text (valid UTF-8) that contains none of needles[0..n). */
gr_dfa_t *cb_dfa_without_any(cb_t *c, const char *const *needles, size_t n)
{
    gr_exlist_t l = {0};
    gr_ex_t *any = gr_ex_rep(&c->a, gr_ex_range(&c->a, 0, GR_CP_MAX), 0, -1);
    for (size_t i = 0; i < n; i++)
        if (needles[i] && *needles[i])
            gr_exlist_push(&c->a, &l, gr_ex_str(&c->a, needles[i]));
    gr_ex_t *bad = l.n ? gr_ex_seq3(&c->a, any, gr_ex_alt(&c->a, l.v, l.n), any) : gr_ex_none(&c->a);
    gr_dfa_t *all = any ? gr_dfa_from_expr(any, false, &c->lim, &c->err) : NULL;
    gr_dfa_t *with = bad && !l.fail ? gr_dfa_from_expr(bad, false, &c->lim, &c->err) : NULL;
    gr_dfa_t *d = all && with ? gr_dfa_subtract(all, with, &c->lim, &c->err) : NULL;
    gr_dfa_free(all);
    gr_dfa_free(with);
    if (!d)
        c->failed = true;
    return d;
}

gr_ex_t *cb_text_without_any(cb_t *c, const char *const *needles, size_t n)
{
    gr_dfa_t *d = cb_dfa_without_any(c, needles, n);
    if (!d || !gr_rules_keep_dfa(&c->R, d)) {
        c->failed = true;
        return NULL;
    }
    return gr_ex_dfa(&c->a, d, gr_dfa_nullable(d));
}

gr_ex_t *cb_text_without(cb_t *c, const char *needle)
{
    return cb_text_without_any(c, &needle, 1);
}

/* One of the markup texts[0..) (NULL-terminated): the control tokens
 * tokens[] inside them as the token or its text (K3's "<|open|>think<|sep|>"
 * is three tokens), a text without tokens as its own token or text. */
gr_ex_t *cb_any_marker(cb_t *c, const char *const *texts, const char *const *tokens)
{
    gr_exlist_t l = {0};
    for (const char *const *t = texts; t && *t; t++)
        gr_exlist_push(&c->a, &l, tokens && tokens[0] ? cb_layout_text(c, *t, tokens, false, false) : cb_marker(c, *t));
    return l.fail || !l.n ? NULL : gr_ex_alt(&c->a, l.v, l.n);
}

gr_ex_t *cb_ws_run(cb_t *c, int max)
{
    gr_range_t r[2] = {{'\n', '\n'}, {' ', ' '}};
    gr_cset_t cs = {r, 2, 2};
    return gr_ex_rep(&c->a, gr_ex_chars(&c->a, &cs), 0, max);
}

gr_ex_t *cb_short_ws(cb_t *c)
{
    return cb_ws_run(c, 4);
}

/* The reasoning before the constrained part, free text in the format's own
 * markup (reasoning.h): a marker format's block up to one of its close
 * markers, optional unless the prompt opened it (and absent when the
 * prompt did not switch it on, for the toggle formats); gpt-oss's
 * analysis messages before the final or commentary message. NULL with a
 * reply for a format the grammar cannot follow (Muse Glimmer's messages). */
gr_ex_t *cb_reasoning_prefix(cb_t *c, const chat_out_cfg_t *oc, http_req_t *r)
{
    gr_arena_t *a = &c->a;
    if (!oc || oc->reasoning == REASONING_MODE_NONE)
        return gr_ex_empty(a);
    if (oc->reasoning == REASONING_MODE_GPT_OSS) {
        /* [<|channel|>analysis<|message|> ... <|end|><|start|>assistant]... */
        gr_ex_t *parts[] = {cb_marker(c, "<|channel|>"), gr_ex_str(a, "analysis"), cb_marker(c, "<|message|>"),
                            cb_text_without(c, "<|end|>"), cb_marker(c, "<|end|>"), cb_marker(c, "<|start|>"),
                            gr_ex_str(a, "assistant")};
        return gr_ex_rep(a, gr_ex_seq(a, parts, 7), 0, -1);
    }
    const char *generic_open[2] = {oc->reasoning_open, NULL}, *generic_close[2] = {oc->reasoning_close, NULL};
    const char *const *open = generic_open, *const *close = generic_close, *const *tokens = NULL;
    const char *label = NULL;
    reasoning_start_t start = REASONING_START_CONTENT;
    const reasoning_format_t *rf = reasoning_format(oc->reasoning);
    if (rf) {
        open = rf->open;
        close = rf->close;
        label = rf->open_label;
        start = rf->start;
        tokens = rf->tokens;
    }
    if (start == REASONING_START_HARMONY || !close || !close[0] || !open || !open[0]) {
        http_reply_error(r, 400, "structured output and forced tool calls are not supported with this reasoning parser",
                         "reasoning_parser", "unsupported_parameter", NULL);
        c->failed = true;
        return NULL;
    }
    if (start == REASONING_START_TOGGLE && !oc->starts_in_reasoning)
        return gr_ex_empty(a); /* the thinking switch is off: no block */
    size_t n_close = 0;
    while (close[n_close])
        n_close++;
    gr_ex_t *block = gr_ex_seq3(a, cb_text_without_any(c, close, n_close), cb_any_marker(c, close, tokens), cb_short_ws(c));
    if (oc->starts_in_reasoning)
        return block;
    gr_ex_t *opener = cb_any_marker(c, open, tokens);
    if (label && opener)
        opener = gr_ex_seq2(a, opener, gr_ex_opt(a, gr_ex_str(a, label)));
    return gr_ex_opt(a, gr_ex_seq2(a, opener, block));
}

/* What opens the constrained answer after the reasoning: gpt-oss writes
 * it as the final channel's message. */
gr_ex_t *cb_answer_header(cb_t *c, const chat_out_cfg_t *oc)
{
    if (oc && oc->reasoning == REASONING_MODE_GPT_OSS)
        return gr_ex_seq3(&c->a, cb_marker(c, "<|channel|>"), gr_ex_str(&c->a, "final"), cb_marker(c, "<|message|>"));
    return gr_ex_empty(&c->a);
}

gr_ex_t *cb_schema_value(cb_t *c, json_object *schema, bool strict, bool compact, const cb_syntax_t *syn,
                         const char *param, http_req_t *r)
{
    const char *delim = syn ? syn->str_delim : NULL;
    gr_schema_opts_t so = {.strict = strict, .no_whitespace = compact, .lim = &c->lim, .str_delim = delim,
                           .str_delim_ex = delim ? cb_marker(c, delim) : NULL, .escape_lt = syn && syn->in_markup,
                           .doc = syn ? syn->doc : NULL};
    gr_ex_t *v = NULL;
    if (gr_schema_compile(schema, &so, &c->a, &c->R, &v, &c->err) != LF_OK) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s: %s", param, c->err.msg);
        http_reply_error(r, c->err.code == LF_ERR_NOMEM ? 503 : 400, msg, param,
                         c->err.code == LF_ERR_UNSUPPORTED ? "unsupported_parameter" : NULL, NULL);
        c->failed = true;
        return NULL;
    }
    return v;
}

/* Layout text: its free runs of spaces and newlines take 0 to 2 of them
 * (toolcall_layout.h), the others are written as they are; the format's
 * markers in it are accepted as their special token or text. word_left /
 * word_right: the function name is next to that edge. */
