/* text_prepare.c — the domains of the text corpus and how each is built (textprep.h,
 * doc/data.md "The text corpus"). */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "textprep.h"
#include "utf8.h"
#include "util.h"

typedef enum { SRC_FILE, SRC_TREE, SRC_SWORD, SRC_RDATA } src_kind;

typedef struct src_def {
    src_kind kind;
    const char *path;               /* under the packages' extraction root */
    const char *suffix;             /* SRC_TREE: only names ending so (NULL = any) */
    const char *const *skip_dirs;   /* SRC_TREE */
    const char *const *skip_suffix; /* SRC_TREE */
} src_def;

typedef struct domain_def {
    const char *name;
    const char *packages[4]; /* NULL-terminated */
    src_def src[4];
    int n_src;
    const char *about;
} domain_def;

static const char *const rst_skip[] = {"translations", NULL};
static const char *const py_skip[] = {"test", "tests", "idle_test", NULL};
static const char *const fortune_skip_suffix[] = {".dat", ".u8", NULL};

#define SWORD_TEXTS "usr/share/sword/modules/texts/ztext/"
#define SWORD_COMMS "usr/share/sword/modules/comments/zcom/"
#define R_LIB "usr/lib/R/site-library/"

static const domain_def domains[] = {
    {"dictionary", {"dict-gcide", NULL},
     {{SRC_FILE, "usr/share/dictd/gcide.dict.dz", NULL, NULL, NULL}}, 1,
     "GCIDE, the GNU Collaborative International Dictionary of English (dictd database)"},
    {"lore", {"jargon-text", "dict-foldoc", "dict-devil", NULL},
     {{SRC_FILE, "usr/share/doc/jargon-text/jargon.txt.gz", NULL, NULL, NULL},
      {SRC_FILE, "usr/share/dictd/foldoc.dict.dz", NULL, NULL, NULL},
      {SRC_FILE, "usr/share/dictd/devil.dict.dz", NULL, NULL, NULL}}, 3,
     "the Jargon File, FOLDOC (computing dictionary), Bierce's Devil's Dictionary"},
    {"rst", {"linux-doc-6.1", NULL},
     {{SRC_TREE, "usr/share/doc/linux-doc-6.1/html/_sources", ".rst.txt", rst_skip, NULL}}, 1,
     "the Linux 6.1 documentation, reStructuredText sources (no translations/)"},
    {"python", {"libpython3.11-stdlib", "libpython3.11-minimal", NULL},
     {{SRC_TREE, "usr/lib/python3.11", ".py", py_skip, NULL}}, 1,
     "the Python 3.11 standard library, .py files (no test/, tests/, idle_test/)"},
    {"fortunes-de", {"fortunes-de", NULL},
     {{SRC_TREE, "usr/share/games/fortunes/de", NULL, NULL, fortune_skip_suffix}}, 1,
     "German fortune cookies, '%' between entries"},
    {"fortunes-ru", {"fortunes-ru", NULL},
     {{SRC_TREE, "usr/share/games/fortunes/ru", NULL, NULL, fortune_skip_suffix}}, 1,
     "Russian fortune cookies, '%' between entries"},
    {"kjv", {"sword-text-kjv", NULL},
     {{SRC_SWORD, SWORD_TEXTS "engKJV2006eb", NULL, NULL, NULL}}, 1,
     "the King James Bible (SWORD module engKJV2006eb, markup stripped)"},
    {"spanish", {"sword-text-sparv", NULL},
     {{SRC_SWORD, SWORD_TEXTS "spaRV1909eb", NULL, NULL, NULL}}, 1,
     "the Reina-Valera Bible of 1909 (SWORD module spaRV1909eb, markup stripped)"},
    {"commentary", {"sword-comm-tdavid", "sword-comm-mhcc", "sword-comm-scofield", NULL},
     {{SRC_SWORD, SWORD_COMMS "tdavid", NULL, NULL, NULL},
      {SRC_SWORD, SWORD_COMMS "mhcc", NULL, NULL, NULL},
      {SRC_SWORD, SWORD_COMMS "scofield", NULL, NULL, NULL}}, 3,
     "Bible commentaries: Spurgeon's Treasury of David, Matthew Henry's Concise, Scofield's "
     "notes (SWORD, markup stripped)"},
    {"fiction", {"r-cran-janeaustenr", "r-cran-tokenizers", NULL},
     {{SRC_RDATA, R_LIB "janeaustenr/data/Rdata.rdb", NULL, NULL, NULL},
      {SRC_RDATA, R_LIB "tokenizers/data/Rdata.rdb", NULL, NULL, NULL}}, 2,
     "Jane Austen's six novels and Melville's Moby Dick (R data of janeaustenr, tokenizers)"},
};
#define N_DOMAINS ((int)(sizeof domains / sizeof domains[0]))

