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

lf_code_t pull_model(const char *refs, const pull_opts_t *o, char *path, size_t cap, bool *downloaded,
                     lf_err_t *err)
{
    hub_ref_t ref;
    char models[2048], dir[3072], file[512], endpoint[1024];
    const char *token = getenv("HF_TOKEN");
    if (downloaded)
        *downloaded = false;
    lf_code_t rc = hub_ref_parse(refs, &ref, err);
    if (rc != LF_OK)
        return rc;
    if (o->models_dir && *o->models_dir)
        snprintf(models, sizeof models, "%s", o->models_dir);
    else if (!hub_models_dir(models, sizeof models))
        return lf_err_set(err, LF_ERR_INVALID, "no model directory: set LLM_MODELS_DIR (or HOME)");
    if (!o->force && hub_local_find(models, &ref, path, cap))
        return LF_OK;
    if (o->offline_only)
        return lf_err_set(err, LF_ERR_NOT_FOUND, "%s is not in %s", refs, models);
    if ((rc = hub_local_dir(models, &ref, dir, sizeof dir, file, sizeof file, err)) != LF_OK)
        return rc;

    char url[4096];
    dl_job_t job = {.token = NULL, .progress = o->progress, .log = o->log};
    hub_file_t hf = {0};
    hub_endpoint(endpoint, sizeof endpoint);
    if (ref.is_url) {
        snprintf(url, sizeof url, "%s", ref.url);
        job.sha256 = o->sha256;
        /* the token is for the hub only */
        size_t n = strlen(endpoint);
        if (!strncmp(ref.url, endpoint, n) && ref.url[n] == '/')
            job.token = token;
    } else {
        char list_url[2048], *listing = NULL;
        snprintf(list_url, sizeof list_url, "%s/api/models/%s/tree/main?recursive=true", endpoint, ref.repo);
        long status = 0;
        rc = dl_get_text(list_url, token, 16u << 20, &listing, &status, err);
        if (rc == LF_ERR_NOT_FOUND)
            return lf_err_set(err, LF_ERR_NOT_FOUND, "%s: no such repository on %s (or it is private: set HF_TOKEN)",
                              ref.repo, endpoint);
        if (rc != LF_OK && !status)
            return lf_err_prefix(err, "cannot reach the hub %s (no network? HF_ENDPOINT sets another hub or "
                                      "mirror; a local file can be served with -m FILE)", endpoint);
        if (rc != LF_OK)
            return rc;
        rc = hub_pick_gguf(listing, ref.repo, ref.quant, &hf, err);
        free(listing);
        if (rc != LF_OK)
            return rc;
        char enc[1600];
        if (!url_path(hf.path, enc, sizeof enc))
            return lf_err_set(err, LF_ERR_INVALID, "%s: file name too long", hf.path);
        snprintf(url, sizeof url, "%s/%s/resolve/main/%s", endpoint, ref.repo, enc);
        const char *b = strrchr(hf.path, '/');
        snprintf(file, sizeof file, "%s", b ? b + 1 : hf.path);
        job.sha256 = hf.sha256;
        job.size = hf.size;
        job.token = token;
    }
    int w = snprintf(path, cap, "%s/%s", dir, file);
    if (w < 0 || (size_t)w >= cap)
        return lf_err_set(err, LF_ERR_INVALID, "model path too long");
    job.url = url;
    job.dest = path;
    if (o->log && o->progress != DL_PROGRESS_NONE)
        fprintf(o->log, "pull: %s -> %s\n", url, path);
    rc = dl_fetch(&job, err);
    if (rc == LF_OK && downloaded)
        *downloaded = true;
    return rc;
}
