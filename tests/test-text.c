/* test-text.c — the text corpus: its extractors on hand-made inputs built here (UTF-8 repair,
 * gzip and plain files, SWORD zText blocks and markup, R serializations and lazy-load
 * databases), the cap and the split points, the corpus directory (write, open, SHA-256
 * verification that catches one changed byte, damage of sizes and UTF-8), the evaluation
 * stream's block layout, and corpora from the user's files. No network, no apt: the Debian
 * side is tests/test-text-cli.sh. Works in test-text.XXXXXX under the current directory. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"
#include "text.h"
#include "textprep.h"
#include "utf8.h"

#define SEED 0x74657874ULL

static char tmpdir[64];

static int write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(p, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static int buf_is(const mcl_buf *b, const char *want)
{
    size_t k = strlen(want);
    return b->n == k && (k == 0 || memcmp(b->p, want, k) == 0);
}

/* ---- UTF-8 ---- */

static void test_utf8(void)
{
    printf("part utf8\n");
    size_t bad = 99;
    CHECK(mcl_utf8_valid((const uint8_t *)"ab\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 11, &bad),
          "ASCII, 2-, 3- and 4-byte characters are valid");
    struct {
        const char *s;
        size_t n, at;
    } badc[] = {{"\xc0\xaf", 2, 0},         {"ab\xe0\x80\x80", 5, 2}, {"\xed\xa0\x80", 3, 0},
                {"x\xf4\x90\x80\x80", 5, 1}, {"\xe2\x82", 2, 0},       {"\x80", 1, 0},
                {"ok\xf5\x80\x80\x80", 6, 2}};
    for (size_t i = 0; i < sizeof badc / sizeof badc[0]; i++) {
        bad = 99;
        int v = mcl_utf8_valid((const uint8_t *)badc[i].s, badc[i].n, &bad);
        CHECK(!v && bad == badc[i].at, "invalid case %zu: valid %d, bad at %zu (want %zu)", i, v,
              bad, badc[i].at);
    }
    const uint8_t e[] = "a\xc3\xa9" "b";
    CHECK(mcl_utf8_floor(e, 4, 2) == 1 && mcl_utf8_floor(e, 4, 3) == 3 && mcl_utf8_floor(e, 4, 9) == 4,
          "utf8_floor backs out of a character");
    /* repair: CR LF, lone CR, controls, BOM, cp1252, Latin-1, undefined bytes, a surrogate */
    const char in[] = "A\r\nB\rC\0D\f\tE\xef\xbb\xbf" "F \x92s \x80 \xe9t\xe9 \x81x \xc3\xa9 \xed\xa0\x80";
    mcl_buf out = {0};
    int64_t rep = 0;
    CHECK(mcl_text_clean((const uint8_t *)in, sizeof in - 1, &out, &rep) == MCL_OK, "clean runs");
    const char *want = "A\nB\nCD\tEF \xe2\x80\x99s \xe2\x82\xac \xc3\xa9t\xc3\xa9 x \xc3\xa9 "
                       "\xc3\xad\xc2\xa0\xe2\x82\xac";
    CHECK(buf_is(&out, want), "clean output (%zu bytes: %.*s)", out.n, (int)out.n, (char *)out.p);
    CHECK(rep == 8, "8 bytes repaired, got %lld", (long long)rep);
    CHECK(mcl_utf8_valid(out.p, out.n, NULL), "the cleaned text is valid UTF-8");
    mcl_buf_free(&out);
    /* Project Gutenberg's header and licence */
    char pg[] = "The Project Gutenberg EBook of X\nblah\n*** START OF THIS EBOOK X ***\nCall me "
                "Ishmael.\nThe end.\nEnd of Project Gutenberg's X\n\n*** END OF THIS EBOOK X ***\n"
                "licence\n";
    size_t k = mcl_text_strip_gutenberg((uint8_t *)pg, strlen(pg));
    CHECK(k == strlen("Call me Ishmael.\nThe end.\n") &&
              memcmp(pg, "Call me Ishmael.\nThe end.\n", k) == 0,
          "Gutenberg header and footer stripped: '%.*s'", (int)k, pg);
    char plain[] = "no markers\n*** not at START OF\n";
    CHECK(mcl_text_strip_gutenberg((uint8_t *)plain, strlen(plain)) == strlen(plain),
          "text without the markers is kept");
}

/* ---- files ---- */

static void test_files(void)
{
    printf("part files (gzip, plain, trees)\n");
    char p[256], err[512];
    const char *txt = "h\xc3\xa9llo\nworld\n";
    snprintf(p, sizeof p, "%s/a.txt.gz", tmpdir);
    gzFile g = gzopen(p, "wb9");
    CHECK(g && gzwrite(g, txt, (unsigned)strlen(txt)) == (int)strlen(txt) && gzclose(g) == Z_OK,
          "writing a gzip file");
    mcl_buf b = {0};
    CHECK(mcl_text_read_file(p, &b, err, sizeof err) == MCL_OK && buf_is(&b, txt),
          "a gzip file is read decompressed");
    mcl_buf_free(&b);
    /* the same file cut in half: an error naming it, never a crash */
    FILE *f = fopen(p, "rb");
    uint8_t gz[256];
    size_t gn = f ? fread(gz, 1, sizeof gz, f) : 0;
    if (f) fclose(f);
    char q[256];
    snprintf(q, sizeof q, "%s/cut.gz", tmpdir);
    write_bytes(q, gz, gn / 2 + 2);
    mcl_status st = mcl_text_read_file(q, &b, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "cut.gz"), "a cut gzip file: %d %s", st, err);
    mcl_buf_free(&b);
    snprintf(q, sizeof q, "%s/plain.txt", tmpdir);
    write_bytes(q, "plain\n", 6);
    CHECK(mcl_text_read_file(q, &b, err, sizeof err) == MCL_OK && buf_is(&b, "plain\n"),
          "a plain file is read as it is");
    mcl_buf_free(&b);
    snprintf(q, sizeof q, "%s/none.txt", tmpdir);
    CHECK(mcl_text_read_file(q, &b, err, sizeof err) == MCL_ERR_IO && strstr(err, "none.txt"),
          "a missing file: %s", err);
    mcl_buf_free(&b);
    /* a tree: sorted, suffix, skipped directories and suffixes, links not followed */
    char d[128];
    snprintf(d, sizeof d, "%s/tree", tmpdir);
    const char *dirs[] = {"", "/b", "/a", "/a/tests", "/c"};
    for (int i = 0; i < 5; i++) {
        snprintf(q, sizeof q, "%s%s", d, dirs[i]);
        mkdir(q, 0755);
    }
    const char *files[] = {"/b/z.py", "/a/y.py", "/a/x.txt", "/a/tests/t.py", "/c/w.py.dat", "/m.py"};
    for (int i = 0; i < 6; i++) {
        snprintf(q, sizeof q, "%s%s", d, files[i]);
        write_bytes(q, "x\n", 2);
    }
    snprintf(q, sizeof q, "%s/l.py", d);
    CHECK(symlink("/etc/hostname", q) == 0, "a symbolic link in the tree");
    char **paths = NULL;
    int n = 0;
    const char *skip[] = {"tests", NULL}, *skips[] = {".dat", NULL};
    st = mcl_text_list_tree(tmpdir, "tree", ".py", skip, skips, &paths, &n, err, sizeof err);
    CHECK(st == MCL_OK && n == 3, "3 .py files listed (got %d)", n);
    if (st == MCL_OK && n == 3)
        CHECK(strstr(paths[0], "tree/a/y.py") && strstr(paths[1], "tree/b/z.py") &&
                  strstr(paths[2], "tree/m.py"),
              "sorted by path: %s %s %s", paths[0], paths[1], paths[2]);
    mcl_text_free_paths(paths, n);
    st = mcl_text_list_tree(tmpdir, "nope", NULL, NULL, NULL, &paths, &n, err, sizeof err);
    CHECK(st != MCL_OK && n == 0 && strstr(err, "nope"), "a missing tree: %s", err);
}

