/* jinja_parse.c - recursive-descent parser for the Jinja2 subset of chat
 * templates. Grammar and operator precedence follow jinja2.parser:
 *   expr    := or ['if' or ['else' expr]]
 *   or      := and ('or' and)*         and := not ('and' not)*
 *   not     := 'not' not | compare     compare := math1 (cmpop math1)*
 *   math1   := concat (('+'|'-') concat)*    concat := math2 ('~' math2)*
 *   math2   := pow (('*'|'/'|'//'|'%') pow)* pow := unary ('**' unary)*
 *   unary   := ('-'|'+') unary-without-filters | primary postfix* filters
 * Nesting depth is bounded so hostile input cannot overflow the stack. */
#include "chat/template/jinja.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_NEST 200

typedef struct {
    jarena_t *a;
    const jtoks_t *t;
    size_t pos;
    char *err;
    size_t errn;
    bool failed;
    int depth;
} parser_t;

static jtok_t *cur(parser_t *P) { return &P->t->v[P->pos]; }
static jtok_t *peek(parser_t *P, size_t k)
{
    size_t i = P->pos + k;
    return &P->t->v[i < P->t->n ? i : P->t->n - 1];
}
static void adv(parser_t *P)
{
    if (P->pos + 1 < P->t->n)
        P->pos++;
}

static void *perr(parser_t *P, const char *fmt, ...)
{
    if (!P->failed) {
        char m[400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m, sizeof m, fmt, ap);
        va_end(ap);
        snprintf(P->err, P->errn, "template syntax error (line %d): %s", cur(P)->line, m);
        P->failed = true;
    }
    return NULL;
}

static bool is_op(parser_t *P, const char *op)
{
    jtok_t *t = cur(P);
    return t->kind == JT_OP && t->n == strlen(op) && !memcmp(t->s, op, t->n);
}
static bool is_name(parser_t *P, const char *name)
{
    jtok_t *t = cur(P);
    return t->kind == JT_NAME && !strcmp(t->s, name);
}
static bool accept_op(parser_t *P, const char *op)
{
    if (!is_op(P, op))
        return false;
    adv(P);
    return true;
}
static bool accept_name(parser_t *P, const char *n)
{
    if (!is_name(P, n))
        return false;
    adv(P);
    return true;
}
static bool expect_op(parser_t *P, const char *op)
{
    if (accept_op(P, op))
        return true;
    perr(P, "expected '%s'", op);
    return false;
}

static jnode_t *node(parser_t *P, jnode_kind_t k)
{
    jnode_t *n = jarena_alloc(P->a, sizeof *n);
    if (!n)
        return perr(P, "out of memory");
    n->kind = k;
    n->line = cur(P)->line;
    return n;
}

static bool nodes_push(parser_t *P, jnodes_t *l, jnode_t *n)
{
    if (!n)
        return false;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        jnode_t **nv = jarena_alloc(P->a, cap * sizeof *nv);
        if (!nv)
            return perr(P, "out of memory"), false;
        if (l->n)
            memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = n;
    return true;
}

static bool names_push(parser_t *P, jnode_t *n, const char *s)
{
    const char **nv = jarena_alloc(P->a, (n->nnames + 1) * sizeof *nv);
    if (!nv)
        return perr(P, "out of memory"), false;
    if (n->nnames)
        memcpy(nv, n->names, n->nnames * sizeof *nv);
    nv[n->nnames++] = s;
    n->names = nv;
    return true;
}

static jnode_t *parse_expr(parser_t *P);
static jnode_t *parse_or(parser_t *P);
static jnode_t *parse_unary(parser_t *P, bool with_filter);

/* Call arguments after '(' up to ')': positional into n->list, keyword into
 * n->names / n->list2. */
static bool parse_args(parser_t *P, jnode_t *n)
{
    while (!is_op(P, ")")) {
        if (n->list.n + n->nnames > 0 && !expect_op(P, ","))
            return false;
        if (is_op(P, ")"))
            break;
        if (cur(P)->kind == JT_NAME && peek(P, 1)->kind == JT_OP && peek(P, 1)->n == 1 && peek(P, 1)->s[0] == '=') {
            const char *name = cur(P)->s;
            adv(P);
            adv(P);
            if (!names_push(P, n, name) || !nodes_push(P, &n->list2, parse_expr(P)))
                return false;
        } else {
            if (n->nnames)
                return perr(P, "positional argument after keyword argument"), false;
            if (!nodes_push(P, &n->list, parse_expr(P)))
                return false;
        }
    }
    return expect_op(P, ")");
}

