/* test_server_request.c - JSON request validation: every error class maps to
 * the right status and `param`, valid bodies give the right typed struct. */
#include "server/request/request.h"
#include "tap.h"
#include "unit/mutate.h"

#include <string.h>

typedef struct {
    const char *name;
    const char *body;
    int status;           /* 0: must parse */
    const char *param;    /* expected param ("" = null) */
} case_t;

static const case_t chat_cases[] = {
    {"minimal chat", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", 0, ""},
    {"text parts", "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]}]}", 0, ""},
    {"all roles", "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"developer\",\"content\":\"d\"},{\"role\":\"user\",\"content\":\"u\"},{\"role\":\"assistant\",\"content\":null},{\"role\":\"tool\",\"content\":\"t\",\"tool_call_id\":\"c1\"}]}", 0, ""},
    {"neutral defaults allowed", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_p\":1,\"n\":1,\"stop\":null,\"frequency_penalty\":0,\"logprobs\":false,\"user\":\"u\"}", 0, ""},
    {"not json", "{\"messages\":", 400, ""},
    {"empty body", "", 400, ""},
    {"array body", "[1,2]", 400, ""},
    {"trailing garbage", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]} x", 400, ""},
    {"missing messages", "{}", 400, "messages"},
    {"messages not array", "{\"messages\":\"hi\"}", 400, "messages"},
    {"empty messages", "{\"messages\":[]}", 400, "messages"},
    {"bad role", "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", 400, "messages[0].role"},
    {"missing content", "{\"messages\":[{\"role\":\"user\"}]}", 400, "messages[0].content"},
    {"content number", "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", 400, "messages[0].content"},
    {"image part", "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}}]}]}", 0, ""},
    {"image_url as a string", "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":\"x\"}]}]}", 0, ""},
    {"image detail bad", "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\",\"detail\":\"max\"}}]}]}", 400, "messages[0].content[0]"},
    {"image part without url", "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]}", 400, "messages[0].content[0]"},
    {"audio part", "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\"}]}]}", 400, "messages[0].content"},
    {"max_tokens string", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":\"5\"}", 400, "max_tokens"},
    {"max_tokens zero", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":0}", 400, "max_tokens"},
    {"max_completion_tokens negative", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_completion_tokens\":-3}", 400, "max_completion_tokens"},
    {"temperature high", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":2.5}", 400, "temperature"},
    {"temperature string", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":\"hot\"}", 400, "temperature"},
    {"stream not bool", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":1}", 400, "stream"},
    {"stream_options without stream", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream_options\":{\"include_usage\":true}}", 400, "stream_options"},
    {"model not string", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"model\":3}", 400, "model"},
    {"top_p out of range", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_p\":1.5}", 400, "top_p"},
    {"n zero", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":0}", 400, "n"},
    {"stop number", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[1]}", 400, "stop"},
    {"tools malformed", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\"}]}", 400, "tools"},
    {"seed not int", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"seed\":1.5}", 400, "seed"},
};

static const case_t cmpl_cases[] = {
    {"string prompt", "{\"prompt\":\"hi\"}", 0, ""},
    {"strings prompt", "{\"prompt\":[\"a\",\"b\",\"c\"]}", 0, ""},
    {"ids prompt", "{\"prompt\":[1,2,3]}", 0, ""},
    {"ids arrays prompt", "{\"prompt\":[[1,2],[3]]}", 0, ""},
    {"missing prompt", "{}", 400, "prompt"},
    {"empty prompt array", "{\"prompt\":[]}", 400, "prompt"},
    {"mixed prompt", "{\"prompt\":[\"a\",1]}", 400, "prompt"},
    {"negative id", "{\"prompt\":[1,-2]}", 400, "prompt"},
    {"prompt object", "{\"prompt\":{}}", 400, "prompt"},
    {"echo not bool", "{\"prompt\":\"x\",\"echo\":1}", 400, "echo"},
    {"logprobs above 5", "{\"prompt\":\"x\",\"logprobs\":6}", 400, "logprobs"},
    {"best_of unsupported", "{\"prompt\":\"x\",\"best_of\":3}", 400, "best_of"},
};

