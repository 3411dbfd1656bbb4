/* api_chat_out.c - a chat choice whose output is parsed for reasoning and
 * tool calls (chat_output.h), inside a generation run (api_gen.h).
 *
 * Order per token: chat_out (detokenize, reasoning split, call parsing) ->
 * content events through the stop-string matcher (choice_feed: stop
 * strings look at the answer only) -> client; reasoning and tool-call
 * events go to the client as they come (streamed) or stay in the chat_out
 * for the final message. Once a stop string matched, the parsers are
 * finished and only what they still hold of reasoning and calls is kept. */
#include "server/api/api_gen.h"

/* Dispatches events; returns true when a stop string matched (the rest of
 * the content is dropped). */
static bool deliver(run_t *g, size_t idx, const chat_out_ev_t *evs, size_t n, bool content_ok)
{
    bool stopped = false;
    for (size_t i = 0; i < n; i++) {
        const chat_out_ev_t *e = &evs[i];
        if (e->kind == CHAT_OUT_CONTENT) {
            if (content_ok && !stopped && choice_feed(g, idx, e->text, e->len, false))
                stopped = true;
            continue;
        }
        if (g->fmt) {
            if (g->fmt->on_chat)
                g->fmt->on_chat(g, idx, e);
        } else if (g->gen->stream) {
            emit_delta(g, idx, chat_out_delta_json(e));
        }
    }
    return stopped;
}

bool chat_choice_token(run_t *g, size_t idx, int32_t token, bool push)
{
    choice_t *c = &g->ch[idx];
    const chat_out_ev_t *evs;
    size_t n;
    lf_err_t e;
    if (!push || chat_out_push_token(c->co, token, &evs, &n, &e) != LF_OK)
        return false;
    if (!deliver(g, idx, evs, n, true))
        return false;
    if (chat_out_finish(c->co, &evs, &n, &e) == LF_OK)
        deliver(g, idx, evs, n, false);
    return true;
}

bool chat_choice_finish(run_t *g, size_t idx)
{
    choice_t *c = &g->ch[idx];
    const chat_out_ev_t *evs;
    size_t n;
    lf_err_t e;
    bool stopped = false;
    if (chat_out_finish(c->co, &evs, &n, &e) == LF_OK)
        stopped = deliver(g, idx, evs, n, true);
    if (!stopped)
        stopped = choice_feed(g, idx, "", 0, true); /* releases the matcher's hold-back */
    return stopped;
}

const char *choice_finish_reason(const choice_t *c)
{
    if (c->co && c->finish == SCHED_FINISH_STOP && chat_out_n_calls(c->co) > 0)
        return "tool_calls";
    return finish_name(c->finish);
}

json_object *chat_choice_message(const choice_t *c)
{
    return chat_out_message_json_content(c->co, c->text, c->len);
}
