/* regex_unicode.c - Unicode general categories for \p{...}, computed once
 * per process with PCRE2 (which the tokenizers already use and which carries
 * the Unicode tables): every code point is tested against \p{X} and the
 * runs are kept as a range set. Takes ~0.1 s per category the first time. */
#include "grammar/regex/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

static const struct {
    const char *name, *code;
} cat_names[] = {
    {"L", "L"},   {"Letter", "L"},           {"Lu", "Lu"}, {"Uppercase_Letter", "Lu"},
    {"Ll", "Ll"}, {"Lowercase_Letter", "Ll"}, {"Lt", "Lt"}, {"Titlecase_Letter", "Lt"},
    {"Lm", "Lm"}, {"Modifier_Letter", "Lm"},  {"Lo", "Lo"}, {"Other_Letter", "Lo"},
    {"N", "N"},   {"Number", "N"},            {"Nd", "Nd"}, {"Decimal_Number", "Nd"},
    {"digit", "Nd"}, {"Nl", "Nl"},            {"Letter_Number", "Nl"}, {"No", "No"},
    {"Other_Number", "No"}, {"P", "P"},       {"Punctuation", "P"}, {"punct", "P"},
    {"S", "S"},   {"Symbol", "S"},            {"Z", "Z"},   {"Separator", "Z"},
    {"C", "C"},   {"Other", "C"},             {"M", "M"},   {"Mark", "M"},
    {"Combining_Mark", "M"},
};

#define N_CODES 17
static const char *codes[N_CODES] = {"L", "Lu", "Ll", "Lt", "Lm", "Lo", "N", "Nd", "Nl", "No", "P", "S", "Z", "C", "M",
                                      "Zs", "Cc"};
static gr_cset_t cache[N_CODES];
static bool cached[N_CODES];
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static bool build(const char *code, gr_cset_t *out)
{
    char pat[32];
    size_t n = (size_t)snprintf(pat, sizeof pat, "^\\p{%s}$", code);
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, n, PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
    if (!re)
        return false;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    bool ok = md != NULL;
    gr_cset_init(out);
    uint32_t run = UINT32_MAX;
    for (uint32_t c = 0; ok && c <= GR_CP_MAX + 1; c++) {
        bool in = false;
        if (c <= GR_CP_MAX && !(c >= 0xD800 && c <= 0xDFFF)) {
            unsigned char s[4];
            size_t sl = utf8_encode(c, s);
            in = pcre2_match(re, s, sl, 0, PCRE2_NO_UTF_CHECK, md, NULL) >= 0;
        }
        if (in && run == UINT32_MAX)
            run = c;
        if (!in && run != UINT32_MAX) {
            ok = gr_cset_add(out, run, c - 1);
            run = UINT32_MAX;
        }
    }
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return ok;
}

bool gr_unicode_category(const char *name, size_t len, gr_cset_t *out)
{
    const char *code = NULL;
    for (size_t i = 0; i < sizeof cat_names / sizeof cat_names[0]; i++)
        if (strlen(cat_names[i].name) == len && !memcmp(cat_names[i].name, name, len)) {
            code = cat_names[i].code;
            break;
        }
    if (!code)
        return false;
    int k = 0;
    while (k < N_CODES && strcmp(codes[k], code))
        k++;
    if (k == N_CODES)
        return false;
    pthread_mutex_lock(&cache_mu);
    bool ok = cached[k] || (cached[k] = build(code, &cache[k]));
    if (ok)
        ok = gr_cset_copy(out, &cache[k]);
    pthread_mutex_unlock(&cache_mu);
    return ok;
}