/* ---- SWORD ---- */

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* Blocks b[0..nb-1] (NULL = an empty index entry) into idx (12 bytes each) and dat (zlib
 * streams, each followed by `pad` bytes of padding). */
static void sword_make(const char *const *b, int nb, int pad, uint8_t *idx, uint8_t *dat,
                       size_t *dat_n)
{
    size_t off = 0;
    for (int i = 0; i < nb; i++) {
        if (!b[i]) {
            put_le32(idx + 12 * i, 0);
            put_le32(idx + 12 * i + 4, 0);
            put_le32(idx + 12 * i + 8, 0);
            continue;
        }
        uLongf zn = 4096;
        compress2(dat + off, &zn, (const Bytef *)b[i], (uLong)strlen(b[i]), 9);
        put_le32(idx + 12 * i, (uint32_t)off);
        put_le32(idx + 12 * i + 4, (uint32_t)zn);
        put_le32(idx + 12 * i + 8, (uint32_t)strlen(b[i]));
        off += zn;
        memset(dat + off, 0xAB, (size_t)pad);
        off += (size_t)pad;
    }
    *dat_n = off;
}

static void test_sword(void)
{
    printf("part sword\n");
    char err[512];
    const char *blocks[3] = {"<div type=\"book\" osisID=\"Gen\"/>Alpha beta. ", NULL,
                             "<chapter n=\"1\"/>Gamma &amp; delta"};
    uint8_t idx[36], dat[16384];
    size_t dn = 0;
    sword_make(blocks, 3, 16, idx, dat, &dn);
    mcl_buf raw = {0};
    mcl_status st = mcl_sword_blocks(idx, 36, dat, dn, "fixture", &raw, err, sizeof err);
    CHECK(st == MCL_OK && buf_is(&raw, "<div type=\"book\" osisID=\"Gen\"/>Alpha beta. "
                                       "<chapter n=\"1\"/>Gamma &amp; delta"),
          "blocks inflated in index order, padding and empty entries skipped (%s)", err);
    mcl_buf_free(&raw);
    /* damage: every one must be an error naming the problem, never a crash */
    CHECK(mcl_sword_blocks(idx, 35, dat, dn, "fixture", &raw, err, sizeof err) == MCL_ERR_FORMAT &&
              strstr(err, "12-byte"),
          "an index that is not whole entries: %s", err);
    mcl_buf_free(&raw);
    uint8_t bad[36];
    memcpy(bad, idx, 36);
    put_le32(bad + 8, 5); /* wrong uncompressed size */
    CHECK(mcl_sword_blocks(bad, 36, dat, dn, "fixture", &raw, err, sizeof err) == MCL_ERR_FORMAT,
          "a wrong uncompressed size: %s", err);
    mcl_buf_free(&raw);
    memcpy(bad, idx, 36);
    put_le32(bad + 24, (uint32_t)dn); /* past the end */
    CHECK(mcl_sword_blocks(bad, 36, dat, dn, "fixture", &raw, err, sizeof err) == MCL_ERR_FORMAT &&
              strstr(err, "past the end"),
          "a block past the end: %s", err);
    mcl_buf_free(&raw);
    memcpy(bad, idx, 36);
    put_le32(bad + 8, 0xFFFFFFF0u);
    CHECK(mcl_sword_blocks(bad, 36, dat, dn, "fixture", &raw, err, sizeof err) == MCL_ERR_FORMAT &&
              strstr(err, "claims"),
          "an absurd size is refused before allocating: %s", err);
    mcl_buf_free(&raw);
    int crashes_none = 1;
    for (size_t cut = 0; cut < dn; cut++) {
        st = mcl_sword_blocks(idx, 36, dat, cut, "fixture", &raw, err, sizeof err);
        mcl_buf_free(&raw);
        if (st == MCL_OK && cut < dn - 16) crashes_none = 0;
    }
    CHECK(crashes_none, "every cut of the data is an error");
    uint8_t flip[16384];
    memcpy(flip, dat, dn);
    flip[5] ^= 0x55;
    st = mcl_sword_blocks(idx, 36, flip, dn, "fixture", &raw, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT, "a changed byte in the zlib data: %d %s", st, err);
    mcl_buf_free(&raw);

    /* markup */
    const char *osis =
        "<div type=\"book\" osisID=\"Gen\"/> <title type=\"main\">The Book</title> <chapter "
        "n=\"1\"/> In the <w lemma=\"strong:H7225\">beginning</w> God.<note placement=\"foot\">"
        "<reference>1.1 </reference>Heb. x</note> And &amp; so <transChange type=\"added\">forth"
        "</transChange>; <hi type=\"italic\">A</hi>&#233;&#x263A;<!-- a > comment --> "
        "<table><row><cell>x</cell><cell>y</cell></row></table>  &unknown; end <l/>3 < 4";
    mcl_buf out = {0};
    CHECK(mcl_sword_strip((const uint8_t *)osis, strlen(osis), &out) == MCL_OK, "strip runs");
    const char *want = "The Book\nIn the beginning God. And & so forth; A\xc3\xa9\xe2\x98\xba\n"
                       "x y\n&unknown; end\n3 < 4\n";
    CHECK(buf_is(&out, want), "markup stripped:\n%.*s---\nwanted:\n%s---", (int)out.n,
          (char *)out.p, want);
    mcl_buf_free(&out);

    /* a module directory: ot then nt */
    char mdir[256], p[320];
    snprintf(mdir, sizeof mdir, "%s/mod", tmpdir);
    mkdir(mdir, 0755);
    const char *ot[1] = {"<div type=\"x-p\"/>Old words."}, *nt[1] = {"<div type=\"x-p\"/>New words."};
    sword_make(nt, 1, 0, idx, dat, &dn);
    snprintf(p, sizeof p, "%s/nt.bzs", mdir);
    write_bytes(p, idx, 12);
    snprintf(p, sizeof p, "%s/nt.bzz", mdir);
    write_bytes(p, dat, dn);
    sword_make(ot, 1, 0, idx, dat, &dn);
    snprintf(p, sizeof p, "%s/ot.czs", mdir); /* chapter blocks, as sword-comm-tdavid has */
    write_bytes(p, idx, 12);
    snprintf(p, sizeof p, "%s/ot.czz", mdir);
    write_bytes(p, dat, dn);
    snprintf(p, sizeof p, "%s/ot.bzs", mdir); /* an empty book index is passed over */
    write_bytes(p, "", 0);
    snprintf(p, sizeof p, "%s/ot.bzz", mdir);
    write_bytes(p, "", 0);
    st = mcl_sword_module(mdir, &out, err, sizeof err);
    CHECK(st == MCL_OK && buf_is(&out, "Old words.\nNew words.\n"), "module: ot then nt (%s)",
          st == MCL_OK ? "" : err);
    mcl_buf_free(&out);
    st = mcl_sword_module(tmpdir, &out, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "no SWORD block files"), "not a module: %s", err);
    mcl_buf_free(&out);
}

