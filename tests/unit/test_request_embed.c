/* test_request_embed.c - the embedding, rerank and score request parsers:
 * a table of bodies with what each must give (inputs, options, or the 400
 * and the field it names), then 20000 mutated bodies (bytes flipped,
 * inserted, deleted, cut) that must parse or fail cleanly (run under
 * --enable-sanitizers for the memory checks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/request/request_embed.h"
#include "tap.h"

typedef struct {
    const char *body;
    int status;        /* 0: parses */
    const char *param; /* the field the error names */
    int n_in;          /* inputs when it parses */
    int n_ids0;        /* ids of input 0 */
    const char *text0; /* text of input 0 (NULL: none) */
} ecase_t;

static const ecase_t ecases[] = {
    {"{\"input\":\"Hello\"}", 0, NULL, 1, 0, "Hello"},
    {"{\"input\":[\"a\",\"b\",\"\"]}", 0, NULL, 3, 0, "a"},
    {"{\"input\":[1,2,3]}", 0, NULL, 1, 3, NULL},
    {"{\"input\":[[1,2],[3]]}", 0, NULL, 2, 2, NULL},
    {"{\"input\":[\"Hello\",2088]}", 0, NULL, 1, 1, "Hello"},
    {"{\"input\":[[\"x\",5],\"y\"]}", 0, NULL, 2, 1, "x"},
    {"{\"content\":\"Hello\"}", 0, NULL, 1, 0, "Hello"},
    {"{\"input\":[]}", 400, "input", 0, 0, NULL},
    {"{\"input\":[[]]}", 400, "input", 0, 0, NULL},
    {"{}", 400, "input", 0, 0, NULL},
    {"{\"input\":null}", 400, "input", 0, 0, NULL},
    {"{\"input\":5}", 400, "input", 0, 0, NULL},
    {"{\"input\":[1.5]}", 400, "input", 0, 0, NULL},
    {"{\"input\":[-1]}", 400, "input", 0, 0, NULL},
    {"{\"input\":[99999999999]}", 400, "input", 0, 0, NULL},
    {"{\"input\":[{}]}", 400, "input", 0, 0, NULL},
    {"{\"input\":[5,\"late text\"]}", 400, "input", 0, 0, NULL},
    {"{\"input\":\"x\",\"encoding_format\":\"int8\"}", 400, "encoding_format", 0, 0, NULL},
    {"{\"input\":\"x\",\"dimensions\":0}", 400, "dimensions", 0, 0, NULL},
    {"{\"input\":\"x\",\"dimensions\":\"8\"}", 400, "dimensions", 0, 0, NULL},
    {"{\"input\":\"x\",\"embd_normalize\":-2}", 400, "embd_normalize", 0, 0, NULL},
    {"{\"input\":\"x\",\"truncate_prompt_tokens\":0}", 400, "truncate_prompt_tokens", 0, 0, NULL},
    {"{\"input\":\"x\",\"truncation_direction\":\"up\"}", 400, "truncation_direction", 0, 0, NULL},
    {"{\"input\":\"x\",\"model\":5}", 400, "model", 0, 0, NULL},
    {"[\"x\"]", 400, NULL, 0, 0, NULL},
    {"not json", 400, NULL, 0, 0, NULL},
};

static void test_embed_table(void)
{
    for (size_t i = 0; i < sizeof ecases / sizeof ecases[0]; i++) {
        const ecase_t *c = &ecases[i];
        embed_req_t q;
        req_err_t e;
        memset(&e, 0, sizeof e);
        int rc = req_embed_parse(c->body, strlen(c->body), EMBED_SHAPE_OPENAI, &q, &e);
        bool ok;
        if (c->status == 0)
            ok = rc == 0 && q.n_in == c->n_in && q.in[0].n_ids == c->n_ids0 &&
                 (c->text0 ? q.in[0].text && !strcmp(q.in[0].text, c->text0) : !q.in[0].text);
        else
            ok = rc < 0 && e.status == c->status && (!c->param || !strcmp(e.param, c->param));
        if (!tap_ok(ok, "embeddings %s", c->body))
            tap_diag("rc %d status %d param '%s' msg %s", rc, e.status, e.param, e.msg);
        if (rc == 0)
            req_embed_free(&q);
    }
    embed_req_t q;
    req_err_t e;
    tap_ok(req_embed_parse("{\"inputs\":[\"a\"],\"normalize\":false,\"truncate\":true,\"truncation_direction\":\"Left\"}",
                           87, EMBED_SHAPE_TEI, &q, &e) == 0 &&
               q.normalize == -1 && q.truncate == -1 && q.trunc_left && q.shape == EMBED_SHAPE_TEI,
           "TEI: inputs, normalize false, truncate, Left");
    req_embed_free(&q);
    tap_ok(req_embed_parse("{\"input\":\"a\",\"encoding_format\":\"base64\",\"dimensions\":8,\"embd_normalize\":-1}", 76,
                           EMBED_SHAPE_OPENAI, &q, &e) == 0 &&
               q.base64 && q.dimensions == 8 && q.normalize == -1,
           "OpenAI: base64, dimensions, embd_normalize");
    req_embed_free(&q);
}