/* Expression list possibly forming a tuple (for `a, b` contexts). */
static jnode_t *parse_tuple(parser_t *P, bool allow_cond)
{
    jnode_t *first = allow_cond ? parse_expr(P) : parse_or(P);
    if (!first || !is_op(P, ","))
        return first;
    jnode_t *t = node(P, JN_TUPLE);
    if (!t || !nodes_push(P, &t->list, first))
        return NULL;
    while (accept_op(P, ",")) {
        if (is_op(P, ")") || cur(P)->kind == JT_BLOCK_END || cur(P)->kind == JT_VAR_END)
            break;
        if (!nodes_push(P, &t->list, allow_cond ? parse_expr(P) : parse_or(P)))
            return NULL;
    }
    return t;
}

static jnode_t *parse_primary(parser_t *P)
{
    jtok_t *t = cur(P);
    jnode_t *n;
    switch (t->kind) {
    case JT_NAME:
        if (!strcmp(t->s, "true") || !strcmp(t->s, "True") || !strcmp(t->s, "false") || !strcmp(t->s, "False")) {
            if (!(n = node(P, JN_CONST_BOOL)))
                return NULL;
            n->i = t->s[0] == 't' || t->s[0] == 'T';
        } else if (!strcmp(t->s, "none") || !strcmp(t->s, "None")) {
            n = node(P, JN_CONST_NONE);
        } else {
            if (!(n = node(P, JN_NAME)))
                return NULL;
            n->s = t->s;
            n->slen = t->n;
        }
        adv(P);
        return n;
    case JT_STRING: {
        if (!(n = node(P, JN_CONST_STR)))
            return NULL;
        n->s = t->s;
        n->slen = t->n;
        adv(P);
        /* adjacent string literals concatenate */
        while (cur(P)->kind == JT_STRING) {
            jtok_t *u = cur(P);
            char *s = jarena_alloc(P->a, n->slen + u->n + 1);
            if (!s)
                return perr(P, "out of memory");
            memcpy(s, n->s, n->slen);
            memcpy(s + n->slen, u->s, u->n);
            n->s = s;
            n->slen += u->n;
            adv(P);
        }
        return n;
    }
    case JT_INT:
        if ((n = node(P, JN_CONST_INT)))
            n->i = t->i;
        adv(P);
        return n;
    case JT_FLOAT:
        if ((n = node(P, JN_CONST_FLOAT)))
            n->f = t->f;
        adv(P);
        return n;
    case JT_OP:
        if (accept_op(P, "(")) {
            if (accept_op(P, ")"))
                return node(P, JN_TUPLE);
            n = parse_tuple(P, true);
            if (!n || !expect_op(P, ")"))
                return NULL;
            return n;
        }
        if (accept_op(P, "[")) {
            if (!(n = node(P, JN_LIST)))
                return NULL;
            while (!is_op(P, "]")) {
                if (n->list.n && !expect_op(P, ","))
                    return NULL;
                if (is_op(P, "]"))
                    break;
                if (!nodes_push(P, &n->list, parse_expr(P)))
                    return NULL;
            }
            adv(P);
            return n;
        }
        if (accept_op(P, "{")) {
            if (!(n = node(P, JN_DICT)))
                return NULL;
            while (!is_op(P, "}")) {
                if (n->list.n && !expect_op(P, ","))
                    return NULL;
                if (is_op(P, "}"))
                    break;
                if (!nodes_push(P, &n->list, parse_expr(P)) || !expect_op(P, ":") ||
                    !nodes_push(P, &n->list2, parse_expr(P)))
                    return NULL;
            }
            adv(P);
            return n;
        }
        break;
    default: break;
    }
    return perr(P, "unexpected token '%s'", t->kind == JT_EOF ? "end of template" : t->s ? t->s : "tag");
}