int main(void)
{
    for (size_t i = 0; i < sizeof chat_cases / sizeof chat_cases[0]; i++) {
        const case_t *c = &chat_cases[i];
        chat_req_t q;
        req_err_t e = {0};
        int rc = req_chat_parse(c->body, strlen(c->body), &q, &e);
        if (c->status == 0) {
            tap_ok(rc == 0, "chat: %s parses%s%s", c->name, rc ? ": " : "", rc ? e.msg : "");
            if (rc == 0)
                req_chat_free(&q);
        } else {
            tap_ok(rc < 0 && e.status == c->status && !strcmp(e.param, c->param),
                   "chat: %s -> %d param '%s' (got %d '%s': %s)", c->name, c->status, c->param, e.status, e.param,
                   e.msg);
        }
    }
    for (size_t i = 0; i < sizeof cmpl_cases / sizeof cmpl_cases[0]; i++) {
        const case_t *c = &cmpl_cases[i];
        cmpl_req_t q;
        req_err_t e = {0};
        int rc = req_cmpl_parse(c->body, strlen(c->body), &q, &e);
        if (c->status == 0) {
            tap_ok(rc == 0, "completion: %s parses%s%s", c->name, rc ? ": " : "", rc ? e.msg : "");
            if (rc == 0)
                req_cmpl_free(&q);
        } else {
            tap_ok(rc < 0 && e.status == c->status && !strcmp(e.param, c->param),
                   "completion: %s -> %d param '%s' (got %d '%s': %s)", c->name, c->status, c->param, e.status,
                   e.param, e.msg);
        }
    }

    /* field values */
    chat_req_t q;
    req_err_t e;
    const char *b = "{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"ab\"},"
                    "{\"type\":\"text\",\"text\":\"cd\"}]}],\"max_tokens\":7,\"max_completion_tokens\":9,"
                    "\"temperature\":0,\"stream\":true,\"stream_options\":{\"include_usage\":true},\"seed\":42}";
    if (tap_ok(req_chat_parse(b, strlen(b), &q, &e) == 0, "chat with every field parses")) {
        tap_ok(q.n_msgs == 1 && q.msgs[0].role == CHAT_ROLE_DEVELOPER && !strcmp(q.msgs[0].content, "abcd"),
               "text parts are joined");
        tap_ok(q.gen.max_tokens == 9, "max_completion_tokens wins over max_tokens");
        tap_ok(q.gen.temperature == 0.0f && q.gen.stream && q.gen.include_usage, "temperature/stream/usage");
        tap_ok(q.gen.has_seed && q.gen.seed == 42 && !strcmp(q.gen.model, "m"), "seed and model");
        req_chat_free(&q);
    }
    /* image parts: recorded in order, CHAT_MEDIA_MARKER in the content,
     * text parts joined with "\n" except next to an image */
    b = "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"},"
        "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AA\",\"detail\":\"low\"}},"
        "{\"type\":\"text\",\"text\":\"c\"}]},{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":\"u2\"}]}]}";
    if (tap_ok(req_chat_parse(b, strlen(b), &q, &e) == 0, "chat with image parts parses")) {
        tap_ok(!strcmp(q.msgs[0].content, "a\nb<__media__>c") && !strcmp(q.msgs[1].content, "<__media__>"),
               "image parts become markers");
        tap_ok(q.n_images == 2 && !strcmp(q.images[0].url, "data:image/png;base64,AA") &&
                   !strcmp(q.images[0].param, "messages[0].content[2]") && !strcmp(q.images[1].url, "u2") &&
                   !strcmp(q.images[1].param, "messages[1].content[0]"),
               "images recorded in order with their part names");
        req_chat_free(&q);
    }
    b = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
    if (tap_ok(req_chat_parse(b, strlen(b), &q, &e) == 0, "defaults parse")) {
        tap_ok(q.gen.max_tokens == -1 && q.gen.temperature == 1.0f && !q.gen.stream && !q.gen.model,
               "defaults: no max_tokens, temperature 1, no stream, no model");
        req_chat_free(&q);
    }
    cmpl_req_t c;
    b = "{\"prompt\":[[5,6,7],[8]]}";
    if (tap_ok(req_cmpl_parse(b, strlen(b), &c, &e) == 0, "token arrays parse")) {
        tap_ok(c.n_prompts == 2 && !c.texts && c.n_toks[0] == 3 && c.toks[0][2] == 7 && c.n_toks[1] == 1 &&
                   c.toks[1][0] == 8, "token arrays kept in order");
        req_cmpl_free(&c);
    }
    b = "{\"prompt\":[\"x\",\"yy\"]}";
    if (tap_ok(req_cmpl_parse(b, strlen(b), &c, &e) == 0, "string array parses")) {
        tap_ok(c.n_prompts == 2 && !strcmp(c.texts[1], "yy"), "string prompts kept in order");
        req_cmpl_free(&c);
    }
    const struct { const char *body; req_kind_t kind; } sniff[] = {
        {"{\"messages\":[]}", REQ_KIND_CHAT}, {"{\"prompt\":\"x\"}", REQ_KIND_COMPLETION},
        {"{\"inputs\":\"x\"}", REQ_KIND_TGI}, {"nope", REQ_KIND_NONE}, {"{\"input\":\"x\"}", REQ_KIND_NONE}};
    for (size_t i = 0; i < 5; i++)
        tap_ok(req_sniff_kind(sniff[i].body, strlen(sniff[i].body)) == sniff[i].kind, "invocations sniff %zu", i);
    tokenize_req_t t;
    b = "{\"prompt\":\"hello\",\"add_special_tokens\":false}";
    if (tap_ok(req_tokenize_parse(b, strlen(b), &t, &e) == 0, "tokenize parses")) {
        tap_ok(!strcmp(t.prompt, "hello") && !t.add_special, "tokenize fields");
        req_tokenize_free(&t);
    }
    detok_req_t d;
    b = "{\"tokens\":[1,2,\"x\"]}";
    tap_ok(req_detok_parse(b, strlen(b), &d, &e) < 0 && !strcmp(e.param, "tokens"), "detokenize rejects non-ids");

    /* mutation fuzzing: flipped, dropped and duplicated bytes of valid
     * bodies must give 0 or a filled 4xx error, never a crash (run under
     * ASan/valgrind); fixed seed so the cases are the same every run */
    const char *seeds[] = {chat_cases[2].body, chat_cases[1].body, cmpl_cases[3].body, cmpl_cases[1].body,
                           "{\"prompt\":\"x\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"temperature\":0.5}"};
    unsigned long long rng = 12345;
    int bad = 0, total = 0;
    char buf[1024];
    for (int round = 0; round < 4000; round++) {
        const char *src = seeds[round % 5];
        size_t len = strlen(src);
        memcpy(buf, src, len + 1);
        mutate(buf, &len, sizeof buf, &rng, 1 + round % 4);
        req_err_t fe = {0};
        chat_req_t fq;
        cmpl_req_t fc;
        int rc1 = req_chat_parse(buf, len, &fq, &fe);
        if (rc1 == 0)
            req_chat_free(&fq);
        else if (fe.status < 400 || fe.status > 503 || !fe.msg[0])
            bad++;
        int rc2 = req_cmpl_parse(buf, len, &fc, &fe);
        if (rc2 == 0)
            req_cmpl_free(&fc);
        else if (fe.status < 400 || fe.status > 503 || !fe.msg[0])
            bad++;
        req_sniff_kind(buf, len);
        total += 2;
    }
    tap_ok(bad == 0, "fuzzed bodies: %d parses, every failure has a status and a message (%d bad)", total, bad);
    return tap_done();
}
