/* cli.h - subcommands of the llm-fcgi binary.
 *
 * Each subcommand is `int cmd_NAME(int argc, char **argv)` in its own file
 * src/cli/cmd_NAME.c; argv[0] is the subcommand name. It returns the process
 * exit status: 0 success, 1 runtime failure (bad model, I/O), 2 usage error.
 */
#ifndef LF_CLI_H
#define LF_CLI_H

int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_chat_template(int argc, char **argv);
int cmd_grammar(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_embed(int argc, char **argv);

#include <stdbool.h>
#include <stdint.h>

#include "engine/model/forward.h"

/* cli_attn.c: --flash-attn auto|on|off (false if s is none of them), its
 * name, and llama.cpp's short spellings -fa, -ctk, -ctv rewritten in argv
 * as --flash-attn, --cache-type-k, --cache-type-v (before getopt). */
bool cli_parse_flash_attn(const char *s, fwd_attn_t *out);
const char *cli_flash_attn_name(fwd_attn_t a);
void cli_llama_aliases(int argc, char **argv);

/* cmd_bench.c: mean and sample standard deviation of v[0..n). */
void bench_mean_sd(const double *v, int n, double *mean, double *sd);

/* cmd_bench_spec.c: `bench --spec MODE` (speculative decoding with and
 * without, through the scheduler). Returns the exit status. */
int bench_spec(const char *path, const char *mode, const char *draft_path, int32_t threads, int32_t n_gen,
               int32_t reps, int32_t streams, int32_t k_max, double row_cost, bool text_pred, bool json);

/* cmd_bench_vision.c: `bench --mmproj FILE --image FILE` (the time to
 * encode one image). Returns the exit status. */
int bench_vision(const char *mmproj, const char *image, int32_t threads, int32_t reps, int32_t warmup, bool json);

#endif