/* ---- R ---- */

typedef struct rb {
    uint8_t p[4096];
    size_t n;
} rb;

static void ri(rb *b, uint32_t v)
{
    b->p[b->n++] = (uint8_t)(v >> 24);
    b->p[b->n++] = (uint8_t)(v >> 16);
    b->p[b->n++] = (uint8_t)(v >> 8);
    b->p[b->n++] = (uint8_t)v;
}

static void rbytes(rb *b, const char *s, size_t k)
{
    memcpy(b->p + b->n, s, k);
    b->n += k;
}

static void rchar(rb *b, uint32_t flags, const char *s)
{
    ri(b, flags);
    ri(b, (uint32_t)strlen(s));
    rbytes(b, s, strlen(s));
}

/* Object 1 (format 3): c("Hello", NA, "caf\xe9" (Latin-1)) with a names attribute. */
static void r_obj1(rb *b)
{
    b->n = 0;
    rbytes(b, "X\n", 2);
    ri(b, 3);
    ri(b, 0x00040201);
    ri(b, 0x00030500);
    ri(b, 5);
    rbytes(b, "UTF-8", 5);
    ri(b, 16 | 1u << 9); /* STRSXP with attributes */
    ri(b, 3);
    rchar(b, 0x8009, "Hello"); /* UTF-8 */
    ri(b, 9);
    ri(b, 0xFFFFFFFFu);           /* NA_character_ */
    rchar(b, 0x4009, "caf\xe9"); /* Latin-1 */
    ri(b, 2 | 1u << 10);          /* attributes: a pairlist with a tag */
    ri(b, 1);                     /* SYMSXP */
    rchar(b, 0x40009, "names");
    ri(b, 16);
    ri(b, 1);
    rchar(b, 9, "mobydick");
    ri(b, 254); /* NILVALUE */
}

