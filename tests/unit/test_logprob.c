/* test_logprob.c - log-softmax against hand values, top-N and ranks. */
#include "engine/sample/logprob.h"
#include "tap.h"

#include <math.h>
#include <string.h>

typedef struct {
    const char *name;
    int n;
    float logits[6];
    double want[6];
} lcase_t;

static const lcase_t lcases[] = {
    {"two equal", 2, {0, 0}, {-0.69314718, -0.69314718}},
    {"1,2,3", 3, {1, 2, 3}, {-2.40760596, -1.40760596, -0.40760596}},
    {"shift invariant (1001..1003)", 3, {1001, 1002, 1003}, {-2.40760596, -1.40760596, -0.40760596}},
    {"huge negatives", 2, {-1e4f, -1e4f - 1.0f}, {-0.31326169, -1.31326169}},
    {"one -inf", 3, {-INFINITY, 0, 0}, {-INFINITY, -0.69314718, -0.69314718}},
    {"single token", 1, {7}, {0}},
    {"underflowing token stays finite", 2, {0, -200}, {0, -200}},
};

static void test_compute(void)
{
    for (size_t i = 0; i < sizeof(lcases) / sizeof(lcases[0]); i++) {
        const lcase_t *c = &lcases[i];
        float out[6];
        lf_err_t err;
        int ok = logprob_compute(c->logits, c->n, out, &err) == LF_OK;
        double md = 0;
        for (int t = 0; ok && t < c->n; t++) {
            if (isinf(c->want[t]))
                ok = isinf(out[t]) && out[t] < 0;
            else
                md = fmax(md, fabs(out[t] - c->want[t]));
        }
        tap_ok(ok && md < 2e-6, "log-softmax %s (max diff %.2g)", c->name, md);
    }
    /* agrees with llama.cpp's float recipe log(softmax) for normal p */
    float logits[50], out[50];
    for (int t = 0; t < 50; t++)
        logits[t] = (float)((t * 37) % 23) * 0.41f - 3.0f;
    logprob_compute(logits, 50, out, NULL);
    float mx = logits[0], sum = 0;
    for (int t = 0; t < 50; t++)
        mx = fmaxf(mx, logits[t]);
    for (int t = 0; t < 50; t++)
        sum += expf(logits[t] - mx);
    double md = 0, total = 0;
    for (int t = 0; t < 50; t++) {
        md = fmax(md, fabs(out[t] - logf(expf(logits[t] - mx) / sum)));
        total += exp(out[t]);
    }
    tap_ok(md < 1e-5 && fabs(total - 1) < 1e-5, "matches log(float softmax), sums to 1");

    lf_err_t err;
    float bad[2] = {NAN, 0};
    tap_ok(logprob_compute(bad, 2, out, &err) == LF_ERR_INTERNAL, "NaN rejected");
    float ninf[2] = {-INFINITY, -INFINITY};
    tap_ok(logprob_compute(ninf, 2, out, &err) == LF_ERR_INTERNAL, "all -inf rejected");
    tap_ok(logprob_compute(ninf, 0, out, &err) == LF_ERR_INVALID, "empty rejected");
    float inplace[3] = {1, 2, 3};
    logprob_compute(inplace, 3, inplace, NULL);
    tap_ok(fabsf(inplace[2] + 0.40760596f) < 2e-6f, "in place works");
}

static void test_top(void)
{
    const float lp[8] = {-3, -1, -2, -1, -0.5f, -7, -2, -9};
    logprob_entry_t top[LOGPROB_TOP_MAX];
    int32_t n = logprob_top(lp, 8, 5, top);
    const int32_t want_tok[5] = {4, 1, 3, 2, 6};
    int ok = n == 5;
    for (int i = 0; ok && i < 5; i++)
        ok = top[i].token == want_tok[i] && top[i].rank == i + 1 && top[i].logprob == lp[want_tok[i]];
    tap_ok(ok, "top-5 best first, ties by lowest id, ranks 1..5");
    tap_ok(logprob_top(lp, 8, 0, top) == 0, "top 0 -> nothing");
    tap_ok(logprob_top(lp, 8, 50, top) == 8 && top[7].token == 7, "top clamps to n");
    float big[100];
    for (int t = 0; t < 100; t++)
        big[t] = -(float)t;
    tap_ok(logprob_top(big, 100, 25, top) == LOGPROB_TOP_MAX && top[19].token == 19,
           "top clamps to 20");

    struct {
        int32_t tok, rank;
    } rc[] = {{4, 1}, {1, 2}, {3, 2}, {2, 4}, {6, 4}, {0, 6}, {5, 7}, {7, 8}};
    ok = 1;
    for (size_t i = 0; i < sizeof(rc) / sizeof(rc[0]); i++) {
        float v;
        int32_t r;
        ok = ok && logprob_token(lp, 8, rc[i].tok, &v, &r, NULL) == LF_OK && r == rc[i].rank &&
             v == lp[rc[i].tok];
    }
    tap_ok(ok, "token rank = 1 + strictly better (ties share)");
    lf_err_t err;
    tap_ok(logprob_token(lp, 8, 8, NULL, NULL, &err) == LF_ERR_INVALID, "token out of range");
}

int main(void)
{
    test_compute();
    test_top();
    return tap_done();
}
