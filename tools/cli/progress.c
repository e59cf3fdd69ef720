/* progress.c — the progress line of the metacl CLI (progress.h). */
#define _POSIX_C_SOURCE 200809L
#include "progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int quiet;
static struct {
    int active;
    char label[160];
    int64_t total, done;
    double t0, last_draw;
} cur;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int silent;
void mcl_progress_set_quiet(int q) { quiet = q || silent; }
void mcl_progress_set_silent(int s)
{
    silent = s;
    quiet = quiet || s;
}
int mcl_progress_quiet(void) { return quiet; }

int mcl_progress_enabled(void)
{
    const char *e = getenv("METACL_PROGRESS");
    if (quiet || (e && !strcmp(e, "0"))) return 0;
    return isatty(STDERR_FILENO);
}

/* "1h02m", "3m05s", "12s" */
static void fmt_dur(char *b, size_t n, double s)
{
    if (s < 0) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(b, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60)
        snprintf(b, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(b, n, "%lds", t);
}

static void draw(double now)
{
    char el[32], eta[32] = "";
    fmt_dur(el, sizeof el, now - cur.t0);
    if (cur.total > 0 && cur.done > 0 && cur.done < cur.total) {
        char d[24];
        fmt_dur(d, sizeof d, (now - cur.t0) / (double)cur.done * (double)(cur.total - cur.done));
        snprintf(eta, sizeof eta, ", ETA %s", d);
    }
    if (cur.total > 0)
        fprintf(stderr, "\r%s: %lld/%lld (%.0f%%), %s%s\033[K", cur.label, (long long)cur.done,
                (long long)cur.total, 100.0 * (double)cur.done / (double)cur.total, el, eta);
    else
        fprintf(stderr, "\r%s: %s\033[K", cur.label, el);
    fflush(stderr);
    cur.last_draw = now;
}

void mcl_progress_start(const char *label, int64_t total)
{
    mcl_progress_finish();
    if (!mcl_progress_enabled()) return;
    cur.active = 1;
    snprintf(cur.label, sizeof cur.label, "%s", label ? label : "");
    cur.total = total;
    cur.done = 0;
    cur.t0 = now_s();
    draw(cur.t0);
}

void mcl_progress_label(const char *label)
{
    if (!cur.active) return;
    snprintf(cur.label, sizeof cur.label, "%s", label ? label : "");
    draw(now_s());
}

void mcl_progress_update(int64_t done)
{
    if (!cur.active) return;
    cur.done = done;
    double t = now_s();
    if (t - cur.last_draw >= 0.2 || (cur.total > 0 && done >= cur.total)) draw(t);
}

void mcl_progress_note(const char *fmt, ...)
{
    if (silent) return;
    if (cur.active) fputs("\r\033[K", stderr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (cur.active) draw(now_s());
    fflush(stderr);
}

void mcl_progress_finish(void)
{
    if (!cur.active) return;
    cur.active = 0;
    fputs("\r\033[K", stderr);
    fflush(stderr);
}
