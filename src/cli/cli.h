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

#endif