/* Object 2 (format 2): list(1:2, 3.5, c("a", "b c"), pairlist("p1", "p2")). */
static void r_obj2(rb *b)
{
    b->n = 0;
    rbytes(b, "X\n", 2);
    ri(b, 2);
    ri(b, 0x00040201);
    ri(b, 0x00020300);
    ri(b, 19); /* VECSXP */
    ri(b, 4);
    ri(b, 13); /* INTSXP */
    ri(b, 2);
    ri(b, 1);
    ri(b, 2);
    ri(b, 14); /* REALSXP */
    ri(b, 1);
    rbytes(b, "\x40\x0c\0\0\0\0\0\0", 8);
    ri(b, 16);
    ri(b, 2);
    rchar(b, 9, "a");
    rchar(b, 9, "b c");
    ri(b, 2); /* LISTSXP */
    ri(b, 16);
    ri(b, 1);
    rchar(b, 9, "p1");
    ri(b, 2);
    ri(b, 16);
    ri(b, 1);
    rchar(b, 9, "p2");
    ri(b, 254);
}

static void test_rdata(void)
{
    printf("part rdata\n");
    char err[512];
    rb o1, o2;
    r_obj1(&o1);
    r_obj2(&o2);
    mcl_buf out = {0};
    int64_t ns = -1;
    mcl_status st = mcl_rserial_strings(o1.p, o1.n, "obj1", &out, &ns, err, sizeof err);
    CHECK(st == MCL_OK && buf_is(&out, "Hello\ncaf\xc3\xa9\n") && ns == 2,
          "character vector: NA skipped, Latin-1 converted, attributes left out (%s; %lld)",
          st == MCL_OK ? "" : err, (long long)ns);
    mcl_buf_free(&out);
    st = mcl_rserial_strings(o2.p, o2.n, "obj2", &out, &ns, err, sizeof err);
    CHECK(st == MCL_OK && buf_is(&out, "a\nb c\np1\np2\n") && ns == 4,
          "a list with numbers, strings and a pairlist (%s)", st == MCL_OK ? "" : err);
    mcl_buf_free(&out);
    /* every prefix of a serialization is an error (and no crash) */
    int ok = 1;
    for (size_t cut = 0; cut < o1.n; cut++) {
        if (mcl_rserial_strings(o1.p, cut, "cut", &out, NULL, err, sizeof err) == MCL_OK) ok = 0;
        mcl_buf_free(&out);
    }
    CHECK(ok, "every cut of a serialization is refused");
    rb x = o2;
    x.p[17] = 99; /* the VECSXP becomes an unknown type */
    st = mcl_rserial_strings(x.p, x.n, "x", &out, NULL, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "unknown R object type 99"), "unknown type: %s", err);
    mcl_buf_free(&out);
    x = o2;
    x.p[17] = 21; /* byte code */
    st = mcl_rserial_strings(x.p, x.n, "x", &out, NULL, err, sizeof err);
    CHECK(st == MCL_ERR_UNSUPPORTED, "byte code: %s", err);
    mcl_buf_free(&out);
    x = o2;
    x.p[18] = 0x7F; /* a list of 2^31 elements */
    st = mcl_rserial_strings(x.p, x.n, "x", &out, NULL, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "cut short"), "an absurd length: %s", err);
    mcl_buf_free(&out);
    x = o2;
    x.p[0] = 'A';
    CHECK(mcl_rserial_strings(x.p, x.n, "x", &out, NULL, err, sizeof err) == MCL_ERR_UNSUPPORTED,
          "the ASCII format: %s", err);
    mcl_buf_free(&out);
    CHECK(mcl_rserial_strings((const uint8_t *)"RDX2", 4, "x", &out, NULL, err, sizeof err) ==
              MCL_ERR_FORMAT,
          "not a serialization: %s", err);
    mcl_buf_free(&out);

    /* an .rdb: obj1 zlib without a type byte, obj2 with 'Z', obj2 stored ('0') */
    uint8_t rdb[8192];
    size_t n = 0;
    uLongf zn = 4096;
    x.n = 0;
    ri(&x, (uint32_t)o1.n);
    memcpy(rdb, x.p, 4);
    compress2(rdb + 4, &zn, o1.p, o1.n, 6);
    n = 4 + zn;
    size_t obj2_at = n;
    x.n = 0;
    ri(&x, (uint32_t)o2.n);
    memcpy(rdb + n, x.p, 4);
    rdb[n + 4] = 'Z';
    zn = 4096;
    compress2(rdb + n + 5, &zn, o2.p, o2.n, 6);
    n += 5 + zn;
    size_t obj3_at = n;
    memcpy(rdb + n, x.p, 4);
    rdb[n + 4] = '0';
    memcpy(rdb + n + 5, o2.p, o2.n);
    n += 5 + o2.n;
    int nobj = 0;
    st = mcl_rdb_strings(rdb, n, "fixture.rdb", &out, &nobj, err, sizeof err);
    CHECK(st == MCL_OK && nobj == 3 &&
              buf_is(&out, "Hello\ncaf\xc3\xa9\na\nb c\np1\np2\na\nb c\np1\np2\n"),
          "three objects (%d): zlib, 'Z', stored (%s)", nobj, st == MCL_OK ? "" : err);
    mcl_buf_free(&out);
    ok = 1;
    for (size_t cut = 1; cut < n; cut++) {
        if (mcl_rdb_strings(rdb, cut, "cut.rdb", &out, NULL, err, sizeof err) == MCL_OK &&
            cut != obj2_at && cut != obj3_at)
            ok = 0;
        mcl_buf_free(&out);
    }
    CHECK(ok, "every cut of the database (but between objects) is refused");
    uint8_t bz[16] = {0, 0, 0, 10, '2', 'B', 'Z', 'h', '9', 1, 2, 3};
    CHECK(mcl_rdb_strings(bz, 12, "bz.rdb", &out, NULL, err, sizeof err) == MCL_ERR_UNSUPPORTED &&
              strstr(err, "bzip2"),
          "bzip2 is named: %s", err);
    mcl_buf_free(&out);
    uint8_t wrong[8192];
    memcpy(wrong, rdb, n);
    wrong[3] ^= 1; /* obj1's length off by one */
    st = mcl_rdb_strings(wrong, n, "wrong.rdb", &out, NULL, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "length says"), "a wrong length: %s", err);
    mcl_buf_free(&out);
    wrong[3] = rdb[3];
    wrong[0] = 0x7F; /* 2 GB */
    st = mcl_rdb_strings(wrong, n, "wrong.rdb", &out, NULL, err, sizeof err);
    CHECK(st != MCL_OK && strstr(err, "claims"), "an absurd length is refused before allocating: %s",
          err);
    wrong[0] = 0;
    wrong[1] = 0x10; /* 1 MiB from a few hundred bytes */
    st = mcl_rdb_strings(wrong, n, "wrong.rdb", &out, NULL, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "claims"), "more than zlib can expand: %s", err);
    mcl_buf_free(&out);
    mcl_buf_free(&out);
}

