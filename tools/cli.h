/* cli.h — subcommands of the metacl command-line tool and their shared helpers. */
#ifndef MCL_CLI_H
#define MCL_CLI_H

#include "metacl.h"

/* `metacl bench gemm`: GFLOP/s of the reference sgemm (tools/bench_gemm.c). */
int mcl_cli_bench_gemm(int argc, char **argv);
/* `metacl bench ops`: per-op times on a backend next to the reference (tools/bench_ops.c). */
int mcl_cli_bench_ops(int argc, char **argv);

/* Backend by name ("ref", "opencl"; NULL/empty = $METACL_BACKEND, else ref).
 * Returns 0, or 2 after printing a usage error. */
int mcl_cli_parse_backend(const char *name, mcl_backend_kind *kind);
/* Open a context on the named backend and device (NULL = $METACL_DEVICE / default).
 * Returns 0, 2 (unknown backend name) or 1 (the backend could not be opened), with a message
 * on stderr. */
int mcl_cli_open_ctx(const char *backend, const char *device, mcl_ctx **ctx);
/* If argv[*i] is `flag`, store the next argument in *value, advance *i and return 1;
 * return 0 when argv[*i] is another option, -1 (message printed) when the value is missing. */
int mcl_cli_take_value(int argc, char **argv, int *i, const char *flag, const char **value);

/* Parse a decimal integer in [lo, hi]: 0, or 1 when s is not one. */
int mcl_cli_parse_int(const char *s, long lo, long hi, int *out);

/* `metacl data prepare|info|show`: prepared image sets (tools/data_cmd.c). */
int mcl_cli_data(int argc, char **argv);
/* `metacl bench data`: images/s of the stroke renderer on one core (tools/bench_data.c). */
int mcl_cli_bench_data(int argc, char **argv);
/* `metacl bench acl`: the ACL model workloads (tools/bench_acl.c). */
int mcl_cli_bench_acl(int argc, char **argv);
/* `metacl train acl` (tools/train_cmd.c). */
int mcl_cli_train(int argc, char **argv);
/* `metacl eval acl` (tools/eval_cmd.c). */
int mcl_cli_eval(int argc, char **argv);
/* `metacl ckpt info|export` (tools/ckpt_cmd.c). */
int mcl_cli_ckpt(int argc, char **argv);
/* `metacl plot` (tools/plot_cmd.c). */
int mcl_cli_plot(int argc, char **argv);

#endif
