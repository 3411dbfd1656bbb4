/* hub.c - model references, GGUF file choice, local layout (see hub.h). */
#include "pull/hub.h"

#include <ctype.h>
#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* OWNER and NAME: letters, digits, '-', '_', '.' (Hugging Face's rule), not
 * starting with '.' or '-' (which also rules out "." and ".."). */
static bool repo_part_ok(const char *s, size_t n)
{
    if (n == 0 || n > 96 || s[0] == '.' || s[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
            return false;
    return true;
}

static bool is_url(const char *s)
{
    return !strncasecmp(s, "https://", 8) || !strncasecmp(s, "http://", 7);
}

static bool ends_with_ci(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcasecmp(s + n - m, suffix);
}

lf_code_t hub_ref_parse(const char *s, hub_ref_t *out, lf_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (is_url(s)) {
        if (strlen(s) >= sizeof out->url)
            return lf_err_set(err, LF_ERR_INVALID, "URL too long");
        out->is_url = true;
        strcpy(out->url, s);
        return LF_OK;
    }
    const char *slash = strchr(s, '/'), *colon = strchr(s, ':');
    const char *name = slash ? slash + 1 : NULL;
    size_t name_len = name ? (colon ? (size_t)(colon - name) : strlen(name)) : 0;
    if (!slash || (colon && colon < slash) || !repo_part_ok(s, (size_t)(slash - s)) ||
        !repo_part_ok(name, name_len) || memchr(name, '/', name_len))
        return lf_err_set(err, LF_ERR_INVALID,
                          "'%s' is not a model reference: use OWNER/NAME[:QUANT] (e.g. "
                          "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q8_0) or an http(s) URL of a .gguf file", s);
    snprintf(out->repo, sizeof out->repo, "%.*s", (int)(name + name_len - s), s);
    if (colon) {
        const char *q = colon + 1;
        size_t n = strlen(q);
        if (n == 0 || n >= sizeof out->quant)
            return lf_err_set(err, LF_ERR_INVALID, "'%s': empty or too long quantization after ':'", s);
        for (size_t i = 0; i < n; i++)
            if (!isalnum((unsigned char)q[i]) && q[i] != '_' && q[i] != '-' && q[i] != '.')
                return lf_err_set(err, LF_ERR_INVALID, "'%s': bad character in the quantization '%s'", s, q);
        strcpy(out->quant, q);
    }
    return LF_OK;
}

bool hub_ref_looks_like(const char *s)
{
    if (is_url(s))
        return true;
    if (ends_with_ci(s, ".gguf"))
        return false;
    hub_ref_t r;
    return hub_ref_parse(s, &r, NULL) == LF_OK;
}

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* quant occurs in the file name as a whole word: bounded by the start,
 * '-', '.', '_' before and '-', '.' or the end after. */
static bool name_has_quant(const char *name, const char *quant)
{
    size_t m = strlen(quant);
    for (const char *p = name; *p; p++) {
        if (strncasecmp(p, quant, m))
            continue;
        bool before = p == name || strchr("-._", p[-1]);
        bool after = p[m] == '\0' || p[m] == '-' || p[m] == '.';
        if (before && after)
            return true;
    }
    return false;
}

/* -NNNNN-of-NNNNN.gguf */
static bool is_split(const char *name)
{
    const char *p = strstr(name, "-of-");
    return p && p - name >= 6 && isdigit((unsigned char)p[-1]) && isdigit((unsigned char)p[4]);
}

static bool is_candidate(const char *name)
{
    const char *b = base_name(name);
    return ends_with_ci(b, ".gguf") && !strcasestr(b, "mmproj");
}

/* "Q4_K_M, Q8_0, ..." style list of the candidate file names, for errors */
static void list_names(const char *const *names, size_t n, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && used + 8 < cap; i++) {
        if (!is_candidate(names[i]))
            continue;
        int w = snprintf(out + used, cap - used, "%s%s", used ? ", " : "", base_name(names[i]));
        if (w < 0 || (size_t)w >= cap - used) {
            snprintf(out + used, cap - used, ", ...");
            return;
        }
        used += (size_t)w;
    }
    if (!used)
        snprintf(out, cap, "none");
}

int hub_match_quant(const char *const *names, size_t n, const char *repo, const char *quant, lf_err_t *err)
{
    char avail[320];
    size_t n_cand = 0;
    int only = -1;
    for (size_t i = 0; i < n; i++)
        if (is_candidate(names[i]))
            n_cand++, only = (int)i;
    if (n_cand == 0) {
        lf_err_set(err, LF_ERR_NOT_FOUND, "%s has no GGUF file", repo);
        return -1;
    }
    const char *want = quant && *quant ? quant : NULL;
    if (!want && n_cand == 1)
        return only;
    static const char *const defaults[] = {"Q4_K_M", "Q8_0"};
    for (size_t d = 0; d < (want ? 1 : 2); d++) {
        const char *q = want ? want : defaults[d];
        int found = -1, n_found = 0;
        for (size_t i = 0; i < n; i++)
            if (is_candidate(names[i]) && name_has_quant(base_name(names[i]), q))
                found = found < 0 ? (int)i : found, n_found++;
        if (n_found == 0)
            continue;
        if (n_found > 1) {
            char which[320];
            const char **sel = calloc((size_t)n_found, sizeof *sel);
            size_t k = 0;
            for (size_t i = 0; sel && i < n; i++)
                if (is_candidate(names[i]) && name_has_quant(base_name(names[i]), q))
                    sel[k++] = names[i];
            list_names(sel ? sel : names, sel ? k : n, which, sizeof which);
            free(sel);
            lf_err_set(err, LF_ERR_INVALID, "%s: %d files match %s (%s); pull one by its URL", repo, n_found, q,
                       which);
            return -1;
        }
        if (is_split(base_name(names[found]))) {
            lf_err_set(err, LF_ERR_UNSUPPORTED,
                       "%s: %s is split into several files (%s); llm-fcgi loads single-file GGUFs only", repo, q,
                       base_name(names[found]));
            return -1;
        }
        return found;
    }
    list_names(names, n, avail, sizeof avail);
    if (want)
        lf_err_set(err, LF_ERR_NOT_FOUND, "%s has no GGUF file for %s; it has: %s", repo, want, avail);
    else
        lf_err_set(err, LF_ERR_NOT_FOUND, "%s has several GGUF files and neither Q4_K_M nor Q8_0: name one, "
                                          "e.g. %s:QUANT (files: %s)", repo, repo, avail);
    return -1;
}

static bool hex64(const char *s)
{
    if (strlen(s) != 64)
        return false;
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* The file entries of a tree listing: names[k] (paths) and items[k] (the
 * JSON objects, owned by *root). */
static lf_code_t parse_listing(const char *tree_json, const char *repo, json_object **root, const char ***names,
                               json_object ***items, size_t *k, lf_err_t *err)
{
    *root = json_tokener_parse(tree_json);
    *names = NULL, *items = NULL, *k = 0;
    if (!*root || !json_object_is_type(*root, json_type_array)) {
        json_object_put(*root);
        *root = NULL;
        return lf_err_set(err, LF_ERR_FORMAT, "%s: the hub's file listing is not a JSON array", repo);
    }
    size_t n = json_object_array_length(*root);
    *names = calloc(n ? n : 1, sizeof **names);
    *items = calloc(n ? n : 1, sizeof **items);
    if (!*names || !*items) {
        free(*names), free(*items), json_object_put(*root);
        *root = NULL;
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(*root, i), *type, *path;
        if (!json_object_is_type(e, json_type_object) || !json_object_object_get_ex(e, "path", &path) ||
            !json_object_is_type(path, json_type_string))
            continue;
        if (json_object_object_get_ex(e, "type", &type) && strcmp(json_object_get_string(type), "file"))
            continue;
        (*names)[*k] = json_object_get_string(path);
        (*items)[(*k)++] = e;
    }
    return LF_OK;
}

/* out from a listing entry: path, size, LFS digest */
static lf_code_t file_of(json_object *e, const char *name, const char *repo, hub_file_t *out, lf_err_t *err)
{
    if (strlen(name) >= sizeof out->path)
        return lf_err_set(err, LF_ERR_INVALID, "%s: file name too long", repo);
    json_object *v, *lfs;
    strcpy(out->path, name);
    if (json_object_object_get_ex(e, "size", &v))
        out->size = (uint64_t)json_object_get_int64(v);
    if (json_object_object_get_ex(e, "lfs", &lfs) && json_object_is_type(lfs, json_type_object)) {
        if (json_object_object_get_ex(lfs, "oid", &v) && hex64(json_object_get_string(v)))
            for (int i = 0; i < 65; i++)
                out->sha256[i] = (char)tolower((unsigned char)json_object_get_string(v)[i]);
        if (json_object_object_get_ex(lfs, "size", &v))
            out->size = (uint64_t)json_object_get_int64(v);
    }
    return LF_OK;
}

/* The file of a listing: the model of quant, or (model_path given) the
 * projector for that model. */
static lf_code_t pick(const char *tree_json, const char *repo, const char *quant, const char *model_path,
                      hub_file_t *out, lf_err_t *err)
{
    memset(out, 0, sizeof *out);
    json_object *root;
    const char **names;
    json_object **items;
    size_t k;
    lf_code_t rc = parse_listing(tree_json, repo, &root, &names, &items, &k, err);
    if (rc != LF_OK)
        return rc;
    const int idx = model_path ? hub_match_mmproj(names, k, model_path) : hub_match_quant(names, k, repo, quant, err);
    if (idx >= 0)
        rc = file_of(items[idx], names[idx], repo, out, err);
    else if (model_path)
        rc = lf_err_set(err, LF_ERR_NOT_FOUND, "%s has no projector (mmproj) for %s", repo, model_path);
    else
        rc = err ? err->code : LF_ERR_NOT_FOUND;
    free(names), free(items);
    json_object_put(root);
    return rc;
}

lf_code_t hub_pick_gguf(const char *tree_json, const char *repo, const char *quant, hub_file_t *out,
                        lf_err_t *err)
{
    return pick(tree_json, repo, quant, NULL, out, err);
}

/* ---- projectors ---- */

static bool is_mmproj(const char *name)
{
    const char *b = base_name(name);
    return ends_with_ci(b, ".gguf") && strcasestr(b, "mmproj") && !is_split(b);
}

/* Is the directory of path a (path-component) prefix of model's directory?
 * Its depth (slashes in it) in *depth. */
static bool dir_above(const char *path, const char *model, size_t *depth)
{
    const char *b = base_name(path);
    size_t n = (size_t)(b - path); /* the directory with its '/', or 0 */
    *depth = 0;
    if (strncmp(path, model, n))
        return false;
    for (size_t i = 0; i < n; i++)
        *depth += path[i] == '/';
    return true;
}

/* F16 first (the projectors' usual precision, and the encoder's accuracy
 * matters more than its size), then BF16, F32, Q8_0, the rest */
static int mmproj_rank(const char *name)
{
    static const char *const pref[] = {"F16", "BF16", "F32", "Q8_0"};
    for (int i = 0; i < 4; i++)
        if (name_has_quant(base_name(name), pref[i]))
            return i;
    return 4;
}

int hub_match_mmproj(const char *const *names, size_t n, const char *model_path)
{
    int best = -1, best_rank = 0;
    size_t best_depth = 0;
    for (size_t i = 0; i < n; i++) {
        size_t depth;
        if (!is_mmproj(names[i]) || !dir_above(names[i], model_path, &depth))
            continue;
        const int rank = mmproj_rank(names[i]);
        if (best < 0 || depth > best_depth || (depth == best_depth && rank < best_rank) ||
            (depth == best_depth && rank == best_rank && strcmp(names[i], names[best]) < 0)) {
            best = (int)i;
            best_rank = rank;
            best_depth = depth;
        }
    }
    return best;
}

lf_code_t hub_pick_mmproj(const char *tree_json, const char *repo, const char *model_path, hub_file_t *out,
                          lf_err_t *err)
{
    return pick(tree_json, repo, NULL, model_path, out, err);
}

lf_code_t hub_local_dir(const char *models_dir, const hub_ref_t *ref, char *dir, size_t dir_cap, char *file,
                        size_t file_cap, lf_err_t *err)
{
    int w;
    file[0] = '\0';
    if (!ref->is_url) {
        w = snprintf(dir, dir_cap, "%s/%s", models_dir, ref->repo);
        if (w < 0 || (size_t)w >= dir_cap)
            return lf_err_set(err, LF_ERR_INVALID, "model directory path too long");
        return LF_OK;
    }
    const char *p = strstr(ref->url, "://");
    p = p ? strchr(p + 3, '/') : NULL;
    size_t end = p ? strcspn(p, "?#") : 0;
    const char *b = p;
    for (size_t i = 0; p && i < end; i++)
        if (p[i] == '/')
            b = p + i + 1;
    size_t n = p ? (size_t)(p + end - b) : 0;
    if (!n || n >= file_cap || (n <= 2 && b[0] == '.') || memchr(b, '%', n))
        return lf_err_set(err, LF_ERR_INVALID, "%s: the URL has no usable file name at its end", ref->url);
    memcpy(file, b, n);
    file[n] = '\0';
    w = snprintf(dir, dir_cap, "%s", models_dir);
    if (w < 0 || (size_t)w >= dir_cap)
        return lf_err_set(err, LF_ERR_INVALID, "model directory path too long");
    return LF_OK;
}

/* The .gguf names in dir (at most 256), strdup'ed; their count. */
static size_t list_dir(const char *dir, char **names)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256)
        if (e->d_name[0] != '.' && ends_with_ci(e->d_name, ".gguf") && (names[n] = strdup(e->d_name)))
            n++;
    closedir(d);
    return n;
}

