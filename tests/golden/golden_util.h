/* golden_util.h - small helpers the golden tests share: token id arrays
 * and top-5 lists of the golden JSON records (golden/README.md section 1),
 * and the argmax of a logits row. Header-only (static inline). */
#ifndef LF_GOLDEN_UTIL_H
#define LF_GOLDEN_UTIL_H

#include <json-c/json.h>
#include <math.h>
#include <stdint.h>

/* The first cap ids of a JSON array of integers into out; returns how many. */
static inline int ids_of(json_object *arr, int32_t *out, int cap)
{
    int n = (int)json_object_array_length(arr);
    if (n > cap)
        n = cap;
    for (int i = 0; i < n; i++)
        out[i] = json_object_get_int(json_object_array_get_idx(arr, (size_t)i));
    return n;
}

/* The index of the largest of logits[0..n) (the first on ties). */
static inline int argmax(const float *logits, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best])
            best = i;
    return best;
}

/* The golden top1 - top2 logprob gap of a step's top list (inf if < 2). */
static inline double golden_gap(json_object *top)
{
    if (json_object_array_length(top) < 2)
        return INFINITY;
    double a = json_object_get_double(json_object_object_get(json_object_array_get_idx(top, 0), "logprob"));
    double b = json_object_get_double(json_object_object_get(json_object_array_get_idx(top, 1), "logprob"));
    return a - b;
}

#endif
