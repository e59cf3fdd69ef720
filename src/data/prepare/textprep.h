/* textprep.h — building a text corpus (text.h) from Debian packages or the user's files.
 * Internal to `metacl data prepare text|txt:...` (the CLI library); doc/data.md describes
 * the sources and the rules.
 *
 *   text_buf.c      a growing byte buffer, UTF-8 repair, the cap and the split points
 *   text_extract.c  gzip / plain files, directory trees, fortune files
 *   text_sword.c    SWORD zText/zCom modules: block index, zlib blocks, OSIS/ThML markup
 *   text_rdata.c    R lazy-load databases (.rdb) and the R serialization format
 *   text_fetch.c    apt-get download / dpkg-deb, run without a shell
 *   text_write.c    the corpus directory: parts, meta.txt, copyright/, SHA256SUMS
 *   text_prepare.c  the domains and the orchestration
 *   text_pin.c      a corpus compared with the pinned manifest (data/text-manifest.txt)
 */
#ifndef MCL_TEXTPREP_H
#define MCL_TEXTPREP_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "text.h"

/* Largest input the extractors accept: one file or object after decompression, and one
 * domain's text before the cap. Larger is refused (MCL_ERR_INVALID) rather than allocated. */
#define MCL_TEXT_MAX_SOURCE ((size_t)1 << 30)

/* ---- text_buf.c ---- */

typedef struct mcl_buf {
    uint8_t *p;
    size_t n, cap;
} mcl_buf;

/* Append n bytes (0 ok, MCL_ERR_OOM, or MCL_ERR_INVALID past MCL_TEXT_MAX_SOURCE). */
mcl_status mcl_buf_add(mcl_buf *b, const void *data, size_t n);
mcl_status mcl_buf_addc(mcl_buf *b, uint8_t c);
/* Make sure the buffer ends with '\n' (nothing when it is empty). */
mcl_status mcl_buf_end_line(mcl_buf *b);
void mcl_buf_free(mcl_buf *b);

/* Append s[0..n-1] to out as valid UTF-8 text with '\n' line ends:
 *  - well-formed UTF-8 sequences are copied, except U+FEFF (byte order marks), dropped;
 *  - a byte that does not start one is read as Windows-1252 (0x80-0x9F: the cp1252
 *    characters; 0xA0-0xFF: Latin-1), written as UTF-8, and counted in *repaired; the five
 *    bytes cp1252 leaves undefined are dropped (and counted);
 *  - CR LF and a lone CR become LF; the other C0 controls but TAB and LF, and DEL, are
 *    dropped (form feeds in source code, NULs).
 * repaired may be NULL. */
mcl_status mcl_text_clean(const uint8_t *s, size_t n, mcl_buf *out, int64_t *repaired);

/* The cap: when n <= cap, all of s. Otherwise `chunks` pieces (chunks >= 1) of about
 * L = cap/chunks bytes spread evenly over s: piece j starts at the first line start at or
 * after j·(n − L)/(chunks − 1) (and after the previous piece; the first piece starts s, the
 * last one ends near its end) and runs to the last line start at or before its start + L; a
 * piece in which no line ends there is cut at a character boundary instead. The pieces are
 * appended to out in order, at most cap bytes in all. */
mcl_status mcl_text_cap(const uint8_t *s, size_t n, size_t cap, int chunks, mcl_buf *out);

/* The chunk count mcl_text_cap uses for a cap: one piece per 64 KiB of cap, at least 1. */
int mcl_text_cap_chunks(size_t cap);

/* The train | valid | test cuts of s[0..n-1]: cut[0] near 90 % and cut[1] near 95 % of n,
 * each moved to the nearest line start within 64 KiB (forward first), else to a character
 * boundary; 0 <= cut[0] <= cut[1] <= n. */
void mcl_text_split_points(const uint8_t *s, size_t n, size_t cut[2]);

/* Project Gutenberg's header and licence out of s[0..n-1], in place, returning the new
 * length: a line starting "*** START OF" and everything before it go; a line starting
 * "*** END OF", everything after it and the "End of [the] Project Gutenberg ..." line shortly
 * before it go. Text without the markers is left as it is. */
size_t mcl_text_strip_gutenberg(uint8_t *s, size_t n);

/* ---- text_extract.c ---- */

/* A whole file, gzip-compressed or not (zlib's gzread: dictzip .dz files are gzip), appended
 * to out; at most MCL_TEXT_MAX_SOURCE bytes after decompression. A corrupt or truncated
 * gzip stream is MCL_ERR_FORMAT naming the file. */
mcl_status mcl_text_read_file(const char *path, mcl_buf *out, char *err, size_t len);