static jnode_t *parse_subscript(parser_t *P, jnode_t *obj)
{
    /* after '[' */
    jnode_t *parts[3] = {NULL, NULL, NULL};
    bool is_slice = false;
    int k = 0;
    for (;;) {
        if (is_op(P, ":")) {
            is_slice = true;
            if (++k > 2)
                return perr(P, "bad slice");
            adv(P);
            continue;
        }
        if (is_op(P, "]"))
            break;
        if (parts[k])
            return perr(P, "expected ']'");
        if (!(parts[k] = parse_expr(P)))
            return NULL;
    }
    adv(P);
    jnode_t *n = node(P, is_slice ? JN_SLICE : JN_GETITEM);
    if (!n)
        return NULL;
    n->a = obj;
    n->b = parts[0];
    if (is_slice) {
        n->c = parts[1];
        n->list.n = 0;
        if (parts[2]) {
            if (!nodes_push(P, &n->list, parts[2]))
                return NULL;
        }
    } else if (!parts[0])
        return perr(P, "empty subscript");
    return n;
}

static jnode_t *parse_postfix(parser_t *P, jnode_t *n)
{
    while (n) {
        if (accept_op(P, ".")) {
            jtok_t *t = cur(P);
            if (t->kind == JT_INT) { /* x.0 is x[0] */
                jnode_t *g = node(P, JN_GETITEM), *k = node(P, JN_CONST_INT);
                if (!g || !k)
                    return NULL;
                k->i = t->i;
                g->a = n;
                g->b = k;
                n = g;
            } else if (t->kind == JT_NAME) {
                jnode_t *g = node(P, JN_GETATTR);
                if (!g)
                    return NULL;
                g->a = n;
                g->s = t->s;
                g->slen = t->n;
                n = g;
            } else
                return perr(P, "expected attribute name");
            adv(P);
        } else if (accept_op(P, "[")) {
            n = parse_subscript(P, n);
        } else if (accept_op(P, "(")) {
            jnode_t *c = node(P, JN_CALL);
            if (!c)
                return NULL;
            c->a = n;
            if (!parse_args(P, c))
                return NULL;
            n = c;
        } else
            break;
    }
    return n;
}

static const char *parse_dotted_name(parser_t *P)
{
    if (cur(P)->kind != JT_NAME)
        return perr(P, "expected a name");
    const char *s = cur(P)->s;
    adv(P);
    return s;
}

static jnode_t *parse_filter_expr(parser_t *P, jnode_t *n)
{
    while (n) {
        if (accept_op(P, "|")) {
            jnode_t *f = node(P, JN_FILTER);
            if (!f || !(f->s = parse_dotted_name(P)))
                return NULL;
            f->a = n;
            if (accept_op(P, "(") && !parse_args(P, f))
                return NULL;
            n = f;
        } else if (is_name(P, "is")) {
            adv(P);
            jnode_t *t = node(P, JN_TEST);
            if (!t)
                return NULL;
            t->op = accept_name(P, "not");
            if (!(t->s = parse_dotted_name(P)))
                return NULL;
            t->a = n;
            if (accept_op(P, "(")) {
                if (!parse_args(P, t))
                    return NULL;
            } else {
                jtok_t *c = cur(P);
                bool arg = c->kind == JT_STRING || c->kind == JT_INT || c->kind == JT_FLOAT ||
                           (c->kind == JT_OP && (c->s[0] == '(' || c->s[0] == '[' || c->s[0] == '{')) ||
                           (c->kind == JT_NAME && strcmp(c->s, "else") && strcmp(c->s, "or") &&
                            strcmp(c->s, "and") && strcmp(c->s, "if") && strcmp(c->s, "is") &&
                            strcmp(c->s, "in") && strcmp(c->s, "not"));
                if (arg) {
                    jnode_t *x = parse_unary(P, false);
                    if (!nodes_push(P, &t->list, x))
                        return NULL;
                }
            }
            n = t;
        } else if (accept_op(P, "(")) {
            jnode_t *c = node(P, JN_CALL);
            if (!c)
                return NULL;
            c->a = n;
            if (!parse_args(P, c))
                return NULL;
            n = c;
        } else
            break;
    }
    return n;
}

