/* pull.c - a model reference to a local checked file (see pull.h). */
#include "pull/pull.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pull/hub.h"

dl_progress_t pull_progress_for(FILE *f)
{
    return isatty(fileno(f)) ? DL_PROGRESS_BAR : DL_PROGRESS_LINES;
}

/* Percent-encodes a repository path for a URL ('/' kept). */
static bool url_path(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                     strchr("-._~/", *p);
        if (o + 4 >= cap)
            return false;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
    return true;
}

/* Downloads repo's file hf into dir; its path in path (cap bytes). */
static lf_code_t fetch_file(const pull_opts_t *o, const char *endpoint, const char *repo, const char *dir,
                            const hub_file_t *hf, const char *token, char *path, size_t cap, lf_err_t *err)
{
    char enc[1600], url[4096];
    if (!url_path(hf->path, enc, sizeof enc))
        return lf_err_set(err, LF_ERR_INVALID, "%s: file name too long", hf->path);
    snprintf(url, sizeof url, "%s/%s/resolve/main/%s", endpoint, repo, enc);
    const char *b = strrchr(hf->path, '/');
    int w = snprintf(path, cap, "%s/%s", dir, b ? b + 1 : hf->path);
    if (w < 0 || (size_t)w >= cap)
        return lf_err_set(err, LF_ERR_INVALID, "model path too long");
    dl_job_t job = {.url = url, .dest = path, .sha256 = hf->sha256, .size = hf->size, .token = token,
                    .progress = o->progress, .log = o->log};
    if (o->log && o->progress != DL_PROGRESS_NONE)
        fprintf(o->log, "pull: %s -> %s\n", url, path);
    return dl_fetch(&job, err);
}

/* The repository's listing in *listing (malloc'd). */
static lf_code_t get_listing(const char *endpoint, const hub_ref_t *ref, const char *token, char **listing,
                             lf_err_t *err)
{
    char list_url[2048];
    snprintf(list_url, sizeof list_url, "%s/api/models/%s/tree/main?recursive=true", endpoint, ref->repo);
    long status = 0;
    lf_code_t rc = dl_get_text(list_url, token, 16u << 20, listing, &status, err);
    if (rc == LF_ERR_NOT_FOUND)
        return lf_err_set(err, LF_ERR_NOT_FOUND, "%s: no such repository on %s (or it is private: set HF_TOKEN)",
                          ref->repo, endpoint);
    if (rc != LF_OK && !status)
        return lf_err_prefix(err, "cannot reach the hub %s (no network? HF_ENDPOINT sets another hub or "
                                  "mirror; a local file can be served with -m FILE)", endpoint);
    return rc;
}

/* The projector of a hub model whose file is path: found beside it, or
 * picked from listing (fetched here when NULL) and downloaded. A model
 * found offline whose hub cannot be reached keeps no projector (said on
 * the log); a projector that fails to download is an error. */
static lf_code_t pull_mmproj(const hub_ref_t *ref, const pull_opts_t *o, const char *models, const char *dir,
                             const char *endpoint, const char *token, const char *listing, const char *model_path,
                             char *mmproj, size_t cap, bool *downloaded, lf_err_t *err)
{
    mmproj[0] = '\0';
    if (!o->force && hub_local_find_mmproj(models, ref, mmproj, cap))
        return LF_OK;
    char *own = NULL;
    if (!listing) {
        lf_err_t lerr = {0};
        if (get_listing(endpoint, ref, token, &own, &lerr) != LF_OK) {
            if (o->log && o->progress != DL_PROGRESS_NONE)
                fprintf(o->log, "pull: not checked for a projector (mmproj): %s\n", lerr.msg);
            return LF_OK;
        }
        listing = own;
    }
    hub_file_t hf;
    lf_code_t rc = hub_pick_mmproj(listing, ref->repo, model_path, &hf, err);
    free(own);
    if (rc == LF_ERR_NOT_FOUND) {
        if (err)
            *err = (lf_err_t){0};
        return LF_OK; /* a text-only repository */
    }
    if (rc == LF_OK)
        rc = fetch_file(o, endpoint, ref->repo, dir, &hf, token, mmproj, cap, err);
    if (rc != LF_OK) {
        mmproj[0] = '\0';
        return lf_err_prefix(err, "the projector (mmproj) %s of %s", hf.path[0] ? hf.path : "", ref->repo);
    }
    if (downloaded)
        *downloaded = true;
    return LF_OK;
}