/* out = dir/names[idx] when idx names one (and it fits); frees the n names */
static bool found_in(const char *dir, char **names, size_t n, int idx, char *out, size_t cap)
{
    bool ok = idx >= 0 && names[idx];
    if (ok) {
        int w = snprintf(out, cap, "%s/%s", dir, names[idx]);
        ok = w > 0 && (size_t)w < cap;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    return ok;
}

bool hub_local_find(const char *models_dir, const hub_ref_t *ref, char *out, size_t cap)
{
    char dir[1024], file[256];
    if (hub_local_dir(models_dir, ref, dir, sizeof dir, file, sizeof file, NULL) != LF_OK)
        return false;
    if (ref->is_url) {
        int w = snprintf(out, cap, "%s/%s", dir, file);
        FILE *f = w > 0 && (size_t)w < cap ? fopen(out, "rb") : NULL;
        if (f)
            fclose(f);
        return f != NULL;
    }
    char *names[256];
    size_t n = list_dir(dir, names);
    return found_in(dir, names, n, hub_match_quant((const char *const *)names, n, ref->repo, ref->quant, NULL), out,
                    cap);
}

bool hub_local_find_mmproj(const char *models_dir, const hub_ref_t *ref, char *out, size_t cap)
{
    char dir[1024], file[256];
    if (ref->is_url || hub_local_dir(models_dir, ref, dir, sizeof dir, file, sizeof file, NULL) != LF_OK)
        return false;
    char *names[256];
    size_t n = list_dir(dir, names);
    /* pulled files lie side by side: the model's directory is "" */
    return found_in(dir, names, n, hub_match_mmproj((const char *const *)names, n, ""), out, cap);
}

bool hub_models_dir(char *out, size_t cap)
{
    const char *e = getenv("LLM_MODELS_DIR");
    int w;
    if (e && *e)
        w = snprintf(out, cap, "%s", e);
    else if ((e = getenv("XDG_CACHE_HOME")) && *e == '/')
        w = snprintf(out, cap, "%s/llm-fcgi", e);
    else if ((e = getenv("HOME")) && *e)
        w = snprintf(out, cap, "%s/.cache/llm-fcgi", e);
    else
        return false;
    return w > 0 && (size_t)w < cap;
}

void hub_endpoint(char *out, size_t cap)
{
    const char *e = getenv("HF_ENDPOINT");
    snprintf(out, cap, "%s", e && *e ? e : HUB_DEFAULT_ENDPOINT);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '/')
        out[--n] = '\0';
}

bool hub_etag_sha256(const char *s, char out[65])
{
    if (!s)
        return false;
    if (!strncmp(s, "W/", 2))
        s += 2;
    size_t n = strlen(s);
    if (n == 66 && s[0] == '"' && s[65] == '"')
        s++, n = 64;
    if (n != 64)
        return false;
    for (int i = 0; i < 64; i++) {
        if (!isxdigit((unsigned char)s[i]))
            return false;
        out[i] = (char)tolower((unsigned char)s[i]);
    }
    out[64] = '\0';
    return true;
}