static jnode_t *parse_unary(parser_t *P, bool with_filter)
{
    if (++P->depth > MAX_NEST)
        return perr(P, "expression nested too deeply");
    jnode_t *n;
    if (is_op(P, "-") || is_op(P, "+")) {
        bool neg = is_op(P, "-");
        adv(P);
        n = node(P, neg ? JN_NEG : JN_POS);
        if (n && !(n->a = parse_unary(P, false)))
            n = NULL;
    } else
        n = parse_primary(P);
    n = parse_postfix(P, n);
    if (with_filter)
        n = parse_filter_expr(P, n);
    P->depth--;
    return n;
}

static jnode_t *binop(parser_t *P, jop_t op, jnode_t *l, jnode_t *r)
{
    if (!l || !r)
        return NULL;
    jnode_t *n = node(P, JN_BINOP);
    if (n) {
        n->op = op;
        n->a = l;
        n->b = r;
    }
    return n;
}

static jnode_t *parse_pow(parser_t *P)
{
    jnode_t *n = parse_unary(P, true);
    while (n && accept_op(P, "**"))
        n = binop(P, JOP_POW, n, parse_unary(P, true));
    return n;
}

static jnode_t *parse_math2(parser_t *P)
{
    jnode_t *n = parse_pow(P);
    for (;;) {
        jop_t op;
        if (is_op(P, "*")) op = JOP_MUL;
        else if (is_op(P, "/")) op = JOP_DIV;
        else if (is_op(P, "//")) op = JOP_FLOORDIV;
        else if (is_op(P, "%")) op = JOP_MOD;
        else return n;
        adv(P);
        n = binop(P, op, n, parse_pow(P));
    }
}

static jnode_t *parse_concat(parser_t *P)
{
    jnode_t *n = parse_math2(P);
    while (n && accept_op(P, "~"))
        n = binop(P, JOP_CONCAT, n, parse_math2(P));
    return n;
}

static jnode_t *parse_math1(parser_t *P)
{
    jnode_t *n = parse_concat(P);
    for (;;) {
        jop_t op;
        if (is_op(P, "+")) op = JOP_ADD;
        else if (is_op(P, "-")) op = JOP_SUB;
        else return n;
        adv(P);
        n = binop(P, op, n, parse_concat(P));
    }
}

static jnode_t *parse_compare(parser_t *P)
{
    jnode_t *first = parse_math1(P);
    if (!first)
        return NULL;
    jnode_t *c = NULL;
    int ops[64];
    size_t nops = 0;
    for (;;) {
        int op;
        if (is_op(P, "==")) op = JOP_EQ;
        else if (is_op(P, "!=")) op = JOP_NE;
        else if (is_op(P, "<")) op = JOP_LT;
        else if (is_op(P, "<=")) op = JOP_LE;
        else if (is_op(P, ">")) op = JOP_GT;
        else if (is_op(P, ">=")) op = JOP_GE;
        else if (is_name(P, "in")) op = JOP_IN;
        else if (is_name(P, "not") && peek(P, 1)->kind == JT_NAME && !strcmp(peek(P, 1)->s, "in")) {
            adv(P);
            op = JOP_NOTIN;
        } else
            break;
        adv(P);
        if (!c) {
            if (!(c = node(P, JN_COMPARE)) || !nodes_push(P, &c->list, first))
                return NULL;
        }
        if (nops >= 64)
            return perr(P, "comparison chain too long");
        ops[nops++] = op;
        if (!nodes_push(P, &c->list, parse_math1(P)))
            return NULL;
    }
    if (!c)
        return first;
    if (!(c->ops = jarena_alloc(P->a, nops * sizeof(int))))
        return perr(P, "out of memory");
    memcpy(c->ops, ops, nops * sizeof(int));
    return c;
}

static jnode_t *parse_not(parser_t *P)
{
    if (is_name(P, "not")) {
        if (++P->depth > MAX_NEST)
            return perr(P, "expression nested too deeply");
        adv(P);
        jnode_t *n = node(P, JN_NOT);
        if (n && !(n->a = parse_not(P)))
            n = NULL;
        P->depth--;
        return n;
    }
    return parse_compare(P);
}

static jnode_t *parse_and(parser_t *P)
{
    jnode_t *n = parse_not(P);
    while (n && accept_name(P, "and")) {
        jnode_t *x = node(P, JN_AND);
        if (!x || !(x->b = parse_not(P)))
            return NULL;
        x->a = n;
        n = x;
    }
    return n;
}