const char *const mcl_text_domain_names[] = {"dictionary", "lore", "rst", "python",
                                              "fortunes-de", "fortunes-ru", "kjv", "spanish",
                                              "commentary", "fiction", NULL};

/* ---- one source ---- */

static mcl_status read_source(const char *root, const src_def *s, mcl_buf *raw, char *err,
                              size_t len)
{
    char path[4300];
    if (err && len) err[0] = 0;
    if (snprintf(path, sizeof path, "%s/%s", root, s->path) >= (int)sizeof path)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: path too long", root);
    mcl_status st = MCL_OK;
    switch (s->kind) {
    case SRC_FILE:
        st = mcl_text_read_file(path, raw, err, len);
        if (st == MCL_OK) st = mcl_buf_end_line(raw);
        break;
    case SRC_TREE: {
        char **files = NULL;
        int n = 0;
        st = mcl_text_list_tree(root, s->path, s->suffix, s->skip_dirs, s->skip_suffix, &files,
                                &n, err, len);
        if (st == MCL_OK && n == 0)
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: no %s files there", path,
                            s->suffix ? s->suffix : "text");
        for (int i = 0; i < n && st == MCL_OK; i++) {
            st = mcl_text_read_file(files[i], raw, err, len);
            if (st == MCL_OK) st = mcl_buf_end_line(raw);
        }
        mcl_text_free_paths(files, n);
        break;
    }
    case SRC_SWORD:
        st = mcl_sword_module(path, raw, err, len);
        break;
    case SRC_RDATA: {
        mcl_buf rdb = {0}, strings = {0};
        st = mcl_text_read_file(path, &rdb, err, len); /* not gzip: read as is */
        if (st == MCL_OK) st = mcl_rdb_strings(rdb.p, rdb.n, path, &strings, NULL, err, len);
        /* the books are Project Gutenberg texts, some with its header and licence */
        if (st == MCL_OK) st = mcl_buf_add(raw, strings.p, mcl_text_strip_gutenberg(strings.p, strings.n));
        mcl_buf_free(&rdb);
        mcl_buf_free(&strings);
        break;
    }
    }
    if (st != MCL_OK && err && len && !err[0]) /* a buffer that could not grow */
        st = mcl_errbuf(err, len, st, "%s: %s", path,
                        st == MCL_ERR_OOM ? "out of memory" : "more text than accepted");
    return st;
}

/* The copyright file of pkg under root (following the package's own relative links, but
 * never out of root). */
