/* data_cmd.c — `metacl data prepare|info|show`: build the prepared image sets, describe and
 * verify them, and draw contact sheets. Exit codes: 0 ok, 1 runtime error, 2 usage error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "augment.h"
#include "cli.h"
#include "dataset.h"
#include "util.h"
#include "dataset_io.h"
#include "fmnist.h"
#include "png_io.h"
#include "prepared.h"
#include "progress.h"
#include "rng.h"
#include "strokes.h"
#include "text.h"
#include "textprep.h"

#define PIX (MCL_IMG * MCL_IMG)

static int is_stroke_set(const char *name)
{
    return strcmp(name, "hanzi") == 0 || strcmp(name, "kanji") == 0 ||
           strcmp(name, "hershey") == 0;
}

static int is_user_spec(const char *name)
{
    return strncmp(name, "idx:", 4) == 0 || strncmp(name, "pngdir:", 7) == 0;
}

/* Library notices (the text corpus's progress) on stderr, unless --quiet. */
static void notice_to_stderr(void *arg, const char *msg)
{
    (void)arg;
    if (mcl_progress_quiet()) return;
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
}

/* ---- prepare ---- */

static void prepare_progress(void *arg, int64_t done, int64_t total)
{
    static int64_t started_total = -1;
    if (started_total != total) { /* the first call of a preparation */
        mcl_progress_start((const char *)arg, total);
        started_total = total;
    }
    mcl_progress_update(done);
    if (done >= total) { /* rendering done: clear the line before anything is printed */
        mcl_progress_finish();
        started_total = -1;
    }
}

#define MANIFEST_HELP "text: the pinned corpus to compare with (default data/" MCL_TEXT_MANIFEST ",\n" \
                      "else " MCL_PKGDATADIR "/" MCL_TEXT_MANIFEST ")"
#define DATA_DIR_HELP "data directory (default $METACL_DATA, else ./data/cache if it exists, else $XDG_DATA_HOME/metacl)"

typedef struct prepare_opts {
    char data_dir[4096];
    int instances;
    uint64_t seed;
    int cap_mb;
    char domains[MCL_TEXT_MAX_DOMAINS][MCL_TEXT_MAX_NAME + 1];
    int n_domains;
    char name[64];
    int per_file;
    char debs[4096];
    char manifest[4096];
} prepare_opts;

static const mcl_key prepare_keys[] = {
    MCL_OPT_STR("data-dir", 0, prepare_opts, data_dir, NULL, "DIR", DATA_DIR_HELP),
    MCL_OPT_INT("instances", 0, prepare_opts, instances, 1, 100000, "20", "N",
                "rendered samples per class of a stroke set"),
    MCL_OPT_U64("seed", 0, prepare_opts, seed, "1", "N", "seed of the renderings of a stroke set"),
    MCL_OPT_INT("cap-mb", 0, prepare_opts, cap_mb, 0, 1024, "5", "N",
                "text: at most N MiB per domain, evenly spaced pieces of it (0 = no cap)"),
    MCL_OPT_STRLIST("domains", 0, prepare_opts, domains, n_domains, "D[,D...]",
                    "text: only these domains (dictionary, lore, rst, python, fortunes-de,\n"
                    "fortunes-ru, kjv, spanish, commentary, fiction; default all)"),
    MCL_OPT_STR("name", 0, prepare_opts, name, NULL, "NAME",
                "text: the corpus directory DIR/NAME (default text, or user for txt:)"),
    MCL_OPT_FLAG("per-file", 0, prepare_opts, per_file,
                 "txt:: one domain per file (named after it) instead of one for all"),
    MCL_OPT_STR("debs", 0, prepare_opts, debs, NULL, "DIR",
                "text: take PKG_*.deb from DIR when there (else apt-get download)"),
    MCL_OPT_STR("manifest", 0, prepare_opts, manifest, NULL, "FILE", MANIFEST_HELP),
};
static const mcl_cli_cmd prepare_cmd = {
    .name = "data prepare",
    .synopsis = "NAME [--data-dir DIR] [--instances N] [--seed N]\n"
                "text [--domains D,...] [--cap-mb N] [--name NAME] [--debs DIR] [--manifest FILE] [--data-dir DIR]\n"
                "txt:FILE[,FILE...] [--name NAME] [--per-file] [--cap-mb N] [--data-dir DIR]",
    .about = "Build the prepared set NAME (fmnist, hanzi, kanji, hershey) in DIR/NAME; `text`: the\n"
             "multi-domain text corpus from Debian packages (apt-get download, dpkg-deb -x) in\n"
             "DIR/text; `txt:FILE,...`: a corpus of the same layout from UTF-8 files (doc/data.md).",
    .opts = prepare_keys, .n_opts = (int)(sizeof prepare_keys / sizeof prepare_keys[0]), .max_pos = 1};

static const char *const text_only_opts[] = {"cap-mb", "domains", "name", "per-file", "debs", "manifest", NULL};

/* The pinned manifest: given (any path), else data/text-manifest.txt in the working directory
 * (a source tree), else the installed one; NULL when none is readable. */
static const char *find_manifest(const char *given, char *buf, size_t cap)
{
    if (given && given[0]) return given;
    snprintf(buf, cap, "data/%s", MCL_TEXT_MANIFEST);
    FILE *f = fopen(buf, "r");
    if (!f && MCL_PKGDATADIR[0]) {
        snprintf(buf, cap, "%s/%s", MCL_PKGDATADIR, MCL_TEXT_MANIFEST);
        f = fopen(buf, "r");
    }
    if (!f) return NULL;
    fclose(f);
    return buf;
}

