/* utf8.c — UTF-8 checks (utf8.h). */
#include "utf8.h"

int mcl_utf8_seq_len(const uint8_t *s, size_t n)
{
    if (n == 0) return 0;
    uint8_t c = s[0];
    if (c < 0x80) return 1;
    int k;
    uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        if (c == 0xE0) lo = 0xA0;      /* no overlong forms */
        else if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        if (c == 0xF0) lo = 0x90;
        else if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
    } else
        return 0;
    if (n < (size_t)k) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < k; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return k;
}

int mcl_utf8_valid(const uint8_t *s, size_t n, size_t *bad)
{
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) { /* the common case: a run of ASCII */
            i++;
            continue;
        }
        int k = mcl_utf8_seq_len(s + i, n - i);
        if (k == 0) {
            if (bad) *bad = i;
            return 0;
        }
        i += (size_t)k;
    }
    return 1;
}

size_t mcl_utf8_floor(const uint8_t *s, size_t n, size_t pos)
{
    if (pos >= n) return n;
    for (int back = 0; back < 3 && pos > 0 && (s[pos] & 0xC0) == 0x80; back++) pos--;
    return pos;
}

void mcl_text_line_col(const uint8_t *s, size_t off, int64_t *line, int64_t *col)
{
    int64_t l = 1;
    size_t start = 0;
    for (size_t i = 0; i < off; i++)
        if (s[i] == '\n') {
            l++;
            start = i + 1;
        }
    *line = l;
    *col = (int64_t)(off - start) + 1;
}