static mcl_status read_copyright(const char *root, const char *pkg, mcl_buf *out, char *err,
                                 size_t len)
{
    char path[4300], real[PATH_MAX], rroot[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/usr/share/doc/%s/copyright", root, pkg) >= (int)sizeof path)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: path too long", root);
    if (!realpath(path, real) || !realpath(root, rroot))
        return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "%s: the package has no usr/share/doc/%s/copyright (%s): its licence "
                          "cannot travel with the text",
                          pkg, pkg, strerror(errno));
    size_t k = strlen(rroot);
    if (strncmp(real, rroot, k) != 0 || real[k] != '/')
        return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "%s: usr/share/doc/%s/copyright points out of the package (%s)", pkg,
                          pkg, real);
    mcl_buf b = {0};
    /* not through gzread: the file is plain text and kept byte for byte */
    FILE *f = NULL;
    uint64_t size = 0;
    mcl_status st = mcl_fopen_regular(real, &f, &size, err, len);
    if (st != MCL_OK) return st;
    if (size > (1u << 24)) {
        fclose(f);
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: %llu bytes: too large for a copyright file",
                          real, (unsigned long long)size);
    }
    uint8_t tmp[65536];
    size_t r;
    while (st == MCL_OK && (r = fread(tmp, 1, sizeof tmp, f)) > 0) st = mcl_buf_add(&b, tmp, r);
    int bad = ferror(f);
    fclose(f);
    if (st == MCL_OK && bad) st = mcl_errbuf(err, len, MCL_ERR_IO, "%s: read error", real);
    if (st != MCL_OK) {
        mcl_buf_free(&b);
        return st == MCL_ERR_OOM ? mcl_errbuf(err, len, st, "out of memory") : st;
    }
    *out = b;
    return MCL_OK;
}

/* ---- the corpus under construction ---- */

typedef struct build {
    mcl_text_out_domain dom[MCL_TEXT_MAX_DOMAINS];
    mcl_buf text[MCL_TEXT_MAX_DOMAINS];
    int n_dom;
    mcl_text_out_file files[MCL_TEXT_MAX_DOMAINS * 4];
    mcl_buf file_buf[MCL_TEXT_MAX_DOMAINS * 4];
    int n_files;
    char *pkg_line; /* "pkg version, ..." of every package */
} build;

static void build_free(build *b)
{
    for (int i = 0; i < b->n_dom; i++) mcl_buf_free(&b->text[i]);
    for (int i = 0; i < b->n_files; i++) mcl_buf_free(&b->file_buf[i]);
    free(b->pkg_line);
    free(b);
}

/* Clean, cap and split raw into the next domain of b. */
static mcl_status add_domain(build *b, const char *name, const mcl_buf *raw, int clean,
                             int64_t cap, const char *packages, const char *about, char *err,
                             size_t len)
{
    if (b->n_dom == MCL_TEXT_MAX_DOMAINS)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "more than %d domains", MCL_TEXT_MAX_DOMAINS);
    mcl_text_out_domain *d = &b->dom[b->n_dom];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->packages, sizeof d->packages, "%s", packages);
    snprintf(d->about, sizeof d->about, "%s", about ? about : "");
    mcl_buf cleaned = {0}, *src = (mcl_buf *)raw;
    mcl_status st = MCL_OK;
    if (clean) {
        st = mcl_text_clean(raw->p, raw->n, &cleaned, &d->repaired);
        if (st == MCL_OK) st = mcl_buf_end_line(&cleaned);
        src = &cleaned;
    }
    if (st == MCL_OK && src->n == 0)
        st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "domain %s: no text", name);
    mcl_buf *out = &b->text[b->n_dom];
    memset(out, 0, sizeof *out);
    if (st == MCL_OK) {
        d->source_bytes = (int64_t)src->n;
        size_t c = cap > 0 ? (size_t)cap : src->n;
        st = mcl_text_cap(src->p, src->n, c, mcl_text_cap_chunks(c), out);
        if (st != MCL_OK) st = mcl_errbuf(err, len, st, "domain %s: out of memory", name);
    }
    mcl_buf_free(&cleaned);
    if (st != MCL_OK) {
        mcl_buf_free(out);
        return st;
    }
    d->bytes = out->p;
    d->n = out->n;
    mcl_text_split_points(out->p, out->n, d->cut);
    b->n_dom++;
    return MCL_OK;
}