/* A corpus built from Debian packages by `data prepare text` (not txt:, not an excerpt)? */
static int is_debian_corpus(const mcl_text_corpus *c)
{
    const char *src = mcl_text_meta(c, "source");
    return src && strncmp(src, "Debian packages", 15) == 0;
}

/* The corpus in dir against the pinned manifest: per domain "pinned" or what drifted, as text
 * (f) or JSON (j, an object "pin"). Returns the number of drifted domains, -1 when the
 * comparison could not be made (said on stderr; not an error of the corpus). */
static int report_pin(const char *cmd, const char *dir, const char *given, FILE *f, mcl_json *j)
{
    char buf[4096], err[1024] = "";
    const char *man = find_manifest(given, buf, sizeof buf);
    mcl_text_drift *dr = NULL;
    int nd = 0, drifted = 0;
    if (!man) {
        fprintf(stderr, "%s: no pinned manifest (data/%s) to compare the corpus with\n", cmd,
                MCL_TEXT_MANIFEST);
        return -1;
    }
    if (mcl_text_pin_compare(dir, man, &dr, &nd, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return -1;
    }
    for (int d = 0; d < nd; d++) drifted += dr[d].state != MCL_TEXT_PIN_SAME;
    if (j) {
        mcl_json_begin_obj(j, "pin");
        mcl_json_str(j, "manifest", man);
        mcl_json_bool(j, "same", drifted == 0);
        mcl_json_begin_arr(j, "domains");
        for (int d = 0; d < nd; d++) {
            mcl_json_begin_obj(j, NULL);
            mcl_json_str(j, "name", dr[d].domain);
            mcl_json_str(j, "state", dr[d].state == MCL_TEXT_PIN_SAME ? "pinned"
                                     : dr[d].state == MCL_TEXT_PIN_DRIFTED ? "drifted" : "unpinned");
            mcl_json_str(j, "packages", dr[d].packages);
            mcl_json_str(j, "files", dr[d].files);
            mcl_json_end_obj(j);
        }
        mcl_json_end_arr(j);
        mcl_json_end_obj(j);
    } else {
        fprintf(f, "  pinned     %s: %d of %d domains as pinned%s\n", man, nd - drifted, nd,
                drifted ? "; the docs' LM numbers were measured on the pinned corpus" : "");
        for (int d = 0; d < nd; d++) {
            if (dr[d].state == MCL_TEXT_PIN_SAME) continue;
            fprintf(f, "    %-14s %s", dr[d].domain, mcl_text_pin_state_name(dr[d].state));
            if (dr[d].packages[0]) fprintf(f, ": packages %s (pinned -> here)", dr[d].packages);
            if (dr[d].files[0]) fprintf(f, "%s files differ: %s", dr[d].packages[0] ? ";" : ":", dr[d].files);
            fprintf(f, "\n");
        }
    }
    if (drifted)
        fprintf(stderr, "%s: %d domain%s of %s differ%s from the pinned corpus (%s)\n", cmd, drifted,
                drifted == 1 ? "" : "s", dir, drifted == 1 ? "s" : "", man);
    free(dr);
    return drifted;
}

/* The sizes of a prepared corpus, after `data prepare text|txt:`; a Debian corpus compared
 * with the pinned manifest (given, or the default). */
static int print_text_summary(const char *dd, const char *name, const char *manifest)
{
    char dir[4096], err[1024] = "";
    mcl_text_corpus *c = NULL;
    if (mcl_text_dir(dd, name, dir, sizeof dir, err, sizeof err) != MCL_OK ||
        mcl_text_open(dir, MCL_TEXT_VERIFY, &c, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl data prepare: the corpus just written does not check: %s\n", err);
        return 1;
    }
    long long tot[4] = {0};
    printf("%s: %d domains in %s\n", mcl_text_name(c), mcl_text_domains(c), dir);
    printf("  %-14s %10s %10s %10s %10s\n", "domain", "train", "valid", "test", "bytes");
    for (int d = 0; d < mcl_text_domains(c); d++) {
        int64_t n[4];
        const uint8_t *b;
        mcl_text_split(c, d, "train", &b, &n[0]);
        mcl_text_split(c, d, "valid", &b, &n[1]);
        mcl_text_split(c, d, "test", &b, &n[2]);
        n[3] = n[0] + n[1] + n[2];
        for (int k = 0; k < 4; k++) tot[k] += n[k];
        printf("  %-14s %10lld %10lld %10lld %10lld\n", mcl_text_domain_name(c, d), (long long)n[0],
               (long long)n[1], (long long)n[2], (long long)n[3]);
    }
    printf("  %-14s %10lld %10lld %10lld %10lld\n", "total", tot[0], tot[1], tot[2], tot[3]);
    int deb = is_debian_corpus(c);
    mcl_text_close(c);
    if (deb) (void)report_pin("metacl data prepare text", dir, manifest, stdout, NULL);
    return 0;
}

static int cmd_prepare_text(const prepare_opts *o, const mcl_cli_parsed *p, const char *name,
                            const char *dd)
{
    int user = strncmp(name, "txt:", 4) == 0;
    if (mcl_cli_given(&prepare_cmd, p, "instances") || mcl_cli_given(&prepare_cmd, p, "seed"))
        fprintf(stderr, "metacl data prepare: --instances/--seed apply to stroke sets; ignored "
                "for %s\n", user ? "txt:" : "text");
    if (user && (mcl_cli_given(&prepare_cmd, p, "domains") || mcl_cli_given(&prepare_cmd, p, "debs")))
        return mcl_cli_usage_error(&prepare_cmd, "--domains and --debs are for `text`, not txt:");
    if (!user && mcl_cli_given(&prepare_cmd, p, "per-file"))
        return mcl_cli_usage_error(&prepare_cmd, "--per-file is for txt:FILE,...");
    const char *domains[MCL_TEXT_MAX_DOMAINS];
    for (int i = 0; i < o->n_domains; i++) {
        int known = 0;
        for (int j = 0; mcl_text_domain_names[j]; j++) known |= strcmp(o->domains[i], mcl_text_domain_names[j]) == 0;
        if (!known)
            return mcl_cli_usage_error(&prepare_cmd,
                                       "unknown text domain '%s' (dictionary, lore, rst, python, "
                                       "fortunes-de, fortunes-ru, kjv, spanish, commentary, fiction)",
                                       o->domains[i]);
        domains[i] = o->domains[i];
    }
    const char *cname = o->name[0] ? o->name : user ? "user" : MCL_TEXT_DEFAULT_NAME;
    char dir[4096], err[2048] = "";
    if (mcl_text_dir(dd, cname, dir, sizeof dir, err, sizeof err) != MCL_OK)
        return mcl_cli_usage_error(&prepare_cmd, "%s", err);
    mcl_text_prepare_opts to = {0};
    to.data_dir = dd;
    to.name = cname;
    to.cap_bytes = (int64_t)o->cap_mb << 20;
    to.domains = domains;
    to.n_domains = o->n_domains;
    to.debs_dir = o->debs[0] ? o->debs : NULL;
    to.per_file = o->per_file;
    mcl_set_notice_sink(notice_to_stderr, NULL);
    mcl_tmpdir_guard_signals(); /* Ctrl-C, SIGTERM: the work directories go with the process */
    mcl_status st;
    if (user) {
        /* txt:FILE[,FILE...] */
        char *list = strdup(name + 4);
        const char *files[MCL_TEXT_MAX_DOMAINS];
        int nf = 0, too_many = 0, empty = 0;
        if (!list) {
            fprintf(stderr, "metacl data prepare: out of memory\n");
            return 1;
        }
        for (char *q = list, *next; q; q = next) {
            next = strchr(q, ',');
            if (next) *next++ = 0;
            if (!*q) empty = 1;
            else if (nf == MCL_TEXT_MAX_DOMAINS) too_many = 1;
            else files[nf++] = q;
        }
        if (nf == 0 || empty || too_many) {
            free(list);
            return mcl_cli_usage_error(&prepare_cmd, "txt: wants 1 to %d files separated by ',' "
                                       "(txt:a.txt,b.txt)", MCL_TEXT_MAX_DOMAINS);
        }
        st = mcl_text_prepare_user(&to, files, nf, err, sizeof err);
        free(list);
    } else
        st = mcl_text_prepare(&to, err, sizeof err);
    if (st != MCL_OK) {
        fprintf(stderr, "metacl data prepare %s: %s\n", user ? name : "text", err[0] ? err : mcl_status_str(st));
        return 1;
    }
    return print_text_summary(dd, cname, o->manifest);
}

static int cmd_prepare(int argc, char **argv)
{
    prepare_opts o;
    mcl_cli_parsed p;
    int prc = mcl_cli_parse(&prepare_cmd, argc, argv, &o, &p);
    if (prc != MCL_CLI_GO) return prc;
    if (p.n_pos == 0) {
        fprintf(stderr, "metacl data prepare: which set? (fmnist, hanzi, kanji, hershey, text, "
                "txt:FILE)\n");
        return 2;
    }
    const char *name = p.pos[0], *data_dir = o.data_dir;
    const long long instances = o.instances;
    const uint64_t seed = o.seed;
    const int inst_s = mcl_cli_given(&prepare_cmd, &p, "instances"), seed_s = mcl_cli_given(&prepare_cmd, &p, "seed");
    const char *dd = data_dir && *data_dir ? data_dir : mcl_data_dir_default();
    if (!dd) {
        fprintf(stderr, "metacl data prepare: %s\n", MCL_NO_DATA_DIR);
        return 1;
    }
    if (strcmp(name, "text") == 0 || strncmp(name, "txt:", 4) == 0)
        return cmd_prepare_text(&o, &p, name, dd);
    for (int i = 0; text_only_opts[i]; i++)
        if (mcl_cli_given(&prepare_cmd, &p, text_only_opts[i]))
            return mcl_cli_usage_error(&prepare_cmd, "--%s is for the text corpus (text, txt:FILE)",
                                       text_only_opts[i]);
    char err[1024] = "";
    mcl_status st;
    char label[128];
    snprintf(label, sizeof label, "preparing %s: images", name);
    mcl_prepare_set_progress(prepare_progress, label);
    if (strcmp(name, "fmnist") == 0) {
        if (inst_s || seed_s)
            fprintf(stderr, "metacl data prepare: --instances/--seed apply to stroke sets; "
                    "ignored for fmnist\n");
        mcl_fmnist_stats s;
        st = mcl_fmnist_prepare(dd, NULL, &s, err, sizeof err);
        if (st == MCL_OK) {
            printf("fmnist: %lld images (%lld train, %lld test), 10 classes, in %s/fmnist\n",
                   s.n_train + s.n_test, s.n_train, s.n_test, dd);
            printf("fmnist: train pixel mean/std: 28x28 %.4f/%.4f (doc/data.md: 0.2860/0.3530); "
                   "padded 32x32 %.4f/%.4f (stored)\n",
                   s.mean28, s.std28, s.mean32, s.std32);
        }
    } else if (is_stroke_set(name)) {
        st = mcl_strokes_prepare(name, dd, (int)instances, seed, err, sizeof err);
        if (st == MCL_OK) {
            char dir[4096], e2[512];
            mcl_prepared_meta m;
            if (mcl_prepared_dir(dd, name, dir, sizeof dir, e2, sizeof e2) == MCL_OK &&
                mcl_prepared_read_meta(dir, &m, e2, sizeof e2) == MCL_OK)
                printf("%s: %lld images, %d classes (%lld per class, seed %llu), mean/std "
                       "%.4f/%.4f, in %s\n",
                       name, (long long)m.n, m.classes, instances, (unsigned long long)seed,
                       (double)m.mean, (double)m.std, dir);
            else
                printf("%s: prepared in %s/%s\n", name, dd, name);
        }
    } else {
        fprintf(stderr, "metacl data prepare: unknown set '%s' (available: fmnist, hanzi, kanji, "
                "hershey, text, txt:FILE[,FILE...])\n", name);
        return 2;
    }
    mcl_progress_finish();
    mcl_prepare_set_progress(NULL, NULL);
    if (st != MCL_OK) {
        fprintf(stderr, "metacl data prepare %s: %s\n", name, err[0] ? err : mcl_status_str(st));
        return 1;
    }
    return 0;
}

/* ---- info ---- */

static const char *const split_names[4] = {"all", "train", "val", "test"};

typedef struct info_opts {
    char data_dir[4096];
    int json;
    char manifest[4096];
} info_opts;

static const mcl_key info_keys[] = {
    MCL_OPT_STR("data-dir", 0, info_opts, data_dir, NULL, "DIR", DATA_DIR_HELP),
    MCL_OPT_FLAG("json", 0, info_opts, json, "print JSON"),
    MCL_OPT_STR("manifest", 0, info_opts, manifest, NULL, "FILE", MANIFEST_HELP),
};
static const mcl_cli_cmd info_cmd = {
    .name = "data info", .synopsis = "NAME [--data-dir DIR] [--json] [--manifest FILE]",
    .about = "Classes, images per class, split sizes, mean/std, SHA-256 of the files (checked against\n"
             "SHA256SUMS: a mismatch exits 1). NAME: a prepared set, idx:IMAGES,LABELS or pngdir:DIR;\n"
             "for a text corpus (text, or the NAME of a txt: corpus) its domains and part sizes.",
    .opts = info_keys, .n_opts = (int)(sizeof info_keys / sizeof info_keys[0]), .max_pos = 1};

/* `data info` of a text corpus: per domain the part sizes and whether their files match
 * SHA256SUMS; every file checked. Exit 1 on any mismatch. */
static int cmd_info_text(const char *name, const char *dir, int json, const char *manifest)
{
    char err[1024] = "", verr[1024] = "";
    mcl_text_check *ch = NULL;
    int nch = 0, rc = 1;
    mcl_status vst = mcl_text_verify(dir, &ch, &nch, verr, sizeof verr);
    mcl_text_corpus *c = NULL;
    mcl_status st = mcl_text_open(dir, 0, &c, err, sizeof err);
    if (st != MCL_OK) {
        for (int i = 0; i < nch; i++)
            if (!ch[i].ok)
                fprintf(stderr, "metacl data info: %s/%s: %s\n", dir, ch[i].file,
                        ch[i].got[0] ? "SHA-256 differs from SHA256SUMS" : "unreadable");
        fprintf(stderr, "metacl data info: %s\n", err);
        free(ch);
        return 1;
    }
    int nd = mcl_text_domains(c);
    const char *cap = mcl_text_meta(c, "cap_bytes"), *src = mcl_text_meta(c, "source");
    /* a domain is ok when its three part files are listed and match */
    int dom_ok[MCL_TEXT_MAX_DOMAINS];
    for (int d = 0; d < nd; d++) {
        int good = 0;
        static const char *const parts[3] = {"train", "valid", "test"};
        for (int p = 0; p < 3; p++) {
            char fn[64];
            snprintf(fn, sizeof fn, "%s.%s", mcl_text_domain_name(c, d), parts[p]);
            for (int i = 0; i < nch; i++)
                if (strcmp(ch[i].file, fn) == 0 && ch[i].ok) good++;
        }
        dom_ok[d] = good == 3;
    }
    int64_t tot[3] = {0};
    if (json) {
        mcl_json j;
        mcl_json_init(&j, stdout);
        mcl_json_begin_obj(&j, NULL);
        mcl_json_str(&j, "name", name);
        mcl_json_str(&j, "kind", "text");
        mcl_json_str(&j, "dir", dir);
        mcl_json_str(&j, "source", src ? src : "");
        mcl_json_int(&j, "cap_bytes", cap ? atoll(cap) : 0);
        mcl_json_begin_arr(&j, "domains");
        for (int d = 0; d < nd; d++) {
            const uint8_t *b;
            int64_t n[3];
            mcl_text_split(c, d, "train", &b, &n[0]);
            mcl_text_split(c, d, "valid", &b, &n[1]);
            mcl_text_split(c, d, "test", &b, &n[2]);
            mcl_json_begin_obj(&j, NULL);
            mcl_json_str(&j, "name", mcl_text_domain_name(c, d));
            mcl_json_int(&j, "train", (long long)n[0]);
            mcl_json_int(&j, "valid", (long long)n[1]);
            mcl_json_int(&j, "test", (long long)n[2]);
            mcl_json_str(&j, "packages", mcl_text_domain_source(c, d));
            mcl_json_bool(&j, "ok", dom_ok[d]);
            mcl_json_end_obj(&j);
        }
        mcl_json_end_arr(&j);
        mcl_json_begin_arr(&j, "files");
        for (int i = 0; i < nch; i++) {
            mcl_json_begin_obj(&j, NULL);
            mcl_json_str(&j, "file", ch[i].file);
            mcl_json_str(&j, "sha256", ch[i].got);
            mcl_json_str(&j, "expected", ch[i].want);
            mcl_json_bool(&j, "ok", ch[i].ok);
            mcl_json_end_obj(&j);
        }
        mcl_json_end_arr(&j);
        mcl_json_bool(&j, "verified", vst == MCL_OK);
        if (vst != MCL_OK) mcl_json_str(&j, "error", verr);
        if (is_debian_corpus(c)) (void)report_pin("metacl data info", dir, manifest, NULL, &j);
        mcl_json_end_obj(&j);
        mcl_json_finish(&j);
    } else {
        printf("%s: %s\n", name, dir);
        printf("  kind       text corpus, %d domains\n", nd);
        if (src) printf("  source     %s\n", src);
        if (cap) printf("  cap        %s bytes per domain%s\n", cap, strcmp(cap, "0") ? "" : " (none)");
        printf("  split      train / valid / test: the first 90 %%, next 5 %%, last 5 %% of each domain\n");
        printf("  %-14s %10s %10s %10s  %-8s %s\n", "domain", "train", "valid", "test", "SHA-256",
               "source");
        for (int d = 0; d < nd; d++) {
            const uint8_t *b;
            int64_t n[3];
            mcl_text_split(c, d, "train", &b, &n[0]);
            mcl_text_split(c, d, "valid", &b, &n[1]);
            mcl_text_split(c, d, "test", &b, &n[2]);
            for (int k = 0; k < 3; k++) tot[k] += n[k];
            printf("  %-14s %10lld %10lld %10lld  %-8s %s\n", mcl_text_domain_name(c, d),
                   (long long)n[0], (long long)n[1], (long long)n[2], dom_ok[d] ? "ok" : "CORRUPT",
                   mcl_text_domain_source(c, d));
        }
        printf("  %-14s %10lld %10lld %10lld\n", "total", (long long)tot[0], (long long)tot[1],
               (long long)tot[2]);
        printf("  files      %d checked against SHA256SUMS: %s\n", nch,
               vst == MCL_OK ? "all ok" : "NOT ok");
        for (int i = 0; i < nch; i++)
            if (!ch[i].ok)
                printf("    %-24s %s\n", ch[i].file, ch[i].got[0] ? "MISMATCH" : "UNREADABLE");
        if (is_debian_corpus(c)) (void)report_pin("metacl data info", dir, manifest, stdout, NULL);
    }
    if (vst != MCL_OK)
        fprintf(stderr, "metacl data info: %s: verification failed: %s\n", name, verr);
    else
        rc = 0;
    free(ch);
    mcl_text_close(c);
    return rc;
}

/* One `metacl data info` of an image set: what was read and what is reported. */
typedef struct info_run {
    const char *name, *data_dir;
    int user; /* idx: or pngdir: data (no prepared directory) */
    char dir[4096], err[1024], verr[1024];
    mcl_prepared_meta meta;
    mcl_class_info *ci;
    uint8_t *sp;
    mcl_sum_entry *sums;
    int n_sums;
    mcl_status vst; /* the SHA-256 verification */
    mcl_dataset *ds;
    int64_t mn, mx;     /* images per class */
    double avg;
    int64_t sp_img[4];  /* [1..3] = train, val, test */
    int sp_cls[4];
} info_run;

/* Load the set; a prepared one's hashes are checked first, so that damage is reported as such
 * even when it also keeps the set from loading. 0, 1 after a message, or -1: a text corpus
 * (r->dir names it). */
static int info_load(info_run *r)
{
    mcl_status st = MCL_OK;
    if (!r->user) {
        /* a view (fmnist-val) is described from the prepared set it reads */
        st = mcl_prepared_dir(r->data_dir, mcl_dataset_prepared_name(r->name), r->dir, sizeof r->dir, r->err,
                              sizeof r->err);
        if (st == MCL_OK && mcl_text_is_corpus(r->dir)) return -1;
        if (st == MCL_OK && strcmp(r->name, "text") == 0) {
            char mpath[4200];
            struct stat sb;
            snprintf(mpath, sizeof mpath, "%s/meta.txt", r->dir);
            if (stat(mpath, &sb) != 0 && errno != ENOENT && errno != ENOTDIR) { /* EACCES */
                fprintf(stderr, "metacl data info: cannot read the text corpus in %s (%s: %s)\n", r->dir, mpath,
                        strerror(errno));
                return 1;
            }
            fprintf(stderr, "metacl data info: no text corpus in %s; run: metacl data prepare text%s%s\n", r->dir,
                    r->data_dir ? " --data-dir " : "", r->data_dir ? r->data_dir : "");
            return 1;
        }
        if (st == MCL_OK && mcl_prepared_exists(r->dir))
            r->vst = mcl_prepared_verify(r->dir, &r->sums, &r->n_sums, r->verr, sizeof r->verr);
    }
    if (st == MCL_OK) st = mcl_dataset_load(r->name, r->data_dir, MCL_SPLIT_ALL, &r->ds, r->err, sizeof r->err);
    if (st == MCL_OK && !r->user) {
        st = mcl_prepared_read_meta(r->dir, &r->meta, r->err, sizeof r->err);
        if (st == MCL_OK) st = mcl_prepared_read_classes(r->dir, r->meta.classes, &r->ci, r->err, sizeof r->err);
        if (st == MCL_OK) st = mcl_prepared_read_split(r->dir, r->meta.n, &r->sp, r->err, sizeof r->err);
        if (st == MCL_OK)
            st = mcl_dataset_view_splits(r->name, r->ds->labels, r->sp, r->meta.n, r->meta.classes, r->err,
                                         sizeof r->err);
    }
    if (st == MCL_OK) return 0;
    for (int i = 0; i < r->n_sums; i++)
        if (!r->sums[i].ok)
            fprintf(stderr, "metacl data info: %s/%s: %s\n", r->dir, r->sums[i].file,
                    r->sums[i].got[0] ? "SHA-256 differs from SHA256SUMS" : "unreadable");
    fprintf(stderr, "metacl data info: %s\n", r->err[0] ? r->err : mcl_status_str(st));
    return 1;
}

/* Images per class (min, max, mean) and the classes and images of each split (user data: all
 * train). 0, or 1 after a message. */
static int info_stats(info_run *r)
{
    const mcl_dataset *ds = r->ds;
    r->mn = INT64_MAX;
    r->mx = 0;
    for (int c = 0; c < ds->n_classes; c++) {
        int64_t k = ds->class_start[c + 1] - ds->class_start[c];
        if (k < r->mn) r->mn = k;
        if (k > r->mx) r->mx = k;
    }
    if (ds->n_classes == 0) r->mn = 0;
    r->avg = ds->n_classes ? (double)ds->n / ds->n_classes : 0.0;
    if (r->user) {
        r->sp_img[1] = ds->n;
        r->sp_cls[1] = ds->n_classes;
        return 0;
    }
    int nc = ds->n_classes_total;
    unsigned char *seen = calloc((size_t)nc * 4, 1);
    if (!seen) {
        fprintf(stderr, "metacl data info: out of memory\n");
        return 1;
    }
    for (int64_t i = 0; i < ds->n; i++) {
        int32_t c = ds->labels[i];
        int s = r->sp ? r->sp[i] : (int)r->ci[c].split;
        if (s < 1 || s > 3) s = 1; /* a class marked "all" counts as train */
        r->sp_img[s]++;
        if (!seen[(size_t)c * 4 + (size_t)s]) {
            seen[(size_t)c * 4 + (size_t)s] = 1;
            r->sp_cls[s]++;
        }
    }
    free(seen);
    return 0;
}

static void info_print_json(const info_run *r)
{
    const mcl_dataset *ds = r->ds;
    mcl_json j;
    mcl_json_init(&j, stdout);
    mcl_json_begin_obj(&j, NULL);
    mcl_json_str(&j, "name", r->user ? ds->name : r->name);
    mcl_json_str(&j, "spec", r->name);
    if (!r->user) {
        mcl_json_str(&j, "dir", r->dir);
        mcl_json_str(&j, "source", r->meta.source);
        mcl_json_str(&j, "licence", r->meta.licence);
        mcl_json_str(&j, "split_by", r->sp ? "example" : "class");
        mcl_json_u64(&j, "seed", (uint64_t)r->meta.seed);
        mcl_json_int(&j, "instances", r->meta.instances);
    }
    mcl_json_int(&j, "images", (long long)ds->n);
    mcl_json_int(&j, "classes", ds->n_classes);
    mcl_json_int(&j, "classes_total", ds->n_classes_total);
    mcl_json_begin_obj(&j, "per_class");
    mcl_json_int(&j, "min", (long long)r->mn);
    mcl_json_int(&j, "max", (long long)r->mx);
    mcl_json_num(&j, "mean", r->avg, 3);
    mcl_json_end_obj(&j);
    mcl_json_begin_obj(&j, "splits");
    for (int s = 1; s <= 3; s++) {
        mcl_json_begin_obj(&j, split_names[s]);
        mcl_json_int(&j, "classes", r->sp_cls[s]);
        mcl_json_int(&j, "images", (long long)r->sp_img[s]);
        mcl_json_end_obj(&j);
    }
    mcl_json_end_obj(&j);
    mcl_json_num(&j, "mean", (double)ds->mean, 6);
    mcl_json_num(&j, "std", (double)ds->std, 6);
    if (!r->user) {
        mcl_json_begin_arr(&j, "files");
        for (int i = 0; i < r->n_sums; i++) {
            mcl_json_begin_obj(&j, NULL);
            mcl_json_str(&j, "file", r->sums[i].file);
            mcl_json_str(&j, "sha256", r->sums[i].got);
            mcl_json_str(&j, "expected", r->sums[i].want);
            mcl_json_bool(&j, "ok", r->sums[i].ok);
            mcl_json_end_obj(&j);
        }
        mcl_json_end_arr(&j);
        mcl_json_bool(&j, "verified", r->vst == MCL_OK);
        if (r->vst != MCL_OK) mcl_json_str(&j, "error", r->verr);
    }
    mcl_json_end_obj(&j);
    mcl_json_finish(&j);
}

static void info_print_text(const info_run *r)
{
    const mcl_dataset *ds = r->ds;
    const int user = r->user;
    printf("%s%s%s\n", user ? ds->name : r->name, user ? "" : ": ", r->dir);
    if (!user) {
        printf("  source     %s\n", r->meta.source);
        printf("  licence    %s\n", r->meta.licence);
        if (r->meta.instances)
            printf("  rendering  %d instances per class, seed %llu\n", r->meta.instances,
                   (unsigned long long)r->meta.seed);
    }
    printf("  images     %lld (1x32x32 uint8)\n", (long long)ds->n);
    printf("  classes    %d (ids 0..%d)\n", ds->n_classes, ds->n_classes_total - 1);
    printf("  per class  min %lld, max %lld, mean %.1f images\n", (long long)r->mn, (long long)r->mx, r->avg);
    printf("  split      %s\n", user ? "none (user data: everything is train)"
                                     : r->sp ? "by example (split.idx)" : "by class (classes.txt)");
    for (int s = 1; s <= 3; s++)
        printf("    %-6s   %d classes, %lld images\n", split_names[s], r->sp_cls[s], (long long)r->sp_img[s]);
    printf("  mean/std   %.4f / %.4f (pixels in [0,1], %s)\n", (double)ds->mean, (double)ds->std,
           user ? "all images" : "train split");
    if (!user) {
        printf("  SHA-256 (checked against SHA256SUMS)\n");
        for (int i = 0; i < r->n_sums; i++)
            printf("    %s  %-12s %s\n", r->sums[i].got[0] ? r->sums[i].got : r->sums[i].want, r->sums[i].file,
                   r->sums[i].ok ? "ok" : r->sums[i].got[0] ? "MISMATCH" : "UNREADABLE");
    }
}

/* `metacl data info NAME`: load (hashes first) -> statistics -> the report (text or JSON) ->
 * exit 1 when the verification failed. A text corpus goes to cmd_info_text. */
static int cmd_info(int argc, char **argv)
{
    info_opts o;
    mcl_cli_parsed p;
    int prc = mcl_cli_parse(&info_cmd, argc, argv, &o, &p);
    if (prc != MCL_CLI_GO) return prc;
    if (p.n_pos == 0) {
        fprintf(stderr, "metacl data info: which set? (a prepared set name, idx:IMAGES,LABELS "
                "or pngdir:DIR)\n");
        return 2;
    }
    info_run *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "metacl data info: out of memory\n");
        return 1;
    }
    r->name = p.pos[0];
    r->data_dir = o.data_dir[0] ? o.data_dir : NULL;
    r->user = is_user_spec(r->name);
    r->vst = MCL_OK;
    int rc = info_load(r);
    if (rc < 0) {
        rc = cmd_info_text(r->name, r->dir, o.json, o.manifest);
    } else if (rc == 0 && (rc = info_stats(r)) == 0) {
        if (o.json)
            info_print_json(r);
        else
            info_print_text(r);
        if (!r->user && r->vst != MCL_OK) {
            fprintf(stderr, "metacl data info: %s: verification failed: %s\n", r->name, r->verr);
            rc = 1;
        }
    }
    free(r->ci);
    free(r->sp);
    free(r->sums);
    mcl_dataset_free(r->ds);
    free(r);
    return rc;
}

