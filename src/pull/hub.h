/* hub.h - naming models on a Hugging Face-style hub: references, the choice
 * of one GGUF file in a repository, and where a pulled file lives locally.
 *
 * A reference is either a URL (http:// or https://, downloaded as is) or
 * REPO[:QUANT], Hugging Face's naming (as llama.cpp's -hf and Ollama's
 * hf.co/ use it): REPO is OWNER/NAME, QUANT a quantization tag such as Q8_0
 * or Q4_K_M, matched case-insensitively against the GGUF file names of the
 * repository as a whole word ("Q4_K" never matches "...Q4_K_M.gguf").
 * Without QUANT: the only GGUF of the repository, else Q4_K_M, else Q8_0.
 * Multimodal projectors (mmproj) are never chosen as the model (see
 * hub_match_mmproj for the projector that goes with it); a quantization split
 * into several files (-00001-of-00003.gguf) is refused (llm-fcgi loads one
 * file).
 *
 * Local layout: MODELS_DIR/OWNER/NAME/FILE.gguf for hub references,
 * MODELS_DIR/FILE for URLs, so a model found there needs no network.
 * All functions are pure (no I/O) except hub_local_find (reads one
 * directory) and hub_models_dir (reads the environment). Strings written
 * into caller buffers are NUL-terminated; too long inputs are errors.
 */
#ifndef LF_HUB_H
#define LF_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#define HUB_DEFAULT_ENDPOINT "https://huggingface.co"

typedef struct {
    bool is_url;
    char url[2048];    /* is_url: the URL */
    char repo[256];    /* OWNER/NAME */
    char quant[64];    /* "" when not given */
} hub_ref_t;

/* One GGUF file of a repository listing. sha256 is "" when the listing has
 * no LFS digest; size 0 when unknown. */
typedef struct {
    char path[512];    /* path inside the repository */
    uint64_t size;
    char sha256[65];
} hub_file_t;

/* Parses a reference. LF_ERR_INVALID with a message naming the expected
 * forms when it is neither a URL nor OWNER/NAME[:QUANT]. */
lf_code_t hub_ref_parse(const char *s, hub_ref_t *out, lf_err_t *err);

/* Does s look like a reference rather than a file path? URLs, and
 * OWNER/NAME[:QUANT] with no other slash and no ".gguf" ending. (Callers
 * check first whether s is an existing file.) */
bool hub_ref_looks_like(const char *s);

/* Picks the file for quant (NULL or "" = default rule above) among the
 * tree listing of a repository (the JSON array GET
 * {endpoint}/api/models/{repo}/tree/main returns: objects with "type",
 * "path", "size" and, for LFS files, "lfs": {"oid", "size"}). Errors:
 * LF_ERR_FORMAT for a listing that is not such JSON, LF_ERR_NOT_FOUND when
 * no file matches (the message lists the quantizations there are),
 * LF_ERR_INVALID when several do, LF_ERR_UNSUPPORTED for a split file. */
lf_code_t hub_pick_gguf(const char *tree_json, const char *repo, const char *quant, hub_file_t *out,
                        lf_err_t *err);

/* The index among names[0..n) (file names or paths) that quant selects,
 * by the same rules; -1 and err as hub_pick_gguf otherwise. */
int hub_match_quant(const char *const *names, size_t n, const char *repo, const char *quant, lf_err_t *err);

/* The projector (mmproj) that goes with the model file model_path of a
 * repository: a .gguf whose file name contains "mmproj" (any case; not a
 * split file), in the model's directory or one above it, the deepest
 * winning (llama.cpp's -hf rule), then by type: F16, BF16, F32, Q8_0, the
 * rest (as a whole word in the name, like QUANT; where llama.cpp's -hf
 * takes the type closest in bits to the model's, F16 keeps the encoder as
 * its authors published it, whatever the text model's quantization); ties
 * by name. The index among names[0..n), or -1 when the repository has
 * none. */
int hub_match_mmproj(const char *const *names, size_t n, const char *model_path);

/* hub_match_mmproj over a tree listing (as hub_pick_gguf); LF_ERR_NOT_FOUND
 * when there is no projector, LF_ERR_FORMAT for a bad listing. */
lf_code_t hub_pick_mmproj(const char *tree_json, const char *repo, const char *model_path, hub_file_t *out,
                          lf_err_t *err);

/* Where a reference is stored: dir (MODELS_DIR/OWNER/NAME, or MODELS_DIR
 * for URLs) and, for URLs, the file name (the URL's last path segment,
 * query removed; "" for hub references, whose name comes from the listing).
 * LF_ERR_INVALID when it does not fit or the URL has no usable file name. */
lf_code_t hub_local_dir(const char *models_dir, const hub_ref_t *ref, char *dir, size_t dir_cap, char *file,
                        size_t file_cap, lf_err_t *err);

/* A pulled file for ref already in models_dir: its path in out (cap
 * bytes) and true, or false (nothing there, or no unique match). Reads the
 * directory; partial downloads (*.part) never count. */
bool hub_local_find(const char *models_dir, const hub_ref_t *ref, char *out, size_t cap);

/* The projector pulled with a hub reference's model (files side by side
 * in MODELS_DIR/OWNER/NAME/, chosen by hub_match_mmproj): its path and
 * true, or false. */
bool hub_local_find_mmproj(const char *models_dir, const hub_ref_t *ref, char *out, size_t cap);

/* The model directory: $LLM_MODELS_DIR, else $XDG_CACHE_HOME/llm-fcgi, else
 * $HOME/.cache/llm-fcgi. false when none can be formed. */
bool hub_models_dir(char *out, size_t cap);

/* The hub's address: $HF_ENDPOINT (trailing slashes removed), else
 * HUB_DEFAULT_ENDPOINT. */
void hub_endpoint(char *out, size_t cap);

/* Is s exactly 64 hex digits (optionally quoted, optionally W/-prefixed,
 * as an ETag)? Writes it in lower case to out (65 bytes) when it is. */
bool hub_etag_sha256(const char *s, char out[65]);

#endif