static mcl_status add_file(build *b, const char *name, mcl_buf *content, char *err, size_t len)
{
    if (b->n_files == (int)(sizeof b->files / sizeof b->files[0]))
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "too many copyright files");
    mcl_text_out_file *f = &b->files[b->n_files];
    snprintf(f->name, sizeof f->name, "%s", name);
    b->file_buf[b->n_files] = *content;
    memset(content, 0, sizeof *content);
    f->bytes = b->file_buf[b->n_files].p;
    f->n = b->file_buf[b->n_files].n;
    b->n_files++;
    return MCL_OK;
}

static int append_str(char **s, const char *add)
{
    size_t a = *s ? strlen(*s) : 0, k = strlen(add);
    char *n = realloc(*s, a + k + 1);
    if (!n) return -1;
    memcpy(n + a, add, k + 1);
    *s = n;
    return 0;
}

static void cap_meta(char *dst, size_t cap, int64_t cap_bytes)
{
    if (cap_bytes > 0)
        snprintf(dst, cap,
                 "cap_bytes = %lld\ncap_rule = a longer domain keeps %d evenly spaced pieces of "
                 "its text, cut at line starts (at most cap_bytes in all)\n",
                 (long long)cap_bytes, mcl_text_cap_chunks((size_t)cap_bytes));
    else
        snprintf(dst, cap, "cap_bytes = 0\ncap_rule = none: every domain whole\n");
}

/* ---- Debian ---- */

static mcl_status build_domain(const domain_def *def, const mcl_text_prepare_opts *o,
                               const char *work, build *b, char *err, size_t len)
{
    char ddir[4200], root[4300];
    if (snprintf(ddir, sizeof ddir, "%s/%s", work, def->name) >= (int)sizeof ddir ||
        snprintf(root, sizeof root, "%s/root", ddir) >= (int)sizeof root)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: path too long", work);
    if (mkdir(ddir, 0755) != 0 || mkdir(root, 0755) != 0)
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: %s", ddir, strerror(errno));
    char packages[512] = "";
    mcl_status st = MCL_OK;
    for (int p = 0; def->packages[p] && st == MCL_OK; p++) {
        const char *pkg = def->packages[p];
        char deb[4400], version[160];
        if (o->debs_dir && mcl_find_deb(o->debs_dir, pkg, deb, sizeof deb))
            mcl_notice("text: %s: %s from %s", def->name, pkg, o->debs_dir);
        else {
            mcl_notice("text: %s: apt-get download %s", def->name, pkg);
            st = mcl_apt_download(pkg, ddir, deb, sizeof deb, err, len);
        }
        if (st == MCL_OK) st = mcl_deb_version(deb, version, sizeof version, err, len);
        if (st == MCL_OK) st = mcl_deb_extract(deb, root, err, len);
        if (st == MCL_OK) {
            size_t k = strlen(packages);
            snprintf(packages + k, sizeof packages - k, "%s%s %s", k ? ", " : "", pkg, version);
            char line[256];
            snprintf(line, sizeof line, "%s%s %s", b->pkg_line ? ", " : "", pkg, version);
            if (append_str(&b->pkg_line, line) != 0) st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
        }
    }
    /* after every package of the domain is there: a doc directory may link to another's */
    for (int p = 0; def->packages[p] && st == MCL_OK; p++) {
        mcl_buf cr = {0};
        st = read_copyright(root, def->packages[p], &cr, err, len);
        char fn[96];
        snprintf(fn, sizeof fn, "copyright/%s", def->packages[p]);
        if (st == MCL_OK) st = add_file(b, fn, &cr, err, len);
        mcl_buf_free(&cr);
    }
    mcl_buf raw = {0};
    for (int s = 0; s < def->n_src && st == MCL_OK; s++)
        st = read_source(root, &def->src[s], &raw, err, len);
    if (st == MCL_OK)
        st = add_domain(b, def->name, &raw, 1, o->cap_bytes, packages, def->about, err, len);
    mcl_buf_free(&raw);
    if (st == MCL_OK) {
        const mcl_text_out_domain *d = &b->dom[b->n_dom - 1];
        mcl_notice("text: %s: %lld bytes of text (%lld bytes repaired) -> %zu (train %zu, valid "
                   "%zu, test %zu)",
                   def->name, (long long)d->source_bytes, (long long)d->repaired, d->n, d->cut[0],
                   d->cut[1] - d->cut[0], d->n - d->cut[1]);
    }
    mcl_rm_tree(ddir); /* the packages of this domain are no longer needed */
    return st;
}

