/* logprob.c - stable log-softmax, top-N and ranks (see logprob.h). */
#include "engine/sample/logprob.h"

#include <math.h>

lf_code_t logprob_compute(const float *logits, int32_t n, float *out, lf_err_t *err)
{
    if (n <= 0)
        return lf_err_set(err, LF_ERR_INVALID, "logprob: empty logit vector");
    float mx = -INFINITY;
    for (int32_t t = 0; t < n; t++) {
        float x = logits[t];
        if (isnan(x) || x == INFINITY)
            return lf_err_set(err, LF_ERR_INTERNAL, "logprob: logit of token %d is %s",
                              (int)t, isnan(x) ? "NaN" : "+inf");
        if (x > mx)
            mx = x;
    }
    if (mx == -INFINITY)
        return lf_err_set(err, LF_ERR_INTERNAL, "logprob: every logit is -inf");
    double sum = 0.0;
    for (int32_t t = 0; t < n; t++)
        sum += (double)expf(logits[t] - mx);
    const float lse = (float)log(sum); /* sum >= 1: the max contributes 1 */
    for (int32_t t = 0; t < n; t++)
        out[t] = (logits[t] - mx) - lse;
    return LF_OK;
}

/* a before b in a top list: higher logprob, then lower id */
static int logprob_before(float la, int32_t a, float lb, int32_t b)
{
    return la > lb || (la == lb && a < b);
}

int32_t logprob_top(const float *logprobs, int32_t n, int32_t top_n, logprob_entry_t *out)
{
    if (top_n > LOGPROB_TOP_MAX)
        top_n = LOGPROB_TOP_MAX;
    if (top_n > n)
        top_n = n;
    if (top_n <= 0)
        return 0;
    /* Insertion into a sorted list of at most 20: one compare per token for
     * the common case that it does not enter the list. */
    int32_t have = 0;
    for (int32_t t = 0; t < n; t++) {
        float lp = logprobs[t];
        if (isnan(lp))
            continue;
        if (have == top_n && !logprob_before(lp, t, out[have - 1].logprob, out[have - 1].token))
            continue;
        int32_t i = have < top_n ? have++ : top_n - 1;
        while (i > 0 && logprob_before(lp, t, out[i - 1].logprob, out[i - 1].token)) {
            out[i] = out[i - 1];
            i--;
        }
        out[i].token = t;
        out[i].logprob = lp;
    }
    for (int32_t i = 0; i < have; i++)
        out[i].rank = i + 1;
    return have;
}

lf_code_t logprob_token(const float *logprobs, int32_t n, int32_t token,
                        float *logprob, int32_t *rank, lf_err_t *err)
{
    if (token < 0 || token >= n)
        return lf_err_set(err, LF_ERR_INVALID, "logprob: token %d out of range", (int)token);
    const float lp = logprobs[token];
    if (logprob)
        *logprob = lp;
    if (rank) {
        int32_t r = 1;
        for (int32_t t = 0; t < n; t++)
            if (logprobs[t] > lp)
                r++;
        *rank = r;
    }
    return LF_OK;
}