static jnode_t *parse_or(parser_t *P)
{
    jnode_t *n = parse_and(P);
    while (n && accept_name(P, "or")) {
        jnode_t *x = node(P, JN_OR);
        if (!x || !(x->b = parse_and(P)))
            return NULL;
        x->a = n;
        n = x;
    }
    return n;
}

static jnode_t *parse_expr(parser_t *P)
{
    if (++P->depth > MAX_NEST)
        return perr(P, "expression nested too deeply");
    jnode_t *n = parse_or(P);
    while (n && is_name(P, "if")) {
        adv(P);
        jnode_t *c = node(P, JN_COND);
        if (!c || !(c->a = parse_or(P)))
            return NULL;
        c->b = n;
        if (accept_name(P, "else") && !(c->c = parse_expr(P)))
            return NULL;
        n = c;
    }
    P->depth--;
    return n;
}

/* ---- statements ------------------------------------------------------- */

static bool parse_body(parser_t *P, jnodes_t *body, const char *const *ends);

static bool expect_block_end(parser_t *P)
{
    if (cur(P)->kind != JT_BLOCK_END)
        return perr(P, "expected end of statement block, got '%s'", cur(P)->s ? cur(P)->s : "?"), false;
    adv(P);
    return true;
}

static jnode_t *parse_if(parser_t *P)
{
    jnode_t *n = node(P, JN_IF);
    if (!n || !(n->a = parse_tuple(P, true)) || !expect_block_end(P))
        return NULL;
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    if (!parse_body(P, &n->list, ends))
        return NULL;
    if (accept_name(P, "elif")) {
        jnode_t *e = parse_if(P);
        if (!nodes_push(P, &n->list2, e))
            return NULL;
        return n;
    }
    if (accept_name(P, "else")) {
        static const char *const ends2[] = {"endif", NULL};
        if (!expect_block_end(P) || !parse_body(P, &n->list2, ends2))
            return NULL;
    }
    if (!accept_name(P, "endif"))
        return perr(P, "expected endif");
    if (!expect_block_end(P))
        return NULL;
    return n;
}

static jnode_t *parse_for(parser_t *P)
{
    jnode_t *n = node(P, JN_FOR);
    if (!n)
        return NULL;
    do {
        if (cur(P)->kind != JT_NAME)
            return perr(P, "expected loop variable");
        if (!names_push(P, n, cur(P)->s))
            return NULL;
        adv(P);
    } while (accept_op(P, ","));
    if (!accept_name(P, "in"))
        return perr(P, "expected 'in'");
    if (!(n->a = parse_tuple(P, false)))
        return NULL;
    if (accept_name(P, "if") && !(n->b = parse_expr(P)))
        return NULL;
    if (accept_name(P, "recursive"))
        return perr(P, "recursive loops are not supported");
    if (!expect_block_end(P))
        return NULL;
    static const char *const ends[] = {"else", "endfor", NULL};
    if (!parse_body(P, &n->list, ends))
        return NULL;
    if (accept_name(P, "else")) {
        static const char *const ends2[] = {"endfor", NULL};
        if (!expect_block_end(P) || !parse_body(P, &n->list2, ends2))
            return NULL;
    }
    if (!accept_name(P, "endfor"))
        return perr(P, "expected endfor");
    return expect_block_end(P) ? n : NULL;
}

/* `filter name(args)` part of a filter block or block set: a JN_FILTER
 * whose operand is filled at render time. */
static jnode_t *parse_filter_chain(parser_t *P)
{
    jnode_t *f = NULL;
    do {
        jnode_t *x = node(P, JN_FILTER);
        if (!x || !(x->s = parse_dotted_name(P)))
            return NULL;
        if (accept_op(P, "(") && !parse_args(P, x))
            return NULL;
        x->a = f;
        f = x;
    } while (accept_op(P, "|"));
    return f;
}

