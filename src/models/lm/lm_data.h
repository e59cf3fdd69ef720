/* lm_data.h — what the language model reads of the text corpus (text.h): the train split of
 * each chosen domain, and the shifting evaluation streams (internal to the lm family). */
#ifndef MCL_MODELS_LM_DATA_H
#define MCL_MODELS_LM_DATA_H

#include <stdint.h>

#include "lm_train.h"

#define LM_MAX_DOMAINS 64

typedef struct lm_corpus {
    char dir[1024];
    int n;                            /* chosen domains                               */
    char name[LM_MAX_DOMAINS][64];
    const uint8_t *train[LM_MAX_DOMAINS];
    int64_t train_n[LM_MAX_DOMAINS];
    int index[LM_MAX_DOMAINS];        /* the corpus's number of each chosen domain    */
    void *text;                       /* the open corpus (mcl_text_corpus)            */
} lm_corpus;

/* dir "" = <data dir>/text; domains "" = all, else a comma-separated subset (an unknown name
 * is an error that lists the corpus's domains). */
mcl_status lm_corpus_open(const char *dir, const char *domains, lm_corpus *c, char *err, size_t len);
void lm_corpus_close(lm_corpus *c);

/* A stream of the chosen domains' `split` parts ("valid" or "test") in blocks of `block`
 * bytes (text.h's layout: a fixed shuffled domain order from seed); s.block_domain numbers
 * the chosen domains 0..n-1 as c->name does. */
typedef struct lm_stream {
    mcl_lm_stream s;
    void *owner;
    int64_t *start;
    int *dom;
} lm_stream;

mcl_status lm_corpus_stream(const lm_corpus *c, const char *split, int64_t block, uint64_t seed, lm_stream *out,
                            char *err, size_t len);
void lm_stream_free(lm_stream *s);

#endif