lf_code_t pull_model(const char *refs, const pull_opts_t *o, char *path, size_t cap, char *mmproj,
                     size_t mmproj_cap, bool *downloaded, lf_err_t *err)
{
    hub_ref_t ref;
    char models[2048], dir[3072], file[512], endpoint[1024];
    const char *token = getenv("HF_TOKEN");
    if (downloaded)
        *downloaded = false;
    if (mmproj && mmproj_cap)
        mmproj[0] = '\0';
    lf_code_t rc = hub_ref_parse(refs, &ref, err);
    if (rc != LF_OK)
        return rc;
    if (o->models_dir && *o->models_dir)
        snprintf(models, sizeof models, "%s", o->models_dir);
    else if (!hub_models_dir(models, sizeof models))
        return lf_err_set(err, LF_ERR_INVALID, "no model directory: set LLM_MODELS_DIR (or HOME)");
    if ((rc = hub_local_dir(models, &ref, dir, sizeof dir, file, sizeof file, err)) != LF_OK)
        return rc;
    hub_endpoint(endpoint, sizeof endpoint);
    const bool want_mmproj = mmproj && mmproj_cap && !ref.is_url;
    if (!o->force && hub_local_find(models, &ref, path, cap)) {
        if (!want_mmproj || o->offline_only) {
            if (want_mmproj)
                hub_local_find_mmproj(models, &ref, mmproj, mmproj_cap);
            return LF_OK;
        }
        const char *b = strrchr(path, '/');
        return pull_mmproj(&ref, o, models, dir, endpoint, token, NULL, b ? b + 1 : path, mmproj, mmproj_cap,
                           downloaded, err);
    }
    if (o->offline_only)
        return lf_err_set(err, LF_ERR_NOT_FOUND, "%s is not in %s", refs, models);

    if (ref.is_url) {
        char url[4096];
        snprintf(url, sizeof url, "%s", ref.url);
        dl_job_t job = {.url = url, .sha256 = o->sha256, .progress = o->progress, .log = o->log};
        /* the token is for the hub only */
        size_t n = strlen(endpoint);
        if (!strncmp(ref.url, endpoint, n) && ref.url[n] == '/')
            job.token = token;
        int w = snprintf(path, cap, "%s/%s", dir, file);
        if (w < 0 || (size_t)w >= cap)
            return lf_err_set(err, LF_ERR_INVALID, "model path too long");
        job.dest = path;
        if (o->log && o->progress != DL_PROGRESS_NONE)
            fprintf(o->log, "pull: %s -> %s\n", url, path);
        rc = dl_fetch(&job, err);
        if (rc == LF_OK && downloaded)
            *downloaded = true;
        return rc;
    }
    char *listing = NULL;
    if ((rc = get_listing(endpoint, &ref, token, &listing, err)) != LF_OK)
        return rc;
    hub_file_t hf = {0};
    rc = hub_pick_gguf(listing, ref.repo, ref.quant, &hf, err);
    if (rc == LF_OK)
        rc = fetch_file(o, endpoint, ref.repo, dir, &hf, token, path, cap, err);
    if (rc == LF_OK && downloaded)
        *downloaded = true;
    if (rc == LF_OK && want_mmproj)
        rc = pull_mmproj(&ref, o, models, dir, endpoint, token, listing, hf.path, mmproj, mmproj_cap, downloaded,
                         err);
    free(listing);
    return rc;
}