static jnode_t *parse_set(parser_t *P)
{
    if (cur(P)->kind != JT_NAME)
        return perr(P, "expected a name after set");
    const char *name = cur(P)->s;
    size_t nlen = cur(P)->n;
    adv(P);
    if (accept_op(P, ".")) {
        if (cur(P)->kind != JT_NAME)
            return perr(P, "expected attribute name");
        jnode_t *n = node(P, JN_SET_ATTR);
        if (!n)
            return NULL;
        n->s = name;
        n->slen = nlen;
        if (!names_push(P, n, cur(P)->s))
            return NULL;
        adv(P);
        if (!expect_op(P, "=") || !(n->a = parse_tuple(P, true)))
            return NULL;
        return expect_block_end(P) ? n : NULL;
    }
    if (is_op(P, ",")) { /* {% set a, b = ... %} */
        jnode_t *n = node(P, JN_SET);
        if (!n || !names_push(P, n, name))
            return NULL;
        while (accept_op(P, ",")) {
            if (cur(P)->kind != JT_NAME)
                return perr(P, "expected a name");
            if (!names_push(P, n, cur(P)->s))
                return NULL;
            adv(P);
        }
        n->s = name;
        n->slen = nlen;
        if (!expect_op(P, "=") || !(n->a = parse_tuple(P, true)))
            return NULL;
        return expect_block_end(P) ? n : NULL;
    }
    if (accept_op(P, "=")) {
        jnode_t *n = node(P, JN_SET);
        if (!n)
            return NULL;
        n->s = name;
        n->slen = nlen;
        if (!(n->a = parse_tuple(P, true)))
            return NULL;
        return expect_block_end(P) ? n : NULL;
    }
    jnode_t *n = node(P, JN_SET_BLOCK);
    if (!n)
        return NULL;
    n->s = name;
    n->slen = nlen;
    if (accept_op(P, "|") && !(n->a = parse_filter_chain(P)))
        return NULL;
    static const char *const ends[] = {"endset", NULL};
    if (!expect_block_end(P) || !parse_body(P, &n->list, ends))
        return NULL;
    adv(P);
    return expect_block_end(P) ? n : NULL;
}

/* Bit 1: the subtree reads `varargs`, bit 2: `kwargs` (Jinja2 lets a
 * macro take extra arguments only when its body uses them). */
static int uses_varargs(const jnode_t *n, int depth)
{
    if (!n || depth > 400)
        return 0;
    int r = 0;
    if (n->kind == JN_NAME && n->s)
        r |= (!strcmp(n->s, "varargs") ? 1 : 0) | (!strcmp(n->s, "kwargs") ? 2 : 0);
    r |= uses_varargs(n->a, depth + 1) | uses_varargs(n->b, depth + 1) | uses_varargs(n->c, depth + 1);
    for (size_t i = 0; i < n->list.n; i++)
        r |= uses_varargs(n->list.v[i], depth + 1);
    for (size_t i = 0; i < n->list2.n; i++)
        r |= uses_varargs(n->list2.v[i], depth + 1);
    return r;
}

static jnode_t *parse_macro(parser_t *P, jnode_kind_t kind)
{
    jnode_t *n = node(P, kind);
    if (!n)
        return NULL;
    if (kind == JN_MACRO) {
        if (cur(P)->kind != JT_NAME)
            return perr(P, "expected macro name");
        n->s = cur(P)->s;
        n->slen = cur(P)->n;
        adv(P);
    }
    if (kind == JN_MACRO || is_op(P, "(")) {
        if (!expect_op(P, "("))
            return NULL;
        while (!accept_op(P, ")")) {
            if (n->nnames && !expect_op(P, ","))
                return NULL;
            if (cur(P)->kind != JT_NAME)
                return perr(P, "expected parameter name");
            if (!names_push(P, n, cur(P)->s))
                return NULL;
            adv(P);
            jnode_t *def = NULL;
            if (accept_op(P, "=") && !(def = parse_expr(P)))
                return NULL;
            if (!def && !(def = node(P, JN_BODY))) /* JN_BODY marks "no default" */
                return NULL;
            if (!nodes_push(P, &n->list2, def))
                return NULL;
        }
    }
    if (kind == JN_CALL_BLOCK) {
        if (!(n->a = parse_expr(P)) || n->a->kind != JN_CALL)
            return perr(P, "expected a macro call");
    }
    static const char *const ends_m[] = {"endmacro", NULL};
    static const char *const ends_c[] = {"endcall", NULL};
    if (!expect_block_end(P) || !parse_body(P, &n->list, kind == JN_MACRO ? ends_m : ends_c))
        return NULL;
    for (size_t i = 0; i < n->list.n; i++)
        n->op |= uses_varargs(n->list.v[i], 0);
    adv(P);
    if (kind == JN_MACRO && cur(P)->kind == JT_NAME)
        adv(P); /* {% endmacro name %} */
    return expect_block_end(P) ? n : NULL;
}