/* ---- cap and splits ---- */

static void test_cap(void)
{
    printf("part cap and splits\n");
    /* 2000 lines of varying length */
    mcl_buf in = {0};
    for (int i = 0; i < 2000; i++) {
        char line[64];
        int k = snprintf(line, sizeof line, "line %04d %.*s\n", i, i % 23, "xxxxxxxxxxxxxxxxxxxxxxxxx");
        mcl_buf_add(&in, line, (size_t)k);
    }
    mcl_buf out = {0};
    CHECK(mcl_text_cap(in.p, in.n, in.n, 4, &out) == MCL_OK && out.n == in.n &&
              memcmp(out.p, in.p, in.n) == 0,
          "a text under the cap is kept whole");
    mcl_buf_free(&out);
    size_t cap = in.n / 10;
    CHECK(mcl_text_cap(in.p, in.n, cap, 8, &out) == MCL_OK, "cap runs");
    CHECK(out.n <= cap && out.n > cap * 8 / 10 && out.p[out.n - 1] == '\n',
          "capped to %zu bytes of %zu (whole lines)", out.n, cap);
    /* whole lines, in order, in 8 runs spread over the text */
    int prev = -2, runs = 0, first = -1, last = -1, whole = 1;
    for (size_t i = 0; i < out.n;) {
        int num = -1, k = 0;
        if (sscanf((const char *)out.p + i, "line %4d %n", &num, &k) != 1) {
            whole = 0;
            break;
        }
        const uint8_t *nl = memchr(out.p + i, '\n', out.n - i);
        if (!nl || (size_t)(nl - out.p) - i != (size_t)(10 + num % 23)) whole = 0;
        if (num != prev + 1) runs++;
        if (num <= prev && prev >= 0) whole = 0;
        if (first < 0) first = num;
        last = num;
        prev = num;
        i = nl ? (size_t)(nl - out.p) + 1 : out.n;
    }
    CHECK(whole && runs == 8 && first == 0 && last >= 1998,
          "whole lines in order: %d runs, first %d, last %d", runs, first, last);
    mcl_buf_free(&out);
    /* no line ends at all: cut at character boundaries */
    mcl_buf e = {0};
    for (int i = 0; i < 1000; i++) mcl_buf_add(&e, "\xc3\xa9", 2);
    CHECK(mcl_text_cap(e.p, e.n, 501, 3, &out) == MCL_OK && out.n <= 501 && out.n >= 494 &&
              mcl_utf8_valid(out.p, out.n, NULL),
          "no newlines: %zu bytes, valid UTF-8", out.n);
    mcl_buf_free(&out);
    mcl_buf_free(&e);
    size_t cut[2];
    mcl_text_split_points(in.p, in.n, cut);
    CHECK(cut[0] >= in.n * 9 / 10 && cut[0] < in.n * 9 / 10 + 40 && in.p[cut[0] - 1] == '\n',
          "train ends at a line start after 90 %%: %zu of %zu", cut[0], in.n);
    CHECK(cut[1] >= in.n * 95 / 100 && cut[1] < in.n * 95 / 100 + 40 && in.p[cut[1] - 1] == '\n',
          "valid ends at a line start after 95 %%: %zu", cut[1]);
    mcl_text_split_points((const uint8_t *)"abc", 3, cut);
    CHECK(cut[0] <= cut[1] && cut[1] <= 3, "a tiny text splits sanely (%zu %zu)", cut[0], cut[1]);
    CHECK(mcl_text_cap_chunks(5u << 20) == 80 && mcl_text_cap_chunks(1000) == 1, "chunks per cap");
    mcl_buf_free(&in);
}

/* ---- the corpus directory and the stream ---- */

static void domain_text(mcl_buf *b, int which, int lines)
{
    for (int i = 0; i < lines; i++) {
        char l[128];
        int k = which == 0   ? snprintf(l, sizeof l, "alpha line %d\n", i)
                : which == 1 ? snprintf(l, sizeof l, "b\xc3\xa9ta \xe2\x82\xac %d\n", i)
                             : snprintf(l, sizeof l, "g%d\n", i);
        mcl_buf_add(b, l, (size_t)k);
    }
}

