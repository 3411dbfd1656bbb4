/* parser_names.c - parser names, aliases and the detection helper (see
 * parser_names.h). */
#include "chat/parse/parser_names.h"

#include <stdio.h>
#include <string.h>

lf_code_t parser_name_lookup(const char *what, const char *name, int count, const char *(*name_of)(int),
                             const parser_alias_t *aliases, size_t n_aliases, int *id, lf_err_t *err)
{
    for (int i = 0; name && i < count; i++)
        if (!strcmp(name, name_of(i))) {
            *id = i;
            return LF_OK;
        }
    for (size_t i = 0; name && i < n_aliases; i++)
        if (!strcmp(name, aliases[i].name)) {
            *id = aliases[i].id;
            return LF_OK;
        }
    char list[1024] = "";
    for (int i = 0; i < count; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? (i + 1 == count ? " or " : ", ") : "", name_of(i));
    }
    return lf_err_set(err, LF_ERR_INVALID, "unknown %s '%s' (expected %s)", what, name ? name : "(null)", list);
}

bool parser_text_has(const char *hay, size_t len, const char *needle)
{
    return hay && memmem(hay, len, needle, strlen(needle)) != NULL;
}
