/* text.h — a prepared multi-domain UTF-8 text corpus in memory (public API).
 *
 * `metacl data prepare text` (doc/data.md, "The text corpus") builds <data_dir>/text/ from
 * Debian packages: one *domain* per kind of text (a dictionary, Python code, German fortunes,
 * the King James Bible, ...); `metacl data prepare txt:FILE,...` does the same from the user's
 * files. Each domain's text is cut, at line boundaries, into three contiguous parts: train
 * (the first ~90 % of its bytes), valid (the next ~5 %) and test (the last ~5 %).
 *
 * On disk (the directory is replaced as a whole when it is prepared again):
 *   <domain>.train, <domain>.valid, <domain>.test   the parts, UTF-8 text, '\n' line ends
 *   meta.txt        "key = value" lines (mcl_kv_parse): format = 1, kind = text, name,
 *                   domains = a,b,c (the domain order), and per domain <d>.train / <d>.valid /
 *                   <d>.test (bytes), <d>.source_bytes, <d>.packages, <d>.about, ...
 *   copyright/<PKG> the copyright file of every Debian package the text comes from
 *   SHA256SUMS      "<hex>  <file>" for every file above (sha256sum -c works)
 *
 * A corpus is read whole into memory (a few tens of MB at the default cap of 5 MB per domain);
 * the pointers it hands out stay valid until mcl_text_close. Nothing here is thread-unsafe
 * after opening: the accessors only read.
 *
 * The evaluation stream (mcl_text_stream_new) lays the same part of several domains end to
 * end in blocks, so that the distribution shifts at known positions:
 *   - the domains taking part (all, or the caller's list) are put in an order shuffled by the
 *     seed (Philox, mcl_rng_shuffle_int over the list, stream MCL_TEXT_STREAM_RNG);
 *   - rounds follow each other: in each round every domain in that order that still has bytes
 *     left in its part gives its next block of block_bytes bytes (fewer at the end of its
 *     part, and a block never splits a UTF-8 character: it ends at most 3 bytes early);
 *   - this stops when every part is used up, or when max_bytes (> 0) is reached: the block
 *     that crosses it is cut there (again at a character boundary).
 * Consecutive blocks therefore come from different domains until only one domain has bytes
 * left; block i starts at block_start(i) and holds bytes of domain block_domain(i) taken from
 * offset block_offset(i) of that domain's part.
 */
#ifndef MCL_TEXT_H
#define MCL_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The default corpus name: <data_dir>/text. */
#define MCL_TEXT_DEFAULT_NAME "text"
/* Longest domain name (bytes, without the NUL): letters, digits, '-', '_'. */
#define MCL_TEXT_MAX_NAME 31
/* Most domains in one corpus. */
#define MCL_TEXT_MAX_DOMAINS 64
/* Philox stream of the domain shuffle of mcl_text_stream_new. */
#define MCL_TEXT_STREAM_RNG 0x74657874u /* "text" */

typedef struct mcl_text_corpus mcl_text_corpus;
typedef struct mcl_text_stream mcl_text_stream;

/* Flags of mcl_text_open. */
enum {
    MCL_TEXT_VERIFY = 1 /* also hash every file against SHA256SUMS (else: sizes and UTF-8) */
};

/* The directory of corpus `name` (NULL = "text") in data_dir (NULL = mcl_data_dir_default(),
 * dataset.h): "<data_dir>/<name>" into out (cap bytes). MCL_ERR_INVALID for a name that is
 * not a plain file name or a path that does not fit. */
mcl_status mcl_text_dir(const char *data_dir, const char *name, char *out, size_t cap, char *err,
                        size_t len);

/* Is dir a prepared text corpus (its meta.txt says kind = text)? 1 yes, 0 no. */
int mcl_text_is_corpus(const char *dir);

/* Open the corpus in directory dir (a path as mcl_text_dir gives). Always checks that meta.txt
 * is well formed, that every part file exists with the size meta.txt records and that it is
 * valid UTF-8; with MCL_TEXT_VERIFY also that every file's SHA-256 matches SHA256SUMS. A
 * missing corpus is MCL_ERR_IO with the command that prepares it in err; damage is
 * MCL_ERR_FORMAT naming the file. *out: free with mcl_text_close. */
mcl_status mcl_text_open(const char *dir, unsigned flags, mcl_text_corpus **out, char *err,
                         size_t len);
void mcl_text_close(mcl_text_corpus *c);

