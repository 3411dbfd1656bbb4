/* weights_pack.c - packs the model's matrices for the decode kernels. */
#include "engine/model/weights_pack.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/kernels/kernels.h"

/* The matrices to pack, as pointers into w; returns their number. */
static int pack_list(model_weights_t *w, int n_layer, model_tensor_t **list, int cap)
{
    int n = 0;
    for (int l = 0; l < n_layer && n + MODEL_LAYER_MATRICES <= cap; l++)
        n += model_layer_matrices(&w->layers[l], list + n);
    if (w->output.data && n < cap)
        list[n++] = &w->output;
    return n;
}

/* Drops the whole pages of [p, p + n) of the read-only file mapping from
 * memory (a later read faults a page back in from the file). */
static void drop_pages(const void *p, size_t n)
{
    const uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + ps - 1) / ps * ps, e = ((uintptr_t)p + n) / ps * ps;
    if (e > a)
        madvise((void *)a, e - a, MADV_DONTNEED);
}

/* The expert tensors to pack (gate, up, down of each MoE layer; gemma4's
 * fused gate|up as its two views); returns their number. */
static int pack_experts_list(model_weights_t *w, int n_layer, model_experts_t **list, int cap)
{
    int n = 0;
    for (int l = 0; l < n_layer; l++) {
        model_experts_t *x[3] = {&w->layers[l].x_gate, &w->layers[l].x_up, &w->layers[l].x_down};
        for (int i = 0; i < 3 && n < cap; i++)
            if (x[i]->data)
                list[n++] = x[i];
    }
    return n;
}

bool weights_pack(model_weights_t *w, int n_layer, int n_expert, weights_pack_t *out, lf_err_t *err)
{
    memset(out, 0, sizeof *out);
    const char *env = getenv("LLM_FCGI_PACK");
    if (env && !strcmp(env, "0"))
        return true;
    int cap = MODEL_LAYER_MATRICES * n_layer + 1, xcap = 3 * n_layer;
    model_tensor_t **list = malloc((size_t)cap * sizeof *list);
    model_experts_t **xlist = malloc((size_t)xcap * sizeof *xlist);
    /* offs[i]: where matrix i's packed copy starts (SIZE_MAX: not packed);
     * psz[i]: its bytes (per expert for expert tensors) */
    size_t *offs = malloc((size_t)(cap + xcap) * sizeof *offs), *psz = malloc((size_t)(cap + xcap) * sizeof *psz);
    if (!list || !xlist || !offs || !psz) {
        free(list), free(xlist), free(offs), free(psz);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory packing the weights"), false;
    }
    int n = pack_list(w, n_layer, list, cap), nx = n_expert > 0 ? pack_experts_list(w, n_layer, xlist, xcap) : 0;
    size_t total = 0;
    for (int i = 0; i < n + nx; i++) {
        const bool ex = i >= n;
        psz[i] = ex ? kern_pack_size(xlist[i - n]->type, xlist[i - n]->n_out, xlist[i - n]->n_in)
                    : kern_pack_size(list[i]->type, list[i]->n_out, list[i]->n_in);
        offs[i] = psz[i] ? total : SIZE_MAX;
        total += psz[i] * (ex ? (size_t)n_expert : 1);
    }
    if (total) {
        void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
            free(list), free(xlist), free(offs), free(psz);
            return lf_err_set(err, LF_ERR_NOMEM, "out of memory packing the weights (%zu MiB)", total >> 20), false;
        }
#ifdef MADV_HUGEPAGE
        madvise(mem, total, MADV_HUGEPAGE); /* fewer TLB misses while streaming */
#endif
        for (int i = 0; i < n; i++) {
            model_tensor_t *t = list[i];
            if (offs[i] == SIZE_MAX)
                continue;
            void *dst = (uint8_t *)mem + offs[i];
            kern_pack(t->type, t->data, t->n_out, t->n_in, dst);
            t->packed = dst;
            out->n_packed++;
            out->orig_bytes += t->row_bytes * (size_t)t->n_out;
            /* a tied output matrix is also the embedding table: the rows the
             * lookup reads fault back in one page at a time */
            drop_pages(t->data, t->row_bytes * (size_t)t->n_out);
        }
        for (int i = 0; i < nx; i++) {
            model_experts_t *x = xlist[i];
            if (offs[n + i] == SIZE_MAX)
                continue;
            uint8_t *dst = (uint8_t *)mem + offs[n + i];
            for (int e = 0; e < n_expert; e++)
                kern_pack(x->type, (const uint8_t *)x->data + (size_t)e * x->expert_bytes, x->n_out, x->n_in,
                          dst + (size_t)e * psz[n + i]);
            x->packed = dst;
            x->packed_expert_bytes = psz[n + i];
            out->n_packed++;
            out->orig_bytes += x->row_bytes * (size_t)x->n_out * (size_t)n_expert;
        }
        for (int i = 0; i < nx; i++) /* after both views of a fused gate|up are packed */
            if (xlist[i]->packed)
                for (int e = 0; e < n_expert; e++)
                    drop_pages((const uint8_t *)xlist[i]->data + (size_t)e * xlist[i]->expert_bytes,
                               xlist[i]->row_bytes * (size_t)xlist[i]->n_out);
        mprotect(mem, total, PROT_READ);
        out->mem = mem;
        out->bytes = total;
    }
    free(list), free(xlist), free(offs), free(psz);
    return true;
}

void weights_pack_free(weights_pack_t *p)
{
    if (p->mem)
        munmap(p->mem, p->bytes);
    memset(p, 0, sizeof *p);
}