static int write_corpus(const char *dd, int n_dom, mcl_buf *texts)
{
    static const char *const names[3] = {"alpha", "beta", "gamma"};
    mcl_text_out_domain d[3];
    memset(d, 0, sizeof d);
    for (int i = 0; i < n_dom; i++) {
        snprintf(d[i].name, sizeof d[i].name, "%s", names[i]);
        d[i].bytes = texts[i].p;
        d[i].n = texts[i].n;
        mcl_text_split_points(texts[i].p, texts[i].n, d[i].cut);
        d[i].source_bytes = (int64_t)texts[i].n;
        snprintf(d[i].packages, sizeof d[i].packages, "pkg-%s 1.0", names[i]);
        snprintf(d[i].about, sizeof d[i].about, "about %s", names[i]);
    }
    mcl_text_out_file cr = {"copyright/pkg-alpha", (const uint8_t *)"Copyright: nobody\n", 18};
    char err[512];
    mcl_status st = mcl_text_write(dd, "corp", d, n_dom, &cr, 1, "cap_bytes = 0\n", err, sizeof err);
    CHECK(st == MCL_OK, "write the corpus: %s", st == MCL_OK ? "" : err);
    return st == MCL_OK ? 0 : -1;
}

static void test_stream(const mcl_text_corpus *c)
{
    char err[512];
    mcl_text_stream *s = NULL;
    mcl_status st = mcl_text_stream_new(c, "train", NULL, 0, 64, 1, 0, &s, err, sizeof err);
    CHECK(st == MCL_OK, "stream: %s", st == MCL_OK ? "" : err);
    if (st != MCL_OK) return;
    const uint8_t *part[3];
    int64_t plen[3], total = 0;
    for (int d = 0; d < 3; d++) {
        mcl_text_split(c, d, "train", &part[d], &plen[d]);
        total += plen[d];
    }
    CHECK(mcl_text_stream_len(s) == total, "the stream holds every train part: %lld of %lld",
          (long long)mcl_text_stream_len(s), (long long)total);
    int order[8], no = mcl_text_stream_order(s, order, 8);
    CHECK(no == 3 && order[0] + order[1] + order[2] == 3 && order[0] != order[1] &&
              order[1] != order[2] && order[0] != order[2],
          "the order is a permutation of the 3 domains");
    /* replay the rule: rounds over the order, skipping used-up domains */
    int64_t off[3] = {0, 0, 0};
    int nb = mcl_text_stream_blocks(s), bi = 0, good = 1, switches = 0;
    const uint8_t *bytes = mcl_text_stream_bytes(s);
    while (bi < nb && good) {
        int any = 0;
        for (int j = 0; j < 3 && bi < nb; j++) {
            int d = order[j];
            if (off[d] >= plen[d]) continue;
            any = 1;
            int64_t a = mcl_text_stream_block_start(s, bi), b = mcl_text_stream_block_start(s, bi + 1);
            int64_t k = b - a;
            if (mcl_text_stream_block_domain(s, bi) != d || mcl_text_stream_block_offset(s, bi) != off[d] ||
                k < 1 || k > 64 || (off[d] + k < plen[d] && k < 61) ||
                memcmp(bytes + a, part[d] + off[d], (size_t)k) != 0 ||
                (off[d] + k < plen[d] && (part[d][off[d] + k] & 0xC0) == 0x80)) {
                good = 0;
                printf("  block %d: domain %d (want %d), offset %lld (want %lld), %lld bytes\n", bi,
                       mcl_text_stream_block_domain(s, bi), d,
                       (long long)mcl_text_stream_block_offset(s, bi), (long long)off[d],
                       (long long)k);
                break;
            }
            if (bi > 0 && mcl_text_stream_block_domain(s, bi - 1) != d) switches++;
            off[d] += k;
            bi++;
        }
        if (!any) break;
    }
    CHECK(good && bi == nb, "block layout follows the rule (%d of %d blocks)", bi, nb);
    CHECK(off[0] == plen[0] && off[1] == plen[1] && off[2] == plen[2], "every part used up");
    CHECK(switches >= 2, "the domain changes at block boundaries (%d switches)", switches);
    int bk = nb / 2;
    int64_t a = mcl_text_stream_block_start(s, bk), b = mcl_text_stream_block_start(s, bk + 1);
    CHECK(mcl_text_stream_block_at(s, a) == bk && mcl_text_stream_block_at(s, b - 1) == bk &&
              mcl_text_stream_block_at(s, -1) == -1 &&
              mcl_text_stream_block_at(s, mcl_text_stream_len(s)) == -1 &&
              mcl_text_stream_block_domain(s, nb) == -1,
          "block_at and out-of-range accessors");
    /* the same seed gives the same stream; max_bytes is a prefix */
    mcl_text_stream *s2 = NULL, *s3 = NULL;
    st = mcl_text_stream_new(c, "train", NULL, 0, 64, 1, 150, &s2, err, sizeof err);
    CHECK(st == MCL_OK && mcl_text_stream_len(s2) <= 150 && mcl_text_stream_len(s2) >= 147 &&
              memcmp(mcl_text_stream_bytes(s2), bytes, (size_t)mcl_text_stream_len(s2)) == 0 &&
              mcl_text_stream_blocks(s2) == 3,
          "max_bytes 150: a prefix of the same stream (%lld bytes)", (long long)mcl_text_stream_len(s2));
    mcl_text_stream_free(s2);
    int differs = 0;
    for (uint64_t seed = 2; seed < 30 && !differs; seed++) {
        st = mcl_text_stream_new(c, "train", NULL, 0, 64, seed, 0, &s3, err, sizeof err);
        int o3[3];
        mcl_text_stream_order(s3, o3, 3);
        differs = st == MCL_OK && memcmp(o3, order, sizeof o3) != 0;
        mcl_text_stream_free(s3);
        s3 = NULL;
    }
    CHECK(differs, "another seed gives another domain order");
    /* a subset of domains */
    int sub[2] = {2, 0};
    st = mcl_text_stream_new(c, "valid", sub, 2, 16, 7, 0, &s3, err, sizeof err);
    int only = st == MCL_OK;
    for (int i = 0; only && i < mcl_text_stream_blocks(s3); i++)
        only = mcl_text_stream_block_domain(s3, i) != 1;
    int64_t v0, v2;
    const uint8_t *pp;
    mcl_text_split(c, 0, "valid", &pp, &v0);
    mcl_text_split(c, 2, "valid", &pp, &v2);
    CHECK(only && mcl_text_stream_len(s3) == v0 + v2, "a subset of domains (valid parts)");
    mcl_text_stream_free(s3);
    /* bad arguments */
    int dup[2] = {1, 1}, out_of[1] = {3};
    CHECK(mcl_text_stream_new(c, "bogus", NULL, 0, 64, 1, 0, &s3, err, sizeof err) == MCL_ERR_INVALID &&
              mcl_text_stream_new(c, "test", NULL, 0, 3, 1, 0, &s3, err, sizeof err) == MCL_ERR_INVALID &&
              mcl_text_stream_new(c, "test", dup, 2, 64, 1, 0, &s3, err, sizeof err) == MCL_ERR_INVALID &&
              mcl_text_stream_new(c, "test", out_of, 1, 64, 1, 0, &s3, err, sizeof err) == MCL_ERR_INVALID &&
              mcl_text_stream_new(c, "test", NULL, 0, 64, 1, -5, &s3, err, sizeof err) == MCL_ERR_INVALID &&
              s3 == NULL,
          "bad split, block size, domain lists, max_bytes are refused");
    mcl_text_stream_free(s);
}