mcl_status mcl_text_prepare(const mcl_text_prepare_opts *o, char *err, size_t len)
{
    if (!o) return mcl_errbuf(err, len, MCL_ERR_NULL, "text: null argument");
    const char *data_dir = o->data_dir && *o->data_dir ? o->data_dir : mcl_data_dir_default();
    const char *name = o->name && *o->name ? o->name : MCL_TEXT_DEFAULT_NAME;
    char final[4096];
    mcl_status st = mcl_text_dir(data_dir, name, final, sizeof final, err, len);
    if (st != MCL_OK) return st;
    if (o->cap_bytes < 0) return mcl_errbuf(err, len, MCL_ERR_INVALID, "a negative cap");
    /* which domains, in corpus order */
    int use[N_DOMAINS] = {0};
    for (int i = 0; i < o->n_domains; i++) {
        int f = -1;
        for (int j = 0; j < N_DOMAINS; j++)
            if (strcmp(o->domains[i], domains[j].name) == 0) f = j;
        if (f < 0)
            return mcl_errbuf(err, len, MCL_ERR_INVALID,
                              "unknown text domain '%s' (dictionary, lore, rst, python, "
                              "fortunes-de, fortunes-ru, kjv, spanish, commentary, fiction)",
                              o->domains[i]);
        use[f] = 1;
    }
    for (int j = 0; j < N_DOMAINS; j++)
        if (o->n_domains == 0) use[j] = 1;
    st = mcl_mkdir_p(data_dir, err, len);
    if (st != MCL_OK) return st;
    mcl_text_sweep(data_dir);
    char work[4200];
    snprintf(work, sizeof work, "%s/.text-prepare.%ld.XXXXXX", data_dir, (long)getpid());
    if (!mkdtemp(work))
        return mcl_errbuf(err, len, MCL_ERR_IO, "cannot create a directory in %s: %s", data_dir,
                          strerror(errno));
    mcl_tmpdir_guard(work); /* a signal removes it (mcl_tmpdir_guard_signals) */
    build *b = calloc(1, sizeof *b);
    if (!b) {
        mcl_tmpdir_unguard(work);
        mcl_rm_tree(work);
        return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    }
    for (int j = 0; j < N_DOMAINS && st == MCL_OK; j++)
        if (use[j]) {
            st = build_domain(&domains[j], o, work, b, err, len);
            if (st != MCL_OK) {
                char tmp[2048];
                snprintf(tmp, sizeof tmp, "%s", err ? err : "");
                mcl_errbuf(err, len, st, "domain %s: %s", domains[j].name, tmp);
            }
        }
    if (st == MCL_OK) {
        char extra[4096 + 512], capm[512];
        cap_meta(capm, sizeof capm, o->cap_bytes);
        snprintf(extra, sizeof extra, "source = Debian packages (apt-get download, dpkg-deb -x)\n%s"
                 "packages = %.4000s\n", capm, b->pkg_line ? b->pkg_line : "");
        st = mcl_text_write(data_dir, name, b->dom, b->n_dom, b->files, b->n_files, extra, err, len);
    }
    build_free(b);
    mcl_tmpdir_unguard(work);
    mcl_rm_tree(work);
    return st;
}

/* ---- the user's files ---- */

