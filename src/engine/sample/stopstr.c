/* stopstr.c - stop-string matcher for streamed text (see stopstr.h).
 *
 * buf[0..len) is the text not yet released plus, at its front, the bytes the
 * previous call released (`released`): they stay until the next call so the
 * pointer handed out remains valid, then are dropped. Text that was released
 * can never contain the start of a match (that is exactly what holding back
 * guarantees), so only buf needs searching. Matching is a plain scan: stop
 * strings are short and the buffer is one chunk plus a short tail.
 */
#include "engine/sample/stopstr.h"

#include <stdlib.h>
#include <string.h>

struct stopstr {
    char **stops;
    size_t *lens;
    int32_t n;
    bool include;
    bool active;
    bool done;
    int32_t matched;

    char *buf;
    size_t len, cap;
    size_t released;  /* prefix of buf handed out by the previous call */
    size_t quiet_end; /* matches must end after this offset (inactive text) */
};

stopstr_t *stopstr_create(const char *const *stops, const size_t *lens, int32_t n,
                          bool include_stop_str_in_output, lf_err_t *err)
{
    if (n < 0 || (n > 0 && !stops)) {
        lf_err_set(err, LF_ERR_INVALID, "stop: malformed list");
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) {
        if (!stops[i] || (lens ? lens[i] : strlen(stops[i])) == 0) {
            lf_err_set(err, LF_ERR_INVALID, "stop: stop string %d is empty", (int)i);
            return NULL;
        }
    }
    stopstr_t *ss = calloc(1, sizeof(*ss));
    if (!ss)
        goto nomem;
    ss->include = include_stop_str_in_output;
    ss->active = true;
    ss->matched = -1;
    ss->stops = calloc((size_t)(n > 0 ? n : 1), sizeof(*ss->stops));
    ss->lens = calloc((size_t)(n > 0 ? n : 1), sizeof(*ss->lens));
    if (!ss->stops || !ss->lens)
        goto nomem;
    ss->n = n;
    for (int32_t i = 0; i < n; i++) {
        size_t l = lens ? lens[i] : strlen(stops[i]);
        ss->stops[i] = malloc(l);
        if (!ss->stops[i])
            goto nomem;
        memcpy(ss->stops[i], stops[i], l);
        ss->lens[i] = l;
    }
    return ss;
nomem:
    stopstr_free(ss);
    lf_err_set(err, LF_ERR_NOMEM, "stop: out of memory");
    return NULL;
}

void stopstr_free(stopstr_t *ss)
{
    if (!ss)
        return;
    if (ss->stops)
        for (int32_t i = 0; i < ss->n; i++)
            free(ss->stops[i]);
    free(ss->stops);
    free(ss->lens);
    free(ss->buf);
    free(ss);
}

void stopstr_set_active(stopstr_t *ss, bool active)
{
    ss->active = active;
}

size_t stopstr_held(const stopstr_t *ss)
{
    return ss->len - ss->released;
}

int32_t stopstr_matched(const stopstr_t *ss)
{
    return ss->matched;
}

static void stopstr_out_empty(const stopstr_t *ss, stopstr_out_t *out)
{
    memset(out, 0, sizeof(*out));
    out->text = ss->buf ? ss->buf : "";
    out->stop_index = -1;
    out->done = ss->done;
}

/* Drops what the previous call released. */
static void stopstr_compact(stopstr_t *ss)
{
    if (ss->released == 0)
        return;
    memmove(ss->buf, ss->buf + ss->released, ss->len - ss->released);
    ss->len -= ss->released;
    ss->quiet_end = ss->quiet_end > ss->released ? ss->quiet_end - ss->released : 0;
    ss->released = 0;
}

/* First occurrence of needle in hay[from..hlen), or -1. */
static long stopstr_find(const char *hay, size_t hlen, size_t from, const char *needle,
                         size_t nlen)
{
    if (nlen > hlen)
        return -1;
    for (size_t i = from; i + nlen <= hlen; i++) {
        const char *p = memchr(hay + i, (unsigned char)needle[0], hlen - nlen + 1 - i);
        if (!p)
            return -1;
        i = (size_t)(p - hay);
        if (memcmp(p, needle, nlen) == 0)
            return (long)i;
    }
    return -1;
}