/* Domains, in the corpus's order (meta.txt's "domains"); d in 0..mcl_text_domains(c)-1. */
int mcl_text_domains(const mcl_text_corpus *c);
/* Name of domain d ("dictionary", "python", ...), NULL when d is out of range. */
const char *mcl_text_domain_name(const mcl_text_corpus *c, int d);
/* Index of the domain called name, -1 if none. */
int mcl_text_domain_index(const mcl_text_corpus *c, const char *name);
/* Where domain d comes from: the Debian packages and versions ("dict-gcide 0.48.5+nmu2") or
 * the user's files; "" when meta.txt says nothing. NULL when d is out of range. */
const char *mcl_text_domain_source(const mcl_text_corpus *c, int d);
/* The value of a meta.txt line ("cap_bytes", "python.about", ...), NULL when there is none.
 * Owned by the corpus. */
const char *mcl_text_meta(const mcl_text_corpus *c, const char *key);
/* The corpus's name (its meta.txt "name") and directory. */
const char *mcl_text_name(const mcl_text_corpus *c);
const char *mcl_text_path(const mcl_text_corpus *c);

/* The bytes of one part of domain d: split "train", "valid" (or "val"), "test", or "all" (the
 * three parts in order, contiguous in memory: train then valid then test). *bytes points into
 * the corpus (read-only, valid until mcl_text_close; never NUL-terminated), *n is its length
 * (0 is possible for a tiny domain). MCL_ERR_INVALID for a bad d or split. */
mcl_status mcl_text_split(const mcl_text_corpus *c, int domain, const char *split,
                          const uint8_t **bytes, int64_t *n);

/* The evaluation stream of the part `split` ("train", "valid", "test") of the domains
 * `domains[0..n_domains-1]` (indices into the corpus, each at most once; NULL/0 = every
 * domain), built as the header comment says: blocks of block_bytes (>= 4) bytes, a domain
 * order shuffled by seed, at most max_bytes bytes in all (0 = no limit). The stream owns a
 * copy of its bytes and does not refer to the corpus after this returns. *out: free with
 * mcl_text_stream_free. */
mcl_status mcl_text_stream_new(const mcl_text_corpus *c, const char *split, const int *domains,
                               int n_domains, int64_t block_bytes, uint64_t seed,
                               int64_t max_bytes, mcl_text_stream **out, char *err, size_t len);
void mcl_text_stream_free(mcl_text_stream *s);

/* The stream's bytes (read-only, owned by the stream) and their number. */
const uint8_t *mcl_text_stream_bytes(const mcl_text_stream *s);
int64_t mcl_text_stream_len(const mcl_text_stream *s);
/* Blocks, in stream order. For i in 0..n_blocks: block_start(i) is the byte position where
 * block i begins (block_start(n_blocks) = len); block_domain(i) the corpus index of its
 * domain; block_offset(i) the position in that domain's part of its first byte. Out of range:
 * -1. */
int mcl_text_stream_blocks(const mcl_text_stream *s);
int64_t mcl_text_stream_block_start(const mcl_text_stream *s, int i);
int mcl_text_stream_block_domain(const mcl_text_stream *s, int i);
int64_t mcl_text_stream_block_offset(const mcl_text_stream *s, int i);
/* The block holding byte position pos (binary search), -1 when pos is outside the stream. */
int mcl_text_stream_block_at(const mcl_text_stream *s, int64_t pos);
/* The domain order of the rounds (n = the number of domains taking part): order[r] is a
 * corpus index. Returns n; copies at most cap entries. */
int mcl_text_stream_order(const mcl_text_stream *s, int *order, int cap);

/* One file of a corpus checked against SHA256SUMS (mcl_text_verify). */
typedef struct mcl_text_check {
    char file[96];   /* relative to the corpus directory: "python.train", "copyright/dict-gcide" */
    char want[65];   /* SHA256SUMS's hex digest */
    char got[65];    /* the file's digest now; "" when it could not be read */
    int64_t size;    /* its size now, -1 when unreadable */
    int ok;          /* 1 the digests match, 0 otherwise */
} mcl_text_check;

/* Hash every file SHA256SUMS lists. *checks (malloc'd, free()) and *n are filled whenever
 * SHA256SUMS could be parsed. MCL_OK when every file matches and every part file of meta.txt's
 * domains is listed; MCL_ERR_FORMAT with the first problem in err otherwise (MCL_ERR_IO when
 * SHA256SUMS cannot be read). */
mcl_status mcl_text_verify(const char *dir, mcl_text_check **checks, int *n, char *err,
                           size_t len);

#ifdef __cplusplus
}
#endif
#endif