static void domain_name_of(const char *path, char *dst, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t o = 0;
    for (const char *p = base; *p && *p != '.' && o + 1 < cap && o < MCL_TEXT_MAX_NAME - 4; p++) {
        unsigned char c = (unsigned char)*p;
        dst[o++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                           c == '-' || c == '_'
                       ? (char)c
                       : '_';
    }
    if (o == 0) o = (size_t)snprintf(dst, cap, "file");
    dst[o] = 0;
}

static mcl_status read_user(const char *path, mcl_buf *out, char *err, size_t len)
{
    size_t before = out->n;
    mcl_status st = mcl_text_read_file(path, out, err, len);
    if (st != MCL_OK) return st;
    /* empty first: out->p may still be NULL (fuzz-corpus: NULL + 0 is undefined) */
    if (out->n == before) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: empty", path);
    size_t bad = 0;
    if (!mcl_utf8_valid(out->p + before, out->n - before, &bad)) {
        int64_t line, col;
        mcl_text_line_col(out->p + before, bad, &line, &col);
        return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "%s: not valid UTF-8 at byte %zu (line %lld, column %lld, byte 0x%02x); "
                          "convert it first, e.g. iconv -f LATIN1 -t UTF-8",
                          path, bad, (long long)line, (long long)col, out->p[before + bad]);
    }
    return mcl_buf_end_line(out);
}

mcl_status mcl_text_prepare_user(const mcl_text_prepare_opts *o, const char *const *files,
                                 int n_files, char *err, size_t len)
{
    if (!o || !files) return mcl_errbuf(err, len, MCL_ERR_NULL, "text: null argument");
    if (n_files < 1) return mcl_errbuf(err, len, MCL_ERR_INVALID, "no files");
    if (o->per_file && n_files > MCL_TEXT_MAX_DOMAINS)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%d files: at most %d domains", n_files,
                          MCL_TEXT_MAX_DOMAINS);
    const char *data_dir = o->data_dir && *o->data_dir ? o->data_dir : mcl_data_dir_default();
    const char *name = o->name && *o->name ? o->name : "user";
    char final[4096];
    mcl_status st = mcl_text_dir(data_dir, name, final, sizeof final, err, len);
    if (st != MCL_OK) return st;
    build *b = calloc(1, sizeof *b);
    if (!b) return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    mcl_buf raw = {0};
    char listed[512] = "";
    for (int i = 0; i < n_files && st == MCL_OK; i++) {
        st = read_user(files[i], &raw, err, len);
        if (st != MCL_OK) break;
        size_t k = strlen(listed);
        snprintf(listed + k, sizeof listed - k, "%s%s", k ? ", " : "", files[i]);
        if (o->per_file) {
            char dn[MCL_TEXT_MAX_NAME + 1];
            domain_name_of(files[i], dn, sizeof dn);
            char uniq[MCL_TEXT_MAX_NAME + 1];
            snprintf(uniq, sizeof uniq, "%s", dn);
            for (int n = 2;; n++) {
                int clash = 0;
                for (int j = 0; j < b->n_dom; j++) clash |= strcmp(b->dom[j].name, uniq) == 0;
                if (!clash) break;
                if (snprintf(uniq, sizeof uniq, "%s-%d", dn, n) >= (int)sizeof uniq) break;
            }
            char src[600];
            snprintf(src, sizeof src, "user file %s", files[i]);
            st = add_domain(b, uniq, &raw, 0, o->cap_bytes, src, "", err, len);
            mcl_buf_free(&raw);
            listed[0] = 0;
        }
    }
    if (st == MCL_OK && !o->per_file) {
        char dn[MCL_TEXT_MAX_NAME + 1];
        domain_name_of(name, dn, sizeof dn); /* the corpus name, '.' and the rest dropped */
        char src[600];
        snprintf(src, sizeof src, "user file%s %s", n_files > 1 ? "s" : "", listed);
        st = add_domain(b, dn, &raw, 0, o->cap_bytes, src, "", err, len);
    }
    mcl_buf_free(&raw);
    if (st == MCL_OK) {
        char extra[1024], capm[512];
        cap_meta(capm, sizeof capm, o->cap_bytes);
        snprintf(extra, sizeof extra, "source = user files (metacl data prepare txt:...)\n%s", capm);
        st = mcl_text_write(data_dir, name, b->dom, b->n_dom, NULL, 0, extra, err, len);
    }
    build_free(b);
    return st;
}