static void corrupt_byte(const char *path, long at, int c)
{
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    fseek(f, at, SEEK_SET);
    fputc(c, f);
    fclose(f);
}

static void test_corpus(void)
{
    printf("part corpus and stream\n");
    char dd[256], dir[320], err[1024], p[400];
    snprintf(dd, sizeof dd, "%s/data", tmpdir);
    mcl_buf t[3] = {{0}, {0}, {0}};
    domain_text(&t[0], 0, 300);
    domain_text(&t[1], 1, 200);
    domain_text(&t[2], 2, 60);
    if (write_corpus(dd, 3, t) != 0) return;
    CHECK(mcl_text_dir(dd, "corp", dir, sizeof dir, err, sizeof err) == MCL_OK, "corpus dir");
    CHECK(mcl_text_dir(dd, "../x", p, sizeof p, err, sizeof err) == MCL_ERR_INVALID, "a bad name: %s", err);
    CHECK(mcl_text_is_corpus(dir) && !mcl_text_is_corpus(tmpdir), "is_corpus");
    mcl_text_corpus *c = NULL;
    mcl_status st = mcl_text_open(dir, MCL_TEXT_VERIFY, &c, err, sizeof err);
    CHECK(st == MCL_OK, "open with verification: %s", st == MCL_OK ? "" : err);
    if (st != MCL_OK) return;
    CHECK(mcl_text_domains(c) == 3 && strcmp(mcl_text_domain_name(c, 1), "beta") == 0 &&
              mcl_text_domain_index(c, "gamma") == 2 && mcl_text_domain_index(c, "x") == -1 &&
              mcl_text_domain_name(c, 3) == NULL && strcmp(mcl_text_name(c), "corp") == 0 &&
              strcmp(mcl_text_domain_source(c, 0), "pkg-alpha 1.0") == 0 &&
              strcmp(mcl_text_meta(c, "beta.about"), "about beta") == 0 &&
              strcmp(mcl_text_meta(c, "cap_bytes"), "0") == 0,
          "domains, names, sources, meta");
    int exact = 1;
    for (int d = 0; d < 3; d++) {
        size_t cut[2];
        mcl_text_split_points(t[d].p, t[d].n, cut);
        const uint8_t *b;
        int64_t n;
        mcl_text_split(c, d, "train", &b, &n);
        exact &= n == (int64_t)cut[0] && memcmp(b, t[d].p, cut[0]) == 0;
        mcl_text_split(c, d, "val", &b, &n);
        exact &= n == (int64_t)(cut[1] - cut[0]) && memcmp(b, t[d].p + cut[0], (size_t)n) == 0;
        mcl_text_split(c, d, "test", &b, &n);
        exact &= n == (int64_t)(t[d].n - cut[1]) && memcmp(b, t[d].p + cut[1], (size_t)n) == 0;
        mcl_text_split(c, d, "all", &b, &n);
        exact &= n == (int64_t)t[d].n && memcmp(b, t[d].p, t[d].n) == 0;
    }
    const uint8_t *b;
    int64_t n;
    CHECK(exact, "the parts are the domain's bytes, cut at the split points");
    CHECK(mcl_text_split(c, 0, "dev", &b, &n) == MCL_ERR_INVALID &&
              mcl_text_split(c, 5, "train", &b, &n) == MCL_ERR_INVALID,
          "bad split / domain");
    test_stream(c);
    mcl_text_close(c);

    /* one changed byte: verification names the file; sizes and UTF-8 still pass */
    snprintf(p, sizeof p, "%s/alpha.valid", dir);
    corrupt_byte(p, 3, 'Q');
    mcl_text_check *ch = NULL;
    int nch = 0;
    st = mcl_text_verify(dir, &ch, &nch, err, sizeof err);
    int flagged = 0, others_ok = 1;
    for (int i = 0; i < nch; i++) {
        if (strcmp(ch[i].file, "alpha.valid") == 0) flagged = !ch[i].ok && ch[i].got[0];
        else others_ok &= ch[i].ok;
    }
    CHECK(st == MCL_ERR_FORMAT && nch == 11 && flagged && others_ok && strstr(err, "alpha.valid"),
          "SHA-256 catches one changed byte in alpha.valid (%d files): %s", nch, err);
    free(ch);
    CHECK(mcl_text_open(dir, MCL_TEXT_VERIFY, &c, err, sizeof err) == MCL_ERR_FORMAT && !c &&
              strstr(err, "alpha.valid"),
          "open with verification fails: %s", err);
    CHECK(mcl_text_open(dir, 0, &c, err, sizeof err) == MCL_OK, "open without verification passes");
    mcl_text_close(c);
    c = NULL;
    /* a byte that breaks UTF-8, and a cut file: found without hashing */
    snprintf(p, sizeof p, "%s/beta.test", dir);
    corrupt_byte(p, 1, 0xFF);
    st = mcl_text_open(dir, 0, &c, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "not valid UTF-8") && strstr(err, "beta.test"),
          "invalid UTF-8: %s", err);
    snprintf(p, sizeof p, "%s/alpha.train", dir); /* read before beta */
    CHECK(truncate(p, 10) == 0, "truncate");
    st = mcl_text_open(dir, 0, &c, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "meta.txt says"), "a cut file: %s", err);
    /* preparing again replaces the whole directory */
    if (write_corpus(dd, 2, t) == 0) {
        snprintf(p, sizeof p, "%s/gamma.train", dir);
        struct stat sb;
        CHECK(stat(p, &sb) != 0, "a domain no longer prepared is gone");
        CHECK(mcl_text_open(dir, MCL_TEXT_VERIFY, &c, err, sizeof err) == MCL_OK &&
                  mcl_text_domains(c) == 2,
              "the new corpus opens: %s", err);
        mcl_text_close(c);
        c = NULL;
        CHECK(tu_count_entries(dd, ".corp.") == 0, "no temporary directory left");
    }
    snprintf(p, sizeof p, "%s/none", dd);
    st = mcl_text_open(p, 0, &c, err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, "metacl data prepare text"), "a missing corpus: %s", err);
    for (int i = 0; i < 3; i++) mcl_buf_free(&t[i]);
}

