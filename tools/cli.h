/* cli.h — subcommands of the metacl command-line tool. */
#ifndef MCL_CLI_H
#define MCL_CLI_H

/* `metacl bench gemm`: GFLOP/s of the reference sgemm (tools/bench_gemm.c). */
int mcl_cli_bench_gemm(int argc, char **argv);

#endif
