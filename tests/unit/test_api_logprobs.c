/* test_api_logprobs.c - the logprobs JSON shapes (chat, legacy completions,
 * vLLM prompt_logprobs) on the real stories260K vocabulary: byte-fallback
 * tokens, -inf, duplicates. Skips when the fixture model is missing. */
#include "server/api/api_logprobs.h"
#include "tap.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *js(json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

int main(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/stories260K.gguf", tap_env_dir("LLM_MODELS_DIR", "../shared/models"));
    lf_err_t err = {0};
    model_t *m = model_load(path, &err);
    if (!tap_ok(m != NULL, "model loads (%s)", err.msg))
        return tap_done();
    const vocab_t *v = model_vocab(m);
    char buf[256];

    /* token strings */
    const struct { int32_t id; const char *want; } strs[] = {
        {403, " Once"}, {432, ","}, {233, "bytes:\\xe6"}, {1, "<s>"}, {2, "</s>"},
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        tap_ok(!strcmp(lp_token_str(v, strs[i].id, buf, sizeof buf), strs[i].want), "token %d -> '%s' (got '%s')",
               strs[i].id, strs[i].want, buf);

    /* chat entry */
    sched_lp_t lp = {.has = true, .token = 233, .logprob = -1.5f, .rank = 2, .n_top = 2,
                     .top = {{403, -0.25f, 1}, {233, -1.5f, 2}}};
    json_object *o = lp_chat_entry(v, &lp);
    tap_ok(!strcmp(js(o), "{\"token\":\"bytes:\\\\xe6\",\"logprob\":-1.5,\"bytes\":[230],\"top_logprobs\":["
                          "{\"token\":\" Once\",\"logprob\":-0.25,\"bytes\":[32,79,110,99,101]},"
                          "{\"token\":\"bytes:\\\\xe6\",\"logprob\":-1.5,\"bytes\":[230]}]}"),
           "chat entry: OpenAI shape, exact bytes (%s)", js(o));
    json_object_put(o);
    sched_lp_t inf = {.has = true, .token = 432, .logprob = -INFINITY, .rank = 500, .n_top = 0};
    o = lp_chat_entry(v, &inf);
    tap_ok(strstr(js(o), "\"logprob\":-9999") != NULL, "a -inf logprob is written as -9999 (valid JSON)");
    json_object_put(o);

    /* legacy */
    lp_legacy_t l;
    lp_legacy_init(&l);
    lp_legacy_add(&l, v, 1, NULL, 0);
    sched_lp_t a = {.has = true, .token = 403, .logprob = -0.25f, .rank = 1, .n_top = 1, .top = {{403, -0.25f, 1}}};
    lp_legacy_add(&l, v, 403, &a, 0);
    o = lp_legacy_take(&l);
    tap_ok(!strcmp(js(o), "{\"tokens\":[\"<s>\",\" Once\"],\"token_logprobs\":[null,-0.25],"
                          "\"top_logprobs\":[null,{\" Once\":-0.25}],\"text_offset\":[0,0]}"),
           "legacy shape, first prompt token null (%s)", js(o));
    json_object_put(o);
    lp_legacy_free(&l); /* after take: empty, must not double free */
    lp_legacy_init(&l);
    lp_legacy_free(&l);
    tap_ok(1, "legacy init/free without take");

    /* prompt logprobs */
    sched_prompt_lp_t *p = calloc(1, sizeof *p + 2 * sizeof(sched_lp_t));
    p->n = 2;
    p->e[1] = (sched_lp_t){.has = true, .token = 403, .logprob = -0.25f, .rank = 1, .n_top = 2,
                           .top = {{403, -0.25f, 1}, {410, -4.0f, 2}}};
    o = lp_prompt_json(v, p);
    tap_ok(!strcmp(js(o), "[null,{\"403\":{\"logprob\":-0.25,\"rank\":1,\"decoded_token\":\" Once\"},"
                          "\"410\":{\"logprob\":-4.0,\"rank\":2,\"decoded_token\":\" \"}}]"),
           "prompt_logprobs: vLLM shape, prompt token once (%s)", js(o));
    json_object_put(o);
    free(p);
    model_free(m);
    return tap_done();
}
