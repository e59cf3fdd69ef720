/* cli.h — subcommands of the metacl command-line tool and their shared helpers. */
#ifndef MCL_CLI_H
#define MCL_CLI_H

#include "cli_opts.h"
#include "json_out.h"
#include "metacl.h"
#include "train.h"

/* The subcommand tables of `metacl data`, `metacl bench` and `metacl ckpt` (for dispatch and
 * for the listing of `metacl --help`). */
extern const mcl_cli_sub mcl_cli_data_subs[];
extern const int mcl_cli_n_data_subs;
extern const mcl_cli_sub mcl_cli_bench_subs[];
extern const int mcl_cli_n_bench_subs;
extern const mcl_cli_sub mcl_cli_ckpt_subs[];
extern const int mcl_cli_n_ckpt_subs;

/* Families of `metacl train` / `metacl eval`, as " acl, ..." (from mcl_families()). */
void mcl_cli_print_families(FILE *f);

/* Unless the user set a wait policy: OMP_WAIT_POLICY=passive when other processes compete at
 * start, GOMP_SPINCOUNT=10000 when the machine is idle; sets it and executes the program again
 * (argv as main got it); returns only when nothing was to do or the exec failed
 * (tools/cli/omp_wait.c). mcl_cli_omp_wait_policy_name: the policy in force and why, in words
 * (`metacl version`). */
void mcl_cli_omp_wait_policy(char **argv);
const char *mcl_cli_omp_wait_policy_name(void);
/* The team size follows the load (src/common/threads.h) unless METACL_THREADS_FOLLOW_LOAD is "0"
 * or OMP_DYNAMIC is set (tools/cli/omp_wait.c). mcl_cli_omp_team_policy_name: the policy in
 * force, in words (`metacl version`). */
void mcl_cli_omp_team_policy(void);
const char *mcl_cli_omp_team_policy_name(void);

/* `metacl bench gemm`: GFLOP/s of the reference sgemm (tools/cli/bench_gemm.c). */
int mcl_cli_bench_gemm(int argc, char **argv);
/* `metacl bench ops`: per-op times on a backend next to the reference (tools/cli/bench_ops.c). */
int mcl_cli_bench_ops(int argc, char **argv);
/* `metacl bench roofline`: FMA peak, bandwidth and the heavy ops' fraction of them (tools/cli/bench_roofline.c). */
int mcl_cli_bench_roofline(int argc, char **argv);

/* Backend by name ("ref", "opencl"; NULL/empty = $METACL_BACKEND, else ref).
 * Returns 0, or 2 after printing a usage error. */
int mcl_cli_parse_backend(const char *name, mcl_backend_kind *kind);
/* Open a context on the named backend and device (NULL or "" = $METACL_DEVICE / default).
 * Returns 0, 2 (unknown backend name) or 1 (the backend could not be opened), with a message
 * on stderr. */
int mcl_cli_open_ctx(const char *backend, const char *device, mcl_ctx **ctx);
/* A warning on stderr ("metacl CMD: warning: WHAT: N of M parameter values are not finite
 * (first in 'name') ...") when a loaded or imported model holds NaN or infinite parameters,
 * which would evaluate to chance without a word; the number of such values (0: silent). */
int64_t mcl_cli_warn_nonfinite(const char *cmd, const char *what, mcl_params *ps);
/* A training config or checkpoint named on the command line (--config, --ckpt): `given` itself
 * when it exists or has a '/' (explicit paths work as always); else the installed copy
 * <pkgdatadir>/<sub>/<given> (sub "configs" or "checkpoints"), or the same with ext (".conf",
 * ".ckpt") appended, when that file exists; else `given` (the caller then reports it missing).
 * Returns given or buf. */
/* The installed data directory, $(pkgdatadir): Makefile.am passes it to the CLI's objects
 * ("" = no lookup). */
#ifndef MCL_PKGDATADIR
#define MCL_PKGDATADIR ""
#endif
/* for --help: where the installed configs and checkpoints are */
#define MCL_CLI_CONFIGS_HELP MCL_PKGDATADIR "/configs"
#define MCL_CLI_CHECKPOINTS_HELP MCL_PKGDATADIR "/checkpoints"
const char *mcl_cli_installed_file(const char *given, const char *sub, const char *ext, char *buf,
                                   size_t len);
