/* pull.h - `llm-fcgi pull` and `serve -m REPO:QUANT`: a model reference
 * (hub.h) to a local, checked GGUF file, downloading it when it is missing.
 *
 * For OWNER/NAME[:QUANT] it lists the repository on the hub
 * ({endpoint}/api/models/OWNER/NAME/tree/main?recursive=true; the endpoint
 * is $HF_ENDPOINT, else https://huggingface.co), picks the file, and
 * downloads {endpoint}/OWNER/NAME/resolve/main/PATH with the listing's size
 * and LFS SHA-256 into MODELS_DIR/OWNER/NAME/ (download.h: resumable,
 * checked, GGUF-validated, moved into place), and on request the
 * repository's vision projector (mmproj) beside it. A URL is downloaded into
 * MODELS_DIR/ under its own file name. $HF_TOKEN, when set, is sent as a
 * bearer token to the hub (never to a redirect's other host).
 */
#ifndef LF_PULL_H
#define LF_PULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/status.h"
#include "pull/download.h"

typedef struct {
    const char *models_dir;    /* NULL: hub_models_dir() */
    const char *sha256;        /* expected digest for a URL (optional) */
    bool offline_only;         /* never download: only look in models_dir */
    bool force;                /* download again even when present */
    dl_progress_t progress;
    FILE *log;
} pull_opts_t;

/* Resolves ref to a local file, downloading it when it is not in the
 * model directory yet; its path goes to path (cap bytes). With mmproj (not
 * NULL; mmproj_cap bytes) and a hub reference, the repository's projector
 * for that model too (hub_match_mmproj: F16 first), beside the model; its
 * path goes to mmproj, "" when the repository has none (or, for a model
 * already there, when the hub cannot be reached to ask: said on the log).
 * A projector that fails to download or check is an error (the model
 * stays). *downloaded (may be NULL) tells whether anything was fetched
 * now. Errors as hub.h and download.h; with offline_only and no local
 * copy, LF_ERR_NOT_FOUND. */
lf_code_t pull_model(const char *ref, const pull_opts_t *o, char *path, size_t cap, char *mmproj, size_t mmproj_cap,
                     bool *downloaded, lf_err_t *err);

/* The progress style for stream f: a bar on a terminal, else lines. */
dl_progress_t pull_progress_for(FILE *f);

#endif