/* The regular files under root/sub (symbolic links are not followed) whose name ends with
 * suffix (NULL = any), skipping directories named in skip_dirs (NULL-terminated) at any
 * depth and files whose name ends with one of skip_suffixes (NULL-terminated, may be NULL),
 * sorted by their path under root/sub (bytewise). *paths: malloc'd array of malloc'd full
 * paths; free with mcl_text_free_paths. An empty result is not an error. */
mcl_status mcl_text_list_tree(const char *root, const char *sub, const char *suffix,
                              const char *const *skip_dirs, const char *const *skip_suffixes,
                              char ***paths, int *n, char *err, size_t len);
void mcl_text_free_paths(char **paths, int n);

/* ---- text_sword.c ---- */

/* Decompress the blocks of one SWORD zText/zCom file pair: idx (the .bzs/.czs/.vzs block
 * index, entries of three little-endian uint32: offset into dat, compressed size,
 * uncompressed size) and dat (the .bzz/.czz/.vzz zlib blocks). Blocks are inflated in index
 * order and appended to out; an entry of compressed size 0 is an empty block. Each block
 * must inflate to exactly its uncompressed size (zlib data after the stream's end, padding,
 * is ignored). what names the files in messages. */
mcl_status mcl_sword_blocks(const uint8_t *idx, size_t idx_n, const uint8_t *dat, size_t dat_n,
                            const char *what, mcl_buf *out, char *err, size_t len);

/* OSIS / ThML / GBF markup to plain text, appended to out: elements of a paragraph kind
 * (div, p, title, chapter, lg, l, lb, br, list, item, table, row, head, verse) end the line;
 * the contents of note elements and of <rdg> are dropped; other tags vanish, with a space
 * in their place when they separate two words; the XML entities &amp; &lt; &gt; &quot;
 * &apos; &nbsp; and &#N; / &#xN; are decoded; runs of spaces and tabs become one space,
 * lines are trimmed and empty lines dropped. */
mcl_status mcl_sword_strip(const uint8_t *s, size_t n, mcl_buf *out);

/* A SWORD module directory: for "ot" then "nt", the first of the block files
 * <part>.bzs/.bzz (book blocks), .czs/.czz (chapter), .vzs/.vzz (verse) that is there and
 * not empty; the blocks decompressed (mcl_sword_blocks) and stripped (mcl_sword_strip).
 * A directory with no block file is MCL_ERR_FORMAT. */
mcl_status mcl_sword_module(const char *dir, mcl_buf *out, char *err, size_t len);

/* ---- text_rdata.c ---- */

/* The strings of one R serialization (XDR, "X\n", versions 2 and 3) appended to out, one per
 * line: the elements of every character vector (STRSXP) in the object, outside attributes;
 * NA is skipped. Strings marked Latin-1 are converted to UTF-8. Unsupported kinds (byte
 * code, the ASCII and native binary formats) are MCL_ERR_UNSUPPORTED; anything truncated or
 * inconsistent is MCL_ERR_FORMAT. *n_strings (may be NULL) gets the number of strings. */
mcl_status mcl_rserial_strings(const uint8_t *s, size_t n, const char *what, mcl_buf *out,
                               int64_t *n_strings, char *err, size_t len);

/* An R lazy-load database (.rdb) in memory: its objects one after the other, each a 4-byte
 * big-endian uncompressed length, then either a type byte ('Z' zlib, '0' stored; '2' bzip2
 * and 'X' xz are MCL_ERR_UNSUPPORTED) and the data, or (the older format) zlib data at once.
 * Every object is decompressed and its strings appended (mcl_rserial_strings). *n_objects
 * (may be NULL) gets the number of objects. */
mcl_status mcl_rdb_strings(const uint8_t *rdb, size_t n, const char *what, mcl_buf *out,
                           int *n_objects, char *err, size_t len);

/* ---- text_fetch.c ---- */

/* Run argv (argv[0] looked up in PATH; no shell) in directory cwd (NULL = here), its stdout
 * appended to out (NULL: to the log) and its stderr, and stdout when out is NULL, to the file
 * log (NULL: discarded). Returns the exit status (0..255), 127 when argv[0] could not be
 * run, -1 when it could not be started or was killed by a signal (errno-like detail in
 * err). */
int mcl_run_cmd(char *const argv[], const char *cwd, mcl_buf *out, const char *log, char *err,
                size_t len);

/* `apt-get download pkg` in dir; the .deb's path into deb. A failure is MCL_ERR_IO with the
 * command to run in err (apt-get update, the package name). */
mcl_status mcl_apt_download(const char *pkg, const char *dir, char *deb, size_t deb_cap,
                            char *err, size_t len);
/* Find <pkg>_*.deb in dir (the newest version when there are several: the last by name);
 * 1 found, 0 not. */
int mcl_find_deb(const char *dir, const char *pkg, char *deb, size_t deb_cap);
/* `dpkg-deb -f deb Version` into version (trimmed). */
mcl_status mcl_deb_version(const char *deb, char *version, size_t cap, char *err, size_t len);
/* `dpkg-deb -x deb root`. */
mcl_status mcl_deb_extract(const char *deb, const char *root, char *err, size_t len);
/* rm -rf path (no symbolic link is followed); 0 ok. */
int mcl_rm_tree(const char *path);