static void test_rerank_table(void)
{
    rerank_req_t q;
    req_err_t e;
    const char *b = "{\"query\":\"q\",\"documents\":[\"a\",{\"text\":\"b\"}],\"top_n\":1,\"return_documents\":true}";
    tap_ok(req_rerank_parse(b, strlen(b), &q, &e) == 0 && q.n_docs == 2 && !strcmp(q.docs[1].s, "b") &&
               q.top_n == 1 && q.return_documents && !q.tei,
           "rerank: documents as strings and {text}, top_n, return_documents");
    req_rerank_free(&q);
    b = "{\"query\":\"q\",\"texts\":[\"a\"],\"raw_scores\":true,\"return_text\":true}";
    tap_ok(req_rerank_parse(b, strlen(b), &q, &e) == 0 && q.tei && q.raw_scores == 1 && q.return_text &&
               q.top_n == 1,
           "rerank: TEI's texts, raw_scores, return_text");
    req_rerank_free(&q);
    const char *bad[][2] = {{"{\"query\":\"q\"}", "documents"}, {"{\"query\":\"q\",\"documents\":[]}", "documents"},
                            {"{\"query\":5,\"documents\":[\"a\"]}", "query"}, {"{\"documents\":[\"a\"]}", "query"},
                            {"{\"query\":\"q\",\"documents\":[5]}", "documents"},
                            {"{\"query\":\"q\",\"texts\":[]}", "texts"},
                            {"{\"query\":\"q\",\"documents\":[\"a\"],\"top_n\":-1}", "top_n"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&e, 0, sizeof e);
        int rc = req_rerank_parse(bad[i][0], strlen(bad[i][0]), &q, &e);
        tap_ok(rc < 0 && e.status == 400 && !strcmp(e.param, bad[i][1]), "rerank %s: 400 naming %s (%s)", bad[i][0],
               bad[i][1], e.msg);
    }
    score_req_t s;
    b = "{\"text_1\":\"a\",\"text_2\":[\"b\",\"c\"]}";
    tap_ok(req_score_parse(b, strlen(b), &s, &e) == 0 && s.n1 == 1 && s.n2 == 2, "score: one to many");
    req_score_free(&s);
    b = "{\"text_1\":[\"a\",\"b\"],\"text_2\":[\"b\",\"c\",\"d\"]}";
    tap_ok(req_score_parse(b, strlen(b), &s, &e) < 0 && !strcmp(e.param, "text_1"), "score: 2 against 3 refused");
    const char *sn[4] = {"{\"query\":\"a\",\"texts\":[]}", "{\"inputs\":\"a\"}", "{\"text_1\":\"a\"}", "{}"};
    tap_ok(req_embed_sniff(sn[0], strlen(sn[0])) == 'r' && req_embed_sniff(sn[1], strlen(sn[1])) == 'e' &&
               req_embed_sniff(sn[2], strlen(sn[2])) == 's' && req_embed_sniff(sn[3], strlen(sn[3])) == 0,
           "invocations: the body tells the request");
}

static uint64_t rng = 2463534242ull;
static uint32_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static void test_fuzz(void)
{
    const char *seeds[] = {"{\"input\":[\"Hello\",[1,2,3],[\"x\",5]],\"encoding_format\":\"base64\",\"dimensions\":8}",
                           "{\"inputs\":[\"a\",\"b\"],\"truncate\":true,\"truncation_direction\":\"left\"}",
                           "{\"query\":\"q\",\"documents\":[\"a\",{\"text\":\"b\"}],\"top_n\":1,\"raw_scores\":false}",
                           "{\"text_1\":[\"a\",\"b\"],\"text_2\":[\"c\",\"d\"],\"truncate_prompt_tokens\":5}"};
    const char alphabet[] = "{}[]\":,0123456789-.etruaflsnx\\ \xff\xc3";
    char buf[512];
    int ok = 0, total = 20000;
    for (int i = 0; i < total; i++) {
        const char *sd = seeds[i % 4];
        size_t n = strlen(sd);
        memcpy(buf, sd, n);
        for (int k = 1 + (int)(next() % 4); k > 0; k--) {
            size_t at = next() % (n + 1);
            switch (next() % 4) {
            case 0: if (at < n) buf[at] = alphabet[next() % (sizeof alphabet - 1)]; break;
            case 1: if (n < sizeof buf - 1) { memmove(buf + at + 1, buf + at, n - at); buf[at] = alphabet[next() % (sizeof alphabet - 1)]; n++; } break;
            case 2: if (at < n) { memmove(buf + at, buf + at + 1, n - at - 1); n--; } break;
            default: n = at; break;
            }
        }
        buf[n] = '\0';
        req_err_t e;
        embed_req_t q;
        rerank_req_t r;
        score_req_t s;
        int a = req_embed_parse(buf, n, EMBED_SHAPE_OPENAI, &q, &e);
        if (a == 0)
            req_embed_free(&q);
        else
            ok += e.status == 400 || e.status == 500 ? 0 : -1000000;
        if (req_rerank_parse(buf, n, &r, &e) == 0)
            req_rerank_free(&r);
        if (req_score_parse(buf, n, &s, &e) == 0)
            req_score_free(&s);
        (void)req_embed_sniff(buf, n);
        ok++;
    }
    tap_ok(ok == total, "%d mutated bodies parse or fail with a 400, nothing else", total);
}

int main(void)
{
    test_embed_table();
    test_rerank_table();
    test_fuzz();
    return tap_done();
}
