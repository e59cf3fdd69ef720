/* progress.h — the one progress line of the metacl CLI on stderr.
 *
 *   mcl_progress_start("evaluating", total);   ... mcl_progress_update(done); ...
 *   mcl_progress_finish();
 *
 * One \r-updated line "LABEL: DONE/TOTAL (P%), ELAPSED, ETA T" (redrawn at most 5 times a
 * second), cleared by finish. Silent when stderr is not a terminal, when
 * mcl_progress_set_quiet(1) was called (--quiet) or when $METACL_PROGRESS is "0"; stdout is
 * never touched, so piped output stays machine-readable. One line at a time (a new start
 * finishes the previous one); not thread-safe: call it from the main thread. */
#ifndef MCL_CLI_PROGRESS_H
#define MCL_CLI_PROGRESS_H

#include <stdint.h>

void mcl_progress_set_quiet(int quiet);
int mcl_progress_quiet(void);
/* 1: this process is not the one that reports (an MPI rank other than 0): no progress line
 * and no notes either. */
void mcl_progress_set_silent(int silent);
/* 1 when a progress line would be shown (stderr is a terminal and not quiet). */
int mcl_progress_enabled(void);
/* Begin a line; total <= 0: no count and no ETA, only the label and the elapsed time. */
void mcl_progress_start(const char *label, int64_t total);
/* Change the label of the current line (e.g. the model being evaluated). */
void mcl_progress_label(const char *label);
void mcl_progress_update(int64_t done);
/* A message line on stderr (printf format, newline added) that does not garble the progress
 * line: the line is cleared, the message printed, the line drawn again. */
void mcl_progress_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Clear the line (nothing when none is shown). */
void mcl_progress_finish(void);

#endif