/* The OpenCL device name of ctx (NULL for the reference backend or without OpenCL). */
const char *mcl_cli_device_name(const mcl_ctx *ctx);
/* --json provenance: opens the object "provenance" and writes metacl_version, git_commit
 * (null in a build outside git), backend, device (its name), device_index (its place in
 * `metacl devices`), device_platform, device_driver and device_type (null when none: the
 * reference backend); the caller adds its own keys (config, seeds, data) and closes it with
 * mcl_json_end_obj. ctx may be NULL. */
void mcl_cli_json_provenance_begin(mcl_json *j, const mcl_ctx *ctx);
/* the source tree's commit when this binary was built ("<12 hex>", "-dirty" appended when
 * tracked files differed from it), NULL when it was not built from a git checkout; generated at
 * every build into tools/cli/git_commit.c (Makefile.am) */
const char *mcl_cli_git_commit(void);
/* The same device keys as members of an object being printed by hand (the bench JSON):
 * `,"device":..,"device_index":..,"device_platform":..,"device_driver":..,"device_type":..`. */
void mcl_cli_json_device_fields(FILE *f, const mcl_ctx *ctx);
/* One data set as an array element: {"spec", "dir", "sha256": {file: hex}} for a prepared
 * set (the sums of its SHA256SUMS), {"spec"} for idx:/pngdir: data. */
void mcl_cli_json_dataset(mcl_json *j, const char *spec, const char *data_dir);
/* `metacl data prepare|info|show`: prepared image sets (tools/cli/data_cmd.c). */
int mcl_cli_data(int argc, char **argv);
/* `metacl bench data`: images/s of the stroke renderer on one core (tools/cli/bench_data.c). */
int mcl_cli_bench_data(int argc, char **argv);
/* `metacl bench acl`: the ACL model workloads (tools/cli/bench_acl.c). */
int mcl_cli_bench_acl(int argc, char **argv);
/* `metacl bench oct` (tools/cli/bench_oct.c). */
int mcl_cli_bench_oct(int argc, char **argv);
/* `metacl bench smn` (tools/cli/bench_smn.c). */
int mcl_cli_bench_smn(int argc, char **argv);
/* `metacl bench lm` (tools/cli/bench_lm.c). */
int mcl_cli_bench_lm(int argc, char **argv);
/* `metacl train acl` (tools/cli/train_cmd.c). */
int mcl_cli_train(int argc, char **argv);
/* `metacl train` with argv[1] the family; cmd_name (NULL = "train FAMILY") names the command
 * in messages, about and epilog (NULL = train's) its --help; after (may be NULL) runs on rank
 * 0 once a run has finished, given its directory: its return is the exit status. */
int mcl_cli_train_with(int argc, char **argv, const char *cmd_name, const char *about,
                       const char *epilog, int (*after)(const char *run_dir, int quiet, int json));
/* `metacl online`: an online-transformer run (train oct) and its report. */
int mcl_cli_online(int argc, char **argv);
/* `metacl eval acl` (tools/cli/eval_acl.c). */
int mcl_cli_eval(int argc, char **argv);
/* `metacl eval smn` (eval_smn.c); argv[0] is the family word */
int mcl_cli_eval_smn(const mcl_family *fam, int argc, char **argv);
/* `metacl eval lm` and `metacl sample lm` (tools/cli/eval_lm.c). */
int mcl_cli_eval_lm(const mcl_family *fam, int argc, char **argv);
int mcl_cli_sample_lm(int argc, char **argv);
/* `metacl ckpt info|export` (tools/cli/ckpt_cmd.c). */
int mcl_cli_ckpt(int argc, char **argv);
/* `metacl stats`: the statistics of metrics.h on numbers from the command line (stats_cmd.c). */
int mcl_cli_stats(int argc, char **argv);
/* `metacl plot` (tools/cli/plot_cmd.c). */
int mcl_cli_plot(int argc, char **argv);

#endif
