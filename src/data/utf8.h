/* utf8.h — UTF-8 checks shared by the text corpus reader (text.c) and its preparation
 * (src/data/prepare/text_*.c). Internal to the data code. */
#ifndef MCL_UTF8_H
#define MCL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the well-formed UTF-8 sequence at s[0..n-1] (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF), or 0 when s does not start one (n == 0 included). */
int mcl_utf8_seq_len(const uint8_t *s, size_t n);

/* 1 when s[0..n-1] is well-formed UTF-8; otherwise 0 and *bad (may be NULL) = the offset of
 * the first byte that does not start a well-formed sequence. */
int mcl_utf8_valid(const uint8_t *s, size_t n, size_t *bad);

/* The largest position <= pos that is not inside a multi-byte character of s[0..n-1] (pos is
 * clamped to n): moves back over at most 3 continuation bytes. */
size_t mcl_utf8_floor(const uint8_t *s, size_t n, size_t pos);

/* Line and column (1-based; the column counts bytes) of byte offset off in s. */
void mcl_text_line_col(const uint8_t *s, size_t off, int64_t *line, int64_t *col);

#endif
