/* lm_data.c — the language model's view of the text corpus (lm_data.h over text.h). */
#define _POSIX_C_SOURCE 200809L
#include "lm_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"
#include "util.h"

#define fail mcl_errbuf

void lm_corpus_close(lm_corpus *c)
{
    if (!c) return;
    mcl_text_close(c->text);
    memset(c, 0, sizeof *c);
}

mcl_status lm_corpus_open(const char *dir, const char *domains, lm_corpus *c, char *err, size_t len)
{
    memset(c, 0, sizeof *c);
    char e2[768];
    mcl_status st = MCL_OK;
    if (dir && dir[0]) snprintf(c->dir, sizeof c->dir, "%s", dir);
    else st = mcl_text_dir(NULL, NULL, c->dir, sizeof c->dir, e2, sizeof e2);
    if (st == MCL_OK) {
        mcl_text_corpus *t = NULL;
        st = mcl_text_open(c->dir, 0, &t, e2, sizeof e2);
        c->text = t;
    }
    if (st != MCL_OK) return fail(err, len, st, "text corpus: %s", e2);
    mcl_text_corpus *t = c->text;
    const int nd = mcl_text_domains(t);
    int chosen[LM_MAX_DOMAINS], n = 0;
    if (!domains || !domains[0]) {
        for (int d = 0; d < nd && n < LM_MAX_DOMAINS; d++) chosen[n++] = d;
    } else {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", domains);
        char *save = NULL;
        for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            const int d = mcl_text_domain_index(t, w);
            if (d < 0) {
                char have[1024] = "";
                for (int i = 0; i < nd; i++) {
                    strncat(have, i ? ", " : "", sizeof have - strlen(have) - 1);
                    strncat(have, mcl_text_domain_name(t, i), sizeof have - strlen(have) - 1);
                }
                st = fail(err, len, MCL_ERR_INVALID, "text corpus %s has no domain '%s' (it has: %s)", c->dir, w, have);
                lm_corpus_close(c);
                return st;
            }
            int dup = 0;
            for (int i = 0; i < n; i++) dup |= chosen[i] == d;
            if (!dup && n < LM_MAX_DOMAINS) chosen[n++] = d;
        }
    }
    if (n == 0) {
        lm_corpus_close(c);
        return fail(err, len, MCL_ERR_INVALID, "text corpus: no domain chosen");
    }
    for (int i = 0; i < n; i++) {
        c->index[i] = chosen[i];
        snprintf(c->name[i], sizeof c->name[i], "%s", mcl_text_domain_name(t, chosen[i]));
        st = mcl_text_split(t, chosen[i], "train", &c->train[i], &c->train_n[i]);
        if (st != MCL_OK) {
            lm_corpus_close(c);
            return fail(err, len, st, "text corpus: domain %s has no train part", c->name[i]);
        }
    }
    c->n = n;
    return MCL_OK;
}

void lm_stream_free(lm_stream *s)
{
    if (!s) return;
    mcl_text_stream_free(s->owner);
    free(s->start);
    free(s->dom);
    memset(s, 0, sizeof *s);
}

mcl_status lm_corpus_stream(const lm_corpus *c, const char *split, int64_t block, uint64_t seed, lm_stream *out,
                            char *err, size_t len)
{
    memset(out, 0, sizeof *out);
    mcl_text_stream *ts = NULL;
    char e2[768];
    mcl_status st = mcl_text_stream_new(c->text, split, c->index, c->n, block, seed, 0, &ts, e2, sizeof e2);
    if (st != MCL_OK) return fail(err, len, st, "the %s stream: %s", split, e2);
    out->owner = ts;
    const int nb = mcl_text_stream_blocks(ts);
    out->start = malloc((size_t)(nb + 1) * sizeof *out->start);
    out->dom = malloc((size_t)(nb + 1) * sizeof *out->dom);
    if (!out->start || !out->dom) {
        lm_stream_free(out);
        return fail(err, len, MCL_ERR_OOM, "out of memory");
    }
    for (int i = 0; i < nb; i++) {
        out->start[i] = mcl_text_stream_block_start(ts, i);
        const int cd = mcl_text_stream_block_domain(ts, i);
        out->dom[i] = -1;
        for (int k = 0; k < c->n; k++)
            if (c->index[k] == cd) out->dom[i] = k;
    }
    out->s.bytes = mcl_text_stream_bytes(ts);
    out->s.n = mcl_text_stream_len(ts);
    out->s.n_blocks = nb;
    out->s.block_start = out->start;
    out->s.block_domain = out->dom;
    out->s.n_domains = c->n;
    if (out->s.n < 2 || nb < 1) {
        lm_stream_free(out);
        return fail(err, len, MCL_ERR_INVALID, "the %s stream is empty", split);
    }
    return MCL_OK;
}