static jnode_t *parse_statement(parser_t *P)
{
    jtok_t *t = cur(P);
    if (t->kind != JT_NAME)
        return perr(P, "expected a statement name");
    const char *kw = t->s;
    adv(P);
    if (!strcmp(kw, "if"))
        return parse_if(P);
    if (!strcmp(kw, "for"))
        return parse_for(P);
    if (!strcmp(kw, "set"))
        return parse_set(P);
    if (!strcmp(kw, "macro"))
        return parse_macro(P, JN_MACRO);
    if (!strcmp(kw, "call"))
        return parse_macro(P, JN_CALL_BLOCK);
    if (!strcmp(kw, "break") || !strcmp(kw, "continue")) {
        jnode_t *n = node(P, kw[0] == 'b' ? JN_BREAK : JN_CONTINUE);
        return n && expect_block_end(P) ? n : NULL;
    }
    if (!strcmp(kw, "filter")) {
        jnode_t *n = node(P, JN_FILTER_BLOCK);
        if (!n || !(n->a = parse_filter_chain(P)))
            return NULL;
        static const char *const ends[] = {"endfilter", NULL};
        if (!expect_block_end(P) || !parse_body(P, &n->list, ends))
            return NULL;
        adv(P);
        return expect_block_end(P) ? n : NULL;
    }
    if (!strcmp(kw, "generation")) { /* transformers' AssistantTracker tag */
        jnode_t *n = node(P, JN_BODY);
        static const char *const ends[] = {"endgeneration", NULL};
        if (!n || !expect_block_end(P) || !parse_body(P, &n->list, ends))
            return NULL;
        adv(P);
        return expect_block_end(P) ? n : NULL;
    }
    return perr(P, "unknown statement '%s'", kw);
}

/* Parses until EOF (ends == NULL) or a block whose name is in ends; leaves
 * the parser on that name token. */
static bool parse_body(parser_t *P, jnodes_t *body, const char *const *ends)
{
    if (++P->depth > MAX_NEST)
        return perr(P, "blocks nested too deeply"), false;
    for (;;) {
        jtok_t *t = cur(P);
        if (t->kind == JT_EOF) {
            if (ends)
                return perr(P, "unexpected end of template, expected '%s'", ends[0]), false;
            break;
        }
        if (t->kind == JT_DATA) {
            jnode_t *n = node(P, JN_OUTPUT);
            if (!n)
                return false;
            n->s = t->s;
            n->slen = t->n;
            adv(P);
            if (!nodes_push(P, body, n))
                return false;
        } else if (t->kind == JT_VAR_BEGIN) {
            adv(P);
            jnode_t *n = node(P, JN_PRINT);
            if (!n || !(n->a = parse_tuple(P, true)))
                return false;
            if (cur(P)->kind != JT_VAR_END)
                return perr(P, "expected '}}'"), false;
            adv(P);
            if (!nodes_push(P, body, n))
                return false;
        } else if (t->kind == JT_BLOCK_BEGIN) {
            adv(P);
            if (ends && cur(P)->kind == JT_NAME) {
                for (size_t i = 0; ends[i]; i++)
                    if (!strcmp(cur(P)->s, ends[i])) {
                        P->depth--;
                        return true;
                    }
            }
            if (!nodes_push(P, body, parse_statement(P)))
                return false;
        } else
            return perr(P, "unexpected token"), false;
    }
    P->depth--;
    return true;
}

jnode_t *jinja_parse(jarena_t *a, const jtoks_t *toks, char *err, size_t errn)
{
    parser_t P = {a, toks, 0, err, errn, false, 0};
    jnode_t *body = node(&P, JN_BODY);
    if (!body || !parse_body(&P, &body->list, NULL))
        return NULL;
    return body;
}
