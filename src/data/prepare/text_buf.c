/* text_buf.c — byte buffers, UTF-8 repair, the per-domain cap and the split points
 * (textprep.h). */
#include <stdlib.h>
#include <string.h>

#include "textprep.h"
#include "utf8.h"

mcl_status mcl_buf_add(mcl_buf *b, const void *data, size_t n)
{
    if (n == 0) return MCL_OK;
    if (n > MCL_TEXT_MAX_SOURCE || b->n > MCL_TEXT_MAX_SOURCE - n) return MCL_ERR_INVALID;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + n) nc *= 2;
        uint8_t *np = realloc(b->p, nc);
        if (!np) return MCL_ERR_OOM;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    return MCL_OK;
}

mcl_status mcl_buf_addc(mcl_buf *b, uint8_t c)
{
    if (b->n < b->cap) {
        b->p[b->n++] = c;
        return MCL_OK;
    }
    return mcl_buf_add(b, &c, 1);
}

mcl_status mcl_buf_end_line(mcl_buf *b)
{
    if (b->n == 0 || b->p[b->n - 1] == '\n') return MCL_OK;
    return mcl_buf_addc(b, '\n');
}

void mcl_buf_free(mcl_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* Windows-1252 0x80..0x9F (0 = undefined). */
static const uint16_t cp1252[32] = {
    0x20AC, 0,      0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0,      0x017D, 0,      0,      0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0,      0x017E, 0x0178};

static mcl_status put_cp(mcl_buf *out, uint32_t cp)
{
    uint8_t u[3];
    if (cp < 0x800) {
        u[0] = (uint8_t)(0xC0 | (cp >> 6));
        u[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return mcl_buf_add(out, u, 2);
    }
    u[0] = (uint8_t)(0xE0 | (cp >> 12));
    u[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (uint8_t)(0x80 | (cp & 0x3F));
    return mcl_buf_add(out, u, 3);
}

mcl_status mcl_text_clean(const uint8_t *s, size_t n, mcl_buf *out, int64_t *repaired)
{
    int64_t rep = 0;
    mcl_status st = MCL_OK;
    size_t i = 0;
    while (i < n && st == MCL_OK) {
        uint8_t c = s[i];
        if (c >= 0x20 && c < 0x7F) { /* a run of printable ASCII */
            size_t j = i + 1;
            while (j < n && s[j] >= 0x20 && s[j] < 0x7F) j++;
            st = mcl_buf_add(out, s + i, j - i);
            i = j;
            continue;
        }
        if (c < 0x80) {
            if (c == '\n' || c == '\t') st = mcl_buf_addc(out, c);
            else if (c == '\r') {
                if (i + 1 >= n || s[i + 1] != '\n') st = mcl_buf_addc(out, '\n');
            } /* other controls and DEL: dropped */
            i++;
            continue;
        }
        int k = mcl_utf8_seq_len(s + i, n - i);
        if (k > 0) {
            if (!(k == 3 && s[i] == 0xEF && s[i + 1] == 0xBB && s[i + 2] == 0xBF))
                st = mcl_buf_add(out, s + i, (size_t)k);
            i += (size_t)k;
            continue;
        }
        rep++;
        uint32_t cp = c < 0xA0 ? cp1252[c - 0x80] : c;
        if (cp) st = put_cp(out, cp);
        i++;
    }
    if (repaired) *repaired += rep;
    return st;
}

int mcl_text_cap_chunks(size_t cap)
{
    size_t k = cap / 65536;
    if (k < 1) k = 1;
    if (k > 1u << 20) k = 1u << 20;
    return (int)k;
}

/* The first line start at or after pos, looking at most `window` bytes ahead; (size_t)-1
 * when there is none in reach. pos 0 and pos n are line starts. */
static size_t line_start_after(const uint8_t *s, size_t n, size_t pos, size_t window)
{
    if (pos == 0 || pos >= n) return pos >= n ? n : 0;
    if (s[pos - 1] == '\n') return pos;
    size_t end = n - pos > window ? pos + window : n;
    const uint8_t *q = memchr(s + pos, '\n', end - pos);
    return q ? (size_t)(q - s) + 1 : (size_t)-1;
}

/* The last line start in (lo, pos], (size_t)-1 when none. */
static size_t line_start_before(const uint8_t *s, size_t n, size_t lo, size_t pos)
{
    if (pos >= n) return n;
    for (size_t i = pos; i > lo; i--)
        if (s[i - 1] == '\n') return i;
    return (size_t)-1;
}

mcl_status mcl_text_cap(const uint8_t *s, size_t n, size_t cap, int chunks, mcl_buf *out)
{
    if (n <= cap) return mcl_buf_add(out, s, n);
    if (chunks < 1) chunks = 1;
    size_t piece = cap / (size_t)chunks;
    if (piece == 0) {
        piece = cap;
        chunks = 1;
    }
    size_t prev = 0;
    for (int j = 0; j < chunks; j++) {
        /* the first piece starts the text, the last one ends it (n <= MCL_TEXT_MAX_SOURCE,
         * 2^30, and j < 2^20: no overflow) */
        size_t nominal =
            chunks > 1 ? (size_t)((uint64_t)(n - piece) * (uint64_t)j / (uint64_t)(chunks - 1)) : 0;
        if (nominal < prev) nominal = prev;
        size_t a = line_start_after(s, n, nominal, piece);
        if (a == (size_t)-1) a = mcl_utf8_floor(s, n, nominal);
        if (a < prev) a = prev;
        if (a >= n) break;
        size_t want = a + piece < n ? a + piece : n;
        size_t b = line_start_before(s, n, a, want);
        if (b == (size_t)-1) b = mcl_utf8_floor(s, n, want);
        if (b <= a) continue;
        mcl_status st = mcl_buf_add(out, s + a, b - a);
        if (st != MCL_OK) return st;
        prev = b;
    }
    return MCL_OK;
}

static size_t cut_near(const uint8_t *s, size_t n, size_t pos)
{
    const size_t window = 65536;
    size_t a = line_start_after(s, n, pos, window);
    if (a != (size_t)-1) return a;
    size_t lo = pos > window ? pos - window : 0;
    size_t b = line_start_before(s, n, lo, pos);
    if (b != (size_t)-1) return b;
    return mcl_utf8_floor(s, n, pos);
}

void mcl_text_split_points(const uint8_t *s, size_t n, size_t cut[2])
{
    cut[0] = cut_near(s, n, (size_t)((uint64_t)n * 90 / 100));
    cut[1] = cut_near(s, n, (size_t)((uint64_t)n * 95 / 100));
    if (cut[1] < cut[0]) cut[1] = cut[0];
}

/* The start of the line holding s[i]. */
static size_t line_begin(const uint8_t *s, size_t i)
{
    while (i > 0 && s[i - 1] != '\n') i--;
    return i;
}

/* The first line of s[from..n) starting with the marker (after '\r'-free line starts), or
 * (size_t)-1. */
static size_t find_line(const uint8_t *s, size_t n, size_t from, const char *marker)
{
    size_t k = strlen(marker);
    for (size_t i = from; i + k <= n; i++) {
        const uint8_t *q = memchr(s + i, marker[0], n - i);
        if (!q) return (size_t)-1;
        i = (size_t)(q - s);
        if (i + k <= n && memcmp(s + i, marker, k) == 0 && line_begin(s, i) == i) return i;
    }
    return (size_t)-1;
}

size_t mcl_text_strip_gutenberg(uint8_t *s, size_t n)
{
    size_t a = find_line(s, n, 0, "*** START OF");
    if (a != (size_t)-1) {
        const uint8_t *nl = memchr(s + a, '\n', n - a);
        size_t from = nl ? (size_t)(nl - s) + 1 : n;
        memmove(s, s + from, n - from);
        n -= from;
    }
    size_t e = find_line(s, n, 0, "*** END OF");
    if (e != (size_t)-1) {
        size_t lo = e > 600 ? e - 600 : 0;
        size_t t = find_line(s, e, lo, "End of Project Gutenberg");
        if (t == (size_t)-1) t = find_line(s, e, lo, "End of the Project Gutenberg");
        n = t != (size_t)-1 ? t : e;
    }
    return n;
}