/* ---- text_write.c ---- */

/* Remove what an interrupted `data prepare text` left in data_dir: its work directories
 * (.text-prepare.PID.*, .NAME.new.PID.*) of processes no longer alive, and those without a PID
 * (an older metacl) a day old; a .NAME.old.PID.* (the previous corpus, moved aside for the
 * swap) goes back to NAME when nothing took its place, else is removed. */
void mcl_text_sweep(const char *data_dir);

typedef struct mcl_text_out_domain {
    char name[MCL_TEXT_MAX_NAME + 1];
    const uint8_t *bytes; /* the capped text */
    size_t n;
    size_t cut[2];        /* train | valid | test */
    int64_t source_bytes; /* before the cap */
    int64_t repaired;     /* bytes mapped by mcl_text_clean */
    char packages[512];   /* "pkg version, ..." or the user's files */
    char about[256];      /* a line on where the text sits */
} mcl_text_out_domain;

typedef struct mcl_text_out_file {
    char name[96]; /* "copyright/dict-gcide" */
    const uint8_t *bytes;
    size_t n;
} mcl_text_out_file;

/* Write <data_dir>/<name>/ as text.h describes: the parts of every domain, the extra files,
 * meta.txt (with the lines of extra_meta, "key = value\n" each, added) and SHA256SUMS,
 * into a fresh directory next to it that then replaces the old one (rename), so a reader
 * sees the old corpus or the new one, never a mix. */
mcl_status mcl_text_write(const char *data_dir, const char *name, const mcl_text_out_domain *d,
                          int n_domains, const mcl_text_out_file *files, int n_files,
                          const char *extra_meta, char *err, size_t len);

/* ---- text_prepare.c ---- */

typedef struct mcl_text_prepare_opts {
    const char *data_dir;      /* NULL = mcl_data_dir_default() */
    const char *name;          /* corpus directory name; NULL = "text" (Debian) / "user" */
    int64_t cap_bytes;         /* per domain; 0 = no cap */
    const char *const *domains;/* Debian domains to build (NULL = all) */
    int n_domains;
    const char *debs_dir;      /* take <pkg>_*.deb from here when present (NULL = none) */
    int per_file;              /* user text: one domain per file (else one domain) */
} mcl_text_prepare_opts;

/* The Debian domains, in corpus order: their names, NULL-terminated. */
extern const char *const mcl_text_domain_names[];

/* Build the corpus from Debian packages (apt-get download into a temporary directory under
 * the data dir, dpkg-deb -x, removed at the end). Notices (mcl_notice) report progress. */
mcl_status mcl_text_prepare(const mcl_text_prepare_opts *o, char *err, size_t len);

/* Build a corpus from the user's files (each must be valid UTF-8): one domain named after
 * the corpus (o->name, default "user") holding the files in the given order, or with
 * o->per_file one domain per file named after the file (its base name up to the first '.',
 * other characters than letters, digits, '-' and '_' made '_', -2, -3, ... on a clash). */
mcl_status mcl_text_prepare_user(const mcl_text_prepare_opts *o, const char *const *files,
                                 int n_files, char *err, size_t len);

/* ---- text_pin.c ---- */

/* The manifest of the corpus the docs were measured on, in the source tree (tools/scripts/pin-text.sh
 * writes it) and installed in $(pkgdatadir). */
#define MCL_TEXT_MANIFEST "text-manifest.txt"

enum { MCL_TEXT_PIN_SAME = 0, MCL_TEXT_PIN_DRIFTED = 1, MCL_TEXT_PIN_UNPINNED = 2 };

/* One domain of a corpus against the manifest. */
typedef struct mcl_text_drift {
    char domain[MCL_TEXT_MAX_NAME + 1];
    int state;          /* MCL_TEXT_PIN_* */
    char packages[1024]; /* "linux-doc-6.1 6.1.192-3 -> 6.1.192-4, ..." (pinned -> here); "" */
    char files[1024];    /* the files whose SHA-256 is not the manifest's: "rst.train, ..."; "" */
} mcl_text_drift;

/* Compare the corpus in dir with the manifest file: per domain (the corpus's order) whether
 * its package versions and the SHA-256 of its parts and copyright files are the pinned ones.
 * *out (malloc'd, free()) gets one entry per domain of the corpus, *n their number. An
 * unreadable or malformed manifest or corpus is an error (err says which). */
mcl_status mcl_text_pin_compare(const char *dir, const char *manifest, mcl_text_drift **out,
                                int *n, char *err, size_t len);
/* "pinned", "DRIFTED" or "unpinned". */
const char *mcl_text_pin_state_name(int state);

#endif