/* ---- the user's files ---- */

static void test_user(void)
{
    printf("part user files\n");
    char dd[256], f1[256], f2[256], f3[256], err[1024], dir[320];
    snprintf(dd, sizeof dd, "%s/udata", tmpdir);
    snprintf(f1, sizeof f1, "%s/One.txt", tmpdir);
    snprintf(f2, sizeof f2, "%s/two words.md", tmpdir);
    snprintf(f3, sizeof f3, "%s/bad.txt", tmpdir);
    write_bytes(f1, "hello\nworld", 11); /* no final newline */
    write_bytes(f2, "zwei \xc3\xa9\n", 8);
    write_bytes(f3, "ab\nc\xe9z\n", 7);
    const char *files[2] = {f1, f2};
    mcl_text_prepare_opts o = {0};
    o.data_dir = dd;
    o.name = "mine";
    mcl_status st = mcl_text_prepare_user(&o, files, 2, err, sizeof err);
    CHECK(st == MCL_OK, "one domain from two files: %s", st == MCL_OK ? "" : err);
    mcl_text_corpus *c = NULL;
    mcl_text_dir(dd, "mine", dir, sizeof dir, err, sizeof err);
    if (st == MCL_OK && mcl_text_open(dir, MCL_TEXT_VERIFY, &c, err, sizeof err) == MCL_OK) {
        const uint8_t *b;
        int64_t n;
        mcl_text_split(c, 0, "all", &b, &n);
        CHECK(mcl_text_domains(c) == 1 && strcmp(mcl_text_domain_name(c, 0), "mine") == 0 &&
                  n == 20 && memcmp(b, "hello\nworld\nzwei \xc3\xa9\n", 20) == 0,
              "the files in order, each ending a line");
        mcl_text_close(c);
    } else
        CHECK(0, "open the user corpus: %s", err);
    o.per_file = 1;
    o.name = "each";
    const char *three[3] = {f1, f2, f1};
    st = mcl_text_prepare_user(&o, three, 3, err, sizeof err);
    mcl_text_dir(dd, "each", dir, sizeof dir, err, sizeof err);
    c = NULL;
    if (st == MCL_OK && mcl_text_open(dir, 0, &c, err, sizeof err) == MCL_OK) {
        CHECK(mcl_text_domains(c) == 3 && strcmp(mcl_text_domain_name(c, 0), "One") == 0 &&
                  strcmp(mcl_text_domain_name(c, 1), "two_words") == 0 &&
                  strcmp(mcl_text_domain_name(c, 2), "One-2") == 0,
              "one domain per file, named after it: %s %s %s", mcl_text_domain_name(c, 0),
              mcl_text_domain_name(c, 1), mcl_text_domain_name(c, 2));
        mcl_text_close(c);
    } else
        CHECK(0, "per-file corpus: %s", err);
    const char *badf[2] = {f1, f3};
    o.per_file = 0;
    st = mcl_text_prepare_user(&o, badf, 2, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "bad.txt: not valid UTF-8 at byte 4 (line 2, column 2"),
          "invalid UTF-8 is refused with its place: %s", err);
    char f4[256];
    snprintf(f4, sizeof f4, "%s/empty.txt", tmpdir);
    write_bytes(f4, "", 0);
    const char *emp[1] = {f4};
    st = mcl_text_prepare_user(&o, emp, 1, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "empty"), "an empty file: %s", err);
}

int main(void)
{
    tu_begin("test-text", SEED);
    snprintf(tmpdir, sizeof tmpdir, "test-text.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        CHECK(0, "mkdtemp");
        return tu_summary();
    }
    test_utf8();
    test_files();
    test_sword();
    test_rdata();
    test_cap();
    test_corpus();
    test_user();
    if (tu_failed() == 0) tu_rm_rf(tmpdir);
    else printf("kept %s\n", tmpdir);
    return tu_summary();
}
