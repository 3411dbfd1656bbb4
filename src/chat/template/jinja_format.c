/* jinja_format.c - Python's printf-style string formatting (`fmt % args`
 * and the `format` filter): %s %r %d %i %f %F %e %E %g %G %x %X %o %c %%
 * with flags, width and precision, positional (tuple or single value) or
 * by name (%(key)s with a mapping). */
#include "chat/template/jinja.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool num_of(const jv_t *v, double *f, int64_t *i, bool *is_float)
{
    switch (v->kind) {
    case JV_INT: *i = v->u.i; *f = (double)v->u.i; *is_float = false; return true;
    case JV_BOOL: *i = v->u.b; *f = v->u.b; *is_float = false; return true;
    case JV_FLOAT: *f = v->u.f; *i = (int64_t)v->u.f; *is_float = true; return true;
    default: return false;
    }
}

jv_t *jinja_percent_format(jctx_t *c, jv_t *fmtv, jv_t *args)
{
    const char *p = fmtv->u.str.s;
    size_t n = fmtv->u.str.n, next = 0;
    jv_t **items = &args;
    size_t nitems = 1;
    bool is_map = args->kind == JV_DICT || args->kind == JV_NS;
    /* Python treats any non-tuple, non-str argument with __getitem__ (list,
     * dict, Undefined) as a mapping: unused, it is no error */
    bool getitem = is_map || args->kind == JV_UNDEF || (args->kind == JV_LIST && !args->is_tuple && !args->is_gen);
    if (args->kind == JV_LIST && args->is_tuple) {
        items = args->u.list->items;
        nitems = args->u.list->n;
    }
    jbuf_t b = {0};
    b.limit = jctx_limit(c);
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '%') {
            jbuf_put(&b, p + i, 1);
            continue;
        }
        if (++i >= n)
            goto bad;
        jv_t *v = NULL;
        if (p[i] == '(') {
            size_t j = i + 1;
            while (j < n && p[j] != ')')
                j++;
            if (j >= n || !is_map)
                goto bad;
            v = jv_dict_get(args, p + i + 1, j - i - 1);
            if (!v) {
                free(b.buf);
                jctx_fail(c, "format key '%.*s' not found", (int)(j - i - 1), p + i + 1);
                return NULL;
            }
            i = j + 1;
        }
        char flags[8];
        size_t nf = 0;
        while (i < n && strchr("-+ #0", p[i]) && nf < sizeof flags - 1)
            flags[nf++] = p[i++];
        flags[nf] = 0;
        int width = -1, prec = -1;
        if (i < n && p[i] == '*')
            goto bad;
        if (i < n && p[i] >= '0' && p[i] <= '9') {
            width = 0;
            while (i < n && p[i] >= '0' && p[i] <= '9' && width < 1000)
                width = width * 10 + (p[i++] - '0');
        }
        if (i < n && p[i] == '.') {
            i++;
            prec = 0;
            while (i < n && p[i] >= '0' && p[i] <= '9' && prec < 1000)
                prec = prec * 10 + (p[i++] - '0');
        }
        if (i >= n)
            goto bad;
        char conv = p[i];
        if (conv == '%') {
            jbuf_put(&b, "%", 1);
            continue;
        }
        if (!v) {
            if (next < nitems)
                v = items[next++];
            else {
                free(b.buf);
                jctx_fail(c, "not enough arguments for format string");
                return NULL;
            }
        }
        char spec[32], out[512];
        double f;
        int64_t iv;
        bool isf;
        if (conv == 's' || conv == 'r' || conv == 'a') {
            jbuf_t t = {0};
            t.limit = jctx_limit(c);
            if (conv == 's')
                jv_to_str(&t, v);
            else
                jv_repr(&t, v);
            size_t len = t.len;
            if (prec >= 0 && (size_t)prec < jutf8_len(t.buf ? t.buf : "", len))
                len = jutf8_offset(t.buf, len, (size_t)prec);
            size_t cps = jutf8_len(t.buf ? t.buf : "", len);
            bool left = strchr(flags, '-') != NULL;
            if (!left)
                for (int k = (int)cps; k < width; k++)
                    jbuf_put(&b, " ", 1);
            jbuf_put(&b, t.buf ? t.buf : "", len);
            if (left)
                for (int k = (int)cps; k < width; k++)
                    jbuf_put(&b, " ", 1);
            free(t.buf);
            continue;
        }
        if (!num_of(v, &f, &iv, &isf)) {
            free(b.buf);
            jctx_fail(c, "%%%c format: a real number is required, not %s", conv, jv_type_name(v));
            return NULL;
        }
        switch (conv) {
        case 'd': case 'i': case 'u':
            snprintf(spec, sizeof spec, "%%%s%s%s%slld", flags, width >= 0 ? "*" : "", prec >= 0 ? ".*" : "", "");
            if (width >= 0 && prec >= 0) snprintf(out, sizeof out, spec, width, prec, (long long)iv);
            else if (width >= 0) snprintf(out, sizeof out, spec, width, (long long)iv);
            else if (prec >= 0) snprintf(out, sizeof out, spec, prec, (long long)iv);
            else snprintf(out, sizeof out, spec, (long long)iv);
            break;
        case 'x': case 'X': case 'o': case 'c':
            if (isf) {
                free(b.buf);
                jctx_fail(c, "%%%c format: an integer is required, not float", conv);
                return NULL;
            }
            if (conv == 'c') {
                out[0] = (char)iv;
                out[1] = 0;
                break;
            }
            snprintf(spec, sizeof spec, "%%%s%sll%c", flags, width >= 0 ? "*" : "", conv);
            if (width >= 0) snprintf(out, sizeof out, spec, width, (long long)iv);
            else snprintf(out, sizeof out, spec, (long long)iv);
            break;
        case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
            snprintf(spec, sizeof spec, "%%%s%s.*%c", flags, width >= 0 ? "*" : "", conv);
            if (prec < 0)
                prec = 6;
            if (width >= 0) snprintf(out, sizeof out, spec, width, prec, f);
            else snprintf(out, sizeof out, spec, prec, f);
            break;
        default:
            goto bad;
        }
        jbuf_puts(&b, out);
    }
    if (next < nitems && !getitem) {
        free(b.buf);
        jctx_fail(c, "not all arguments converted during string formatting");
        return NULL;
    }
    {
        jv_t *r = b.overflow ? NULL : jv_str(jctx_arena(c), b.buf ? b.buf : "", b.len);
        free(b.buf);
        if (!r)
            jctx_fail(c, "string too large");
        return r;
    }
bad:
    free(b.buf);
    jctx_fail(c, "unsupported format string");
    return NULL;
}