/* ---- show ---- */

typedef struct sheet {
    uint8_t *px;
    int w, h, scale;
} sheet;

static void sheet_put(sheet *s, int x0, int y0, const uint8_t *img)
{
    for (int y = 0; y < MCL_IMG * s->scale; y++)
        for (int x = 0; x < MCL_IMG * s->scale; x++)
            s->px[(size_t)(y0 + y) * (size_t)s->w + (size_t)(x0 + x)] =
                img[(y / s->scale) * MCL_IMG + x / s->scale];
}

/* k distinct values of 0..n-1 chosen by the seed, ascending (all of them when k >= n). */
static int *pick(uint64_t seed, uint64_t stream, int n, int *k)
{
    int *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    if (!v) return NULL;
    for (int i = 0; i < n; i++) v[i] = i;
    if (*k >= n) {
        *k = n;
        return v;
    }
    mcl_rng r;
    mcl_rng_init(&r, seed, stream);
    mcl_rng_shuffle_int(&r, v, n);
    /* sort the first k */
    for (int i = 1; i < *k; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v;
}

#define SHOW_STREAM 0x73686f77u /* "show" */
#define GAP 1
#define GAP_CLEAN 3 /* after the clean column of a stroke set */
#define GAP_SHADE 96

typedef struct show_opts {
    char data_dir[4096], out[4096];
    int classes, samples, scale, augment;
    uint64_t seed;
} show_opts;

static const mcl_key show_keys[] = {
    MCL_OPT_STR("out", 'o', show_opts, out, NULL, "FILE.png", "the contact sheet to write (required)"),
    MCL_OPT_INT("classes", 0, show_opts, classes, 1, 1000, "10", "N", "classes (rows) on the sheet"),
    MCL_OPT_INT("samples", 0, show_opts, samples, 1, 100, "8", "M", "samples or images per class"),
    MCL_OPT_U64("seed", 0, show_opts, seed, "1", "N", "which classes, samples and renderings"),
    MCL_OPT_INT("scale", 0, show_opts, scale, 1, 8, "2", "S", "pixels per image pixel"),
    MCL_OPT_FLAG("augment", 0, show_opts, augment,
                 "each row's samples get one random transformation of training's task\n"
                 "augmentation (data.augment = task; the clean column stays clean)"),
    MCL_OPT_STR("data-dir", 0, show_opts, data_dir, NULL, "DIR", DATA_DIR_HELP),
};
static const mcl_cli_cmd show_cmd = {
    .name = "data show", .synopsis = "NAME --out FILE.png [--classes N] [--samples M] [--seed N] [--scale S] [--augment] [--data-dir DIR]",
    .about = "Contact sheet: per class (a row) a clean rendering then M samples (stroke sets) or M\n"
             "images of the set. NAME may also be idx:IMAGES,LABELS or pngdir:DIR.",
    .opts = show_keys, .n_opts = (int)(sizeof show_keys / sizeof show_keys[0]), .max_pos = 1};

static int cmd_show(int argc, char **argv)
{
    show_opts o;
    mcl_cli_parsed p;
    int prc = mcl_cli_parse(&show_cmd, argc, argv, &o, &p);
    if (prc != MCL_CLI_GO) return prc;
    if (p.n_pos == 0 || !o.out[0])
        return mcl_cli_usage_error(&show_cmd, "want NAME --out FILE.png");
    const char *name = p.pos[0], *data_dir = o.data_dir[0] ? o.data_dir : NULL, *out = o.out;
    const long long ncls = o.classes, nsmp = o.samples, scale = o.scale;
    const uint64_t seed = o.seed;
    const char *dd = data_dir && *data_dir ? data_dir : mcl_data_dir_default();
    if (!dd) {
        fprintf(stderr, "metacl data show: %s\n", MCL_NO_DATA_DIR);
        return 1;
    }
    char err[1024] = "";
    int stroke = is_stroke_set(name);
    mcl_strokeset *ss = NULL;
    mcl_dataset *ds = NULL;
    mcl_status st;
    int n_avail;
    if (stroke) {
        st = mcl_strokeset_load(name, dd, strcmp(name, "hanzi") == 0 ? 10 : 0, &ss, err,
                                sizeof err);
        n_avail = st == MCL_OK ? ss->n : 0;
    } else {
        st = mcl_dataset_load(name, data_dir, MCL_SPLIT_ALL, &ds, err, sizeof err);
        n_avail = st == MCL_OK ? ds->n_classes : 0;
    }
    if (st != MCL_OK) {
        fprintf(stderr, "metacl data show: %s\n", err[0] ? err : mcl_status_str(st));
        return 1;
    }
    int rc = 1;
    int rows = (int)ncls;
    int *cls = pick(seed, SHOW_STREAM, n_avail, &rows);
    int cols = (int)nsmp + (stroke ? 1 : 0);
    int cell = MCL_IMG * (int)scale;
    sheet sh = {NULL, 0, 0, (int)scale};
    sh.w = cols * cell + (cols + 1) * GAP + (stroke ? GAP_CLEAN - GAP : 0);
    sh.h = rows * cell + (rows + 1) * GAP;
    sh.px = malloc((size_t)sh.w * (size_t)sh.h);
    uint8_t img[PIX];
    if (!cls || !sh.px || rows == 0) {
        fprintf(stderr, "metacl data show: %s\n", rows == 0 ? "no classes" : "out of memory");
        goto done;
    }
    memset(sh.px, GAP_SHADE, (size_t)sh.w * (size_t)sh.h);
    mcl_aug_cfg acfg;
    mcl_aug_cfg_default(&acfg);
    mcl_rng arng;
    mcl_rng_init(&arng, seed, SHOW_STREAM + 0x100000000ull);
    for (int r = 0; r < rows; r++) {
        int y0 = GAP + r * (cell + GAP);
        mcl_aug aug; /* the row's transformation (inactive without --augment) */
        memset(&aug, 0, sizeof aug);
        if (o.augment) mcl_aug_draw(&acfg, &arng, &aug);
        if (stroke) {
            const mcl_glyph *g = &ss->glyphs[cls[r]];
            mcl_render_glyph(g, seed, cls[r], 0, 1, img);
            sheet_put(&sh, GAP, y0, img);
            for (int j = 0; j < (int)nsmp; j++) {
                mcl_render_glyph(g, seed, cls[r], j, 0, img);
                mcl_aug_apply(&aug, img, MCL_IMG, (uint64_t)j);
                sheet_put(&sh, GAP_CLEAN + GAP + cell + j * (cell + GAP), y0, img);
            }
        } else {
            int64_t b = ds->class_start[cls[r]], k = ds->class_start[cls[r] + 1] - b;
            int take = (int)(k < nsmp ? k : nsmp);
            int kk = (int)(k > 1000000 ? 1000000 : k);
            if (take > kk) take = kk;
            int *pos = pick(seed, SHOW_STREAM + 1 + (uint64_t)cls[r], kk, &take);
            if (!pos) {
                fprintf(stderr, "metacl data show: out of memory\n");
                goto done;
            }
            for (int j = 0; j < take; j++) {
                const int64_t at = ds->class_index[b + pos[j]];
                memcpy(img, ds->images + (size_t)at * PIX, PIX);
                mcl_aug_apply(&aug, img, MCL_IMG, (uint64_t)at);
                sheet_put(&sh, GAP + j * (cell + GAP), y0, img);
            }
            free(pos);
        }
    }
    st = mcl_png_write_gray(out, sh.px, sh.w, sh.h, err, sizeof err);
    if (st != MCL_OK) {
        fprintf(stderr, "metacl data show: %s\n", err);
        goto done;
    }
    printf("%s: wrote %s (%dx%d): %d classes x %s%lld %s\n", name, out, sh.w, sh.h, rows,
           stroke ? "(clean + " : "", nsmp, stroke ? "samples)" : "images");
    rc = 0;
done:
    free(cls);
    free(sh.px);
    if (ss) mcl_strokeset_free(ss);
    mcl_dataset_free(ds);
    return rc;
}

const mcl_cli_sub mcl_cli_data_subs[] = {
    {"prepare", "NAME [--data-dir DIR] [--instances N] [--seed N] [--cap-mb N] [--domains D,...]",
     "build a prepared set (fmnist, hanzi, kanji, hershey; text, txt:FILE,...)", cmd_prepare},
    {"info", "NAME [--data-dir DIR] [--json]", "classes, split sizes, mean/std, SHA-256 (verified)", cmd_info},
    {"show", "NAME --out FILE.png [--classes N] [--samples M] [--seed N]",
     "contact sheet of a set (NAME may be idx:IMG,LAB or pngdir:DIR)", cmd_show},
};
const int mcl_cli_n_data_subs = (int)(sizeof mcl_cli_data_subs / sizeof mcl_cli_data_subs[0]);

int mcl_cli_data(int argc, char **argv)
{
    return mcl_cli_dispatch("data", mcl_cli_data_subs, mcl_cli_n_data_subs, argc, argv);
}