/* Length of the byte sequence a UTF-8 lead byte announces (1 for ASCII and
 * for bytes that cannot start a character, so they are released alone). */
static size_t stopstr_utf8_len(unsigned char c)
{
    if (c < 0xC0)
        return 1;
    if (c < 0xE0)
        return 2;
    if (c < 0xF0)
        return 3;
    if (c < 0xF8)
        return 4;
    return 1;
}

/* Moves cut back so buf[0..cut) does not end inside a character whose bytes
 * are incomplete there. */
static size_t stopstr_utf8_cut(const char *buf, size_t cut)
{
    size_t j = cut;
    int back = 0;
    while (j > 0 && back < 4 && ((unsigned char)buf[j - 1] & 0xC0) == 0x80) {
        j--;
        back++;
    }
    if (j == 0 || back >= 4)
        return cut; /* stray continuation bytes: release as they are */
    size_t lead = j - 1;
    if (lead + stopstr_utf8_len((unsigned char)buf[lead]) > cut)
        return lead;
    return cut;
}

lf_code_t stopstr_feed(stopstr_t *ss, const char *chunk, size_t len,
                       stopstr_out_t *out, lf_err_t *err)
{
    stopstr_compact(ss);
    if (ss->done) {
        ss->len = 0;
        stopstr_out_empty(ss, out);
        return LF_OK;
    }
    if (len > 0) {
        if (ss->len + len > ss->cap) {
            size_t cap = ss->cap ? ss->cap : 64;
            while (cap < ss->len + len)
                cap *= 2;
            char *nb = realloc(ss->buf, cap);
            if (!nb) {
                stopstr_out_empty(ss, out);
                return lf_err_set(err, LF_ERR_NOMEM, "stop: out of memory");
            }
            ss->buf = nb;
            ss->cap = cap;
        }
        memcpy(ss->buf + ss->len, chunk, len);
        ss->len += len;
    }
    if (!ss->active)
        ss->quiet_end = ss->len;
    stopstr_out_empty(ss, out);

    /* The match that ends first; ties go to the longer string. */
    long best_pos = -1;
    size_t best_end = 0;
    int32_t best = -1;
    for (int32_t k = 0; k < ss->n; k++) {
        size_t sl = ss->lens[k];
        size_t from = ss->quiet_end >= sl ? ss->quiet_end - sl + 1 : 0;
        long pos = stopstr_find(ss->buf, ss->len, from, ss->stops[k], sl);
        if (pos < 0)
            continue;
        size_t end = (size_t)pos + sl;
        if (best < 0 || end < best_end || (end == best_end && pos < best_pos)) {
            best = k;
            best_pos = pos;
            best_end = end;
        }
    }
    if (best >= 0) {
        ss->done = true;
        ss->matched = best;
        out->len = ss->include ? best_end : (size_t)best_pos;
        out->stop_index = best;
        out->stop_str = ss->stops[best];
        out->stop_len = ss->lens[best];
        out->done = true;
        ss->released = ss->len; /* the rest of the text is dropped */
        return LF_OK;
    }

    /* Hold back the longest tail that is a proper prefix of a stop string. */
    size_t hold = 0;
    for (int32_t k = 0; k < ss->n; k++) {
        size_t l = ss->lens[k] - 1;
        if (l > ss->len)
            l = ss->len;
        for (; l > hold; l--)
            if (memcmp(ss->buf + ss->len - l, ss->stops[k], l) == 0)
                break;
        if (l > hold)
            hold = l;
    }
    size_t cut = stopstr_utf8_cut(ss->buf, ss->len - hold);
    out->len = cut;
    ss->released = cut;
    return LF_OK;
}

void stopstr_flush(stopstr_t *ss, stopstr_out_t *out)
{
    stopstr_compact(ss);
    if (ss->done)
        ss->len = 0;
    ss->done = true;
    stopstr_out_empty(ss, out);
    out->len = ss->len;
    ss->released = ss->len;
}
