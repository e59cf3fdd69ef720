/* smn_run_cache.h — the finished runs of a long `metacl eval smn` kept on disk (--cache DIR).
 *
 * An evaluation of 5 runs x 50 tasks x 4 stream lengths x 4 agents takes hours on a small
 * machine; stopped half-way (a reboot, a session's end), it would start again from nothing.
 * With a cache directory, every finished run (one agent, one stream or environment, one seed,
 * grid-search runs included) is written there as a small text file named by the SHA-256 of a
 * key text that holds everything the run depends on: the build's commit and the backend, the
 * agent (kind, optimizer, learning rate, new head), the SHA-256 of every checkpoint it starts
 * from or takes its config from, the stream or environment (data set, split, lengths, tasks,
 * steps, round size) and the seed. The same command started again reads those runs back and
 * runs only the missing ones; its tables and JSON are those of an uninterrupted run (each run
 * is deterministic given its key). A file that does not parse, or whose stored key differs, is
 * a miss: the run is made again and the file replaced (atomically).
 *
 * File format (text, one run):
 *     metacl smn run 1
 *     key <64 hex>
 *     tasks N steps S updates U seconds X
 *     N lines: steps updates_to_solve persev_errors persev_n kept_err kept_n hits n
 */
#ifndef MCL_CLI_SMN_RUN_CACHE_H
#define MCL_CLI_SMN_RUN_CACHE_H

#include <stddef.h>

#include "smn_train.h"

/* The SHA-256 (hex) of a run's key text. */
void mcl_smn_cache_key(const char *key_text, char hex[65]);

/* 1 and *res filled (free with mcl_smn_online_result_free) when dir holds the run of key; 0
 * when it does not (no file, another key, or a file that does not parse). */
int mcl_smn_cache_get(const char *dir, const char key[65], mcl_smn_online_result *res);

/* Write the run res under key into dir (created if missing), atomically. */
mcl_status mcl_smn_cache_put(const char *dir, const char key[65], const mcl_smn_online_result *res, char *err,
                             size_t len);

#endif
