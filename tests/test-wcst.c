/* test-wcst.c — the WCST environment (Sparse-MetaNet App. C; the WCST task of the Sparse Meta Networks paper).
 *
 * Scripted agents with known behaviour check the rule semantics: an oracle (peeks at the
 * hidden rule) must solve every rule in exactly 3 episodes; the switch must come 1..50 episodes
 * after the solve, to a different rule; a perseverating agent's errors must all be counted as
 * perseveration errors; a random agent must never trigger a switch; an environment restored
 * from a snapshot must continue exactly as the original (bit for bit), and bad snapshots must
 * be refused without changing anything. Statistical bounds are loose (failure probability of
 * a correct environment far below 1e-6).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metacl.h"
#include "ops.h"
#include "rng.h"
#include "testutil.h"
#include "wcst.h"

#define SEED 0x3c57ULL

/* Decode a 12-entry card observation; returns 0 when it is not three one-hot blocks. */
static int decode(const float *obs, int card[3])
{
    for (int a = 0; a < 3; a++) {
        int ones = 0;
        card[a] = -1;
        for (int v = 0; v < 4; v++) {
            float x = obs[MCL_WCST_OBS_INDEX(a, v)];
            if (x == 1.0f) ones++, card[a] = v;
            else if (x != 0.0f) return 0;
        }
        if (ones != 1) return 0;
    }
    return 1;
}

static mcl_wcst *make_env(uint64_t seed, int feedback)
{
    mcl_wcst_cfg cfg;
    mcl_wcst_cfg_default(&cfg);
    cfg.seed = seed;
    cfg.obs_feedback = feedback;
    mcl_wcst *env = NULL;
    mcl_status s = mcl_wcst_create(&cfg, &env);
    CHECK(s == MCL_OK && env, "wcst_create (seed %llu)", (unsigned long long)seed);
    return env;
}

static void test_cards(void)
{
    mcl_wcst *env = make_env(SEED, 0);
    if (!env) return;
    CHECK(mcl_wcst_obs_dim(env) == 12, "observation = 12 entries");
    float obs[12];
    mcl_wcst_reset(env, obs);
    int count[4][4][4];
    memset(count, 0, sizeof count);
    int ok = 1, distinct = 1;
    enum { CARDS = 48000 };
    for (int n = 0; n < CARDS; n++) {
        int c[3], pc[3];
        ok &= decode(obs, c);
        mcl_wcst_peek(env, pc, NULL, NULL, NULL);
        ok &= c[0] == pc[0] && c[1] == pc[1] && c[2] == pc[2];
        distinct &= c[0] != c[1] && c[0] != c[2] && c[1] != c[2];
        if (c[0] >= 0 && c[1] >= 0 && c[2] >= 0) count[c[0]][c[1]][c[2]]++;
        mcl_wcst_step(env, n % 4, NULL, obs, NULL);
    }
    CHECK(ok, "every observation is three one-hot blocks matching the hidden card");
    CHECK(distinct, "colour, shape and number are drawn without replacement (always distinct)");
    /* 24 ordered triples, each ~2000 (sd ~44): +-300 */
    int uni = 1, n24 = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++)
                if (count[a][b][c]) {
                    n24++;
                    uni &= abs(count[a][b][c] - 2000) < 300;
                }
    CHECK(n24 == 24 && uni, "all 24 cards occur, uniformly (%d distinct)", n24);
    /* the paper's code table: value v of attribute a -> entry 4a + 3 - v */
    int card[3] = {0, 1, 3};
    float e[12];
    mcl_wcst_encode_card(card, e);
    CHECK(e[3] == 1.0f && e[6] == 1.0f && e[8] == 1.0f && e[0] + e[1] + e[2] + e[4] + e[5] + e[7] + e[9] + e[10] + e[11] == 0.0f,
          "encoding follows inp_codes ([0,0,0,1] for value 0)");
    /* a deliberately wrong expectation (plain one-hot at 4a + v) is detected */
    CHECK(!(e[0] == 1.0f && e[5] == 1.0f && e[11] == 1.0f), "plain one-hot layout would be detected");
    mcl_wcst_reference_card(2, e);
    int rc[3];
    CHECK(decode(e, rc) && rc[0] == 2 && rc[1] == 2 && rc[2] == 2, "reference card k has colour, shape, number k");
    mcl_wcst_free(env);
}

/* Run an agent for n cards. policy: 0 oracle, 1 random, 2 perseverate for the first
 * `persev` cards of every new rule then oracle. Collects per-step infos when out != NULL. */
static void run_agent(mcl_wcst *env, int policy, int persev, int64_t n, mcl_wcst_info *out,
                      float *rewards)
{
    mcl_rng r;
    mcl_rng_init(&r, SEED, 99);
    int64_t since_switch = 0;
    for (int64_t i = 0; i < n; i++) {
        int card[3], rule, old;
        mcl_wcst_peek(env, card, &rule, &old, NULL);
        int a = card[rule];
        if (policy == 1) a = (int)mcl_rng_next_below(&r, 4);
        if (policy == 2 && old >= 0 && since_switch < persev) a = card[old];
        mcl_wcst_info info;
        float rew;
        mcl_wcst_step(env, a, &rew, NULL, &info);
        since_switch++;
        if (info.rule_switched) since_switch = 0;
        if (out) out[i] = info;
        if (rewards) rewards[i] = rew;
    }
}

static void test_oracle(void)
{
    mcl_wcst *env = make_env(SEED + 1, 0);
    if (!env) return;
    enum { N = 200000 };
    mcl_wcst_info *inf = malloc(N * sizeof *inf);
    float *rew = malloc(N * sizeof *rew);
    run_agent(env, 0, 0, N, inf, rew);
    int ok_target = 1, ok_reward = 1, ok_old = 1, ok_boundary = 1, ok_diff = 1;
    int64_t solves = 0, switches = 0, last_solve_ep = -1;
    int dmin = 1000, dmax = 0;
    double dsum = 0;
    for (int64_t i = 0; i < N; i++) {
        mcl_wcst_info *in = &inf[i];
        ok_target &= in->target == in->card[in->rule] && in->correct;
        ok_reward &= rew[i] == 1.0f;
        ok_old &= in->old_rule < 0 ? in->target_old == -1
                                   : (in->target_old == in->card[in->old_rule] && in->target_old != in->target);
        ok_boundary &= in->episode == i / 16 && in->step == i % 16 && in->episode_end == (i % 16 == 15);
        if (in->solved_now) {
            solves++;
            last_solve_ep = in->episode;
            ok_boundary &= in->episode_end;
        }
        if (in->rule_switched) {
            switches++;
            ok_boundary &= in->episode_end;
            int d = (int)(in->episode + 1 - last_solve_ep);
            if (d < dmin) dmin = d;
            if (d > dmax) dmax = d;
            dsum += d;
            if (i + 1 < N) ok_diff &= inf[i + 1].rule != in->rule && inf[i + 1].old_rule == in->rule;
        }
        if (i > 0 && !inf[i - 1].rule_switched) ok_diff &= in->rule == inf[i - 1].rule;
    }
    CHECK(ok_target, "the correct answer is the card's value of the rule's attribute");
    CHECK(ok_reward, "reward +1 for every correct sort");
    CHECK(ok_old, "perseveration target = the previous rule's answer (-1 during the first rule), never the correct one");
    CHECK(ok_boundary, "16-card episodes; solves and switches only at episode ends");
    CHECK(ok_diff, "the rule changes only at switches, always to a different rule");
    /* oracle: every rule solved after exactly 3 episodes */
    int ok = 1;
    int nt = mcl_wcst_num_tasks(env);
    for (int t = 0; t + 1 < nt; t++) {
        const mcl_wcst_task_stats *ts = mcl_wcst_task(env, t);
        ok &= ts->cards_to_solve == 48 && ts->episodes_to_solve == 3 && ts->errors == 0 && ts->persev_errors == 0;
        if (t > 0) ok &= ts->old_rule == mcl_wcst_task(env, t - 1)->rule && ts->rule != ts->old_rule;
    }
    CHECK(ok && nt > 100, "oracle: each of %d rules solved in exactly 48 cards / 3 episodes", nt);
    CHECK(switches == nt - 1 && (solves == switches || solves == switches + 1), "one switch per solve (%lld solves, %lld switches)",
          (long long)solves, (long long)switches);
    /* delay d uniform on 1..50: mean 25.5, sd 14.4 -> over ~ 200000/(16*28) ~ 440 switches the
     * mean is within +-0.7 (1 sd); bound +-4 */
    double mean = switches ? dsum / (double)switches : 0;
    CHECK(dmin >= 1 && dmax <= 50 && dmin <= 3 && dmax >= 48 && fabs(mean - 25.5) < 4,
          "switch 1..50 episodes after the solve (min %d, max %d, mean %.2f over %lld)", dmin, dmax, mean,
          (long long)switches);
    /* rules visited: each of the three occurs */
    int seen[3] = {0};
    for (int t = 0; t < nt; t++) seen[mcl_wcst_task(env, t)->rule]++;
    CHECK(seen[0] > 0 && seen[1] > 0 && seen[2] > 0, "all three rules occur (%d %d %d)", seen[0], seen[1], seen[2]);
    free(inf);
    free(rew);
    mcl_wcst_free(env);
}

static void test_solve_rules(void)
{
    /* one error in the 3rd episode resets the streak: solved at the end of episode 6 (3..5 perfect) */
    mcl_wcst *env = make_env(SEED + 2, 0);
    if (!env) return;
    int64_t solved_at = -1;
    for (int64_t i = 0; i < 200 && solved_at < 0; i++) {
        int card[3], rule;
        mcl_wcst_peek(env, card, &rule, NULL, NULL);
        int a = card[rule];
        if (i == 40) a = (a + 1) % 4;
        mcl_wcst_info in;
        float r;
        mcl_wcst_step(env, a, &r, NULL, &in);
        if (i == 40) CHECK(!in.correct && r == -1.0f && !in.persev_error, "a wrong sort: reward -1, no old rule to follow");
        if (in.solved_now) solved_at = i + 1;
    }
    CHECK(solved_at == 96, "an error in episode 3 delays the solve to card 96 (got %lld)", (long long)solved_at);
    const mcl_wcst_task_stats *ts = mcl_wcst_task(env, 0);
    CHECK(ts && ts->cards_to_solve == 96 && ts->episodes_to_solve == 6 && ts->errors == 1,
          "task stats: 96 cards, 6 episodes, 1 error");
    /* 47 correct then 1 wrong: not solved */
    mcl_wcst_reset(env, NULL);
    int solved = 0;
    for (int64_t i = 0; i < 48; i++) {
        int card[3], rule;
        mcl_wcst_peek(env, card, &rule, NULL, NULL);
        mcl_wcst_info in;
        mcl_wcst_step(env, i == 47 ? (card[rule] + 1) % 4 : card[rule], NULL, NULL, &in);
        solved |= in.solved_now;
    }
    CHECK(!solved && mcl_wcst_task(env, 0)->cards_to_solve == -1, "47 of 48 correct does not solve");
    /* random agent: no solve, no switch in 20000 cards (P(48 in a row) = 4^-48 per try) */
    mcl_wcst_reset(env, NULL);
    run_agent(env, 1, 0, 20000, NULL, NULL);
    int rule0;
    mcl_wcst_peek(env, NULL, &rule0, NULL, &solved);
    CHECK(mcl_wcst_num_tasks(env) == 1 && !solved, "no switch without a solve (random agent)");
    const mcl_wcst_task_stats *t0 = mcl_wcst_task(env, 0);
    /* errors ~ 0.75 * 20000 = 15000 (sd ~61) */
    CHECK(t0 && t0->cards == 20000 && labs((long)t0->errors - 15000) < 400 && t0->persev_errors == 0,
          "random agent: ~75%% errors (%lld), no perseveration during the first rule", t0 ? (long long)t0->errors : -1LL);
    mcl_wcst_free(env);
}

static void test_perseveration(void)
{
    /* perseverate for the first 20 cards after every switch, then oracle */
    mcl_wcst *env = make_env(SEED + 3, 0);
    if (!env) return;
    enum { N = 60000 };
    mcl_wcst_info *inf = malloc(N * sizeof *inf);
    run_agent(env, 2, 20, N, inf, NULL);
    int nt = mcl_wcst_num_tasks(env);
    int ok = nt > 10;
    for (int t = 1; t + 1 < nt; t++) {
        const mcl_wcst_task_stats *ts = mcl_wcst_task(env, t);
        ok &= ts->persev_errors == 20 && ts->errors == 20;
        /* 20 errors in episodes 0-1 of the rule; solved after episodes 2, 3, 4 */
        ok &= ts->cards_to_solve == 80 && ts->episodes_to_solve == 5;
    }
    CHECK(ok, "perseverating agent: 20 perseveration errors per rule, solved after 80 cards (%d rules)", nt);
    int ok2 = 1;
    for (int64_t i = 0; i < N; i++)
        if (inf[i].old_rule >= 0 && !inf[i].correct) ok2 &= inf[i].persev_error && inf[i].target_old != inf[i].target;
    CHECK(ok2, "every error of this agent is flagged as perseveration");
    /* deliberately wrong expectation: with the agent answering the NEW rule's value of the old
     * attribute, persev flags must be off -> counting "any error" as persev would be detected */
    int64_t errs = 0, pers = 0;
    mcl_wcst_reset(env, NULL);
    for (int64_t i = 0; i < 3000; i++) {
        int card[3], rule, old;
        mcl_wcst_peek(env, card, &rule, &old, NULL);
        int third = 3 - rule - (old >= 0 ? old : (rule + 1) % 3);
        int a = old >= 0 ? card[third] : card[rule]; /* a third attribute: wrong, not perseveration */
        mcl_wcst_info in;
        mcl_wcst_step(env, a, NULL, NULL, &in);
        errs += !in.correct;
        pers += in.persev_error;
    }
    CHECK(pers == 0, "answers by a third attribute are errors but not perseveration errors (%lld errors)", (long long)errs);
    free(inf);
    mcl_wcst_free(env);
}

static void test_determinism_feedback(void)
{
    mcl_wcst *a = make_env(SEED + 4, 1), *b = make_env(SEED + 4, 1), *c = make_env(SEED + 5, 1);
    if (!a || !b || !c) {
        mcl_wcst_free(a);
        mcl_wcst_free(b);
        mcl_wcst_free(c);
        return;
    }
    CHECK(mcl_wcst_obs_dim(a) == 17, "observation with feedback = 17 entries");
    float oa[17], ob[17], oc[17];
    mcl_wcst_reset(a, oa);
    mcl_wcst_reset(b, ob);
    mcl_wcst_reset(c, oc);
    CHECK(oa[12] + oa[13] + oa[14] + oa[15] + oa[16] == 0.0f, "no feedback before the first step");
    int same = 1, differ = 0, fb = 1;
    for (int i = 0; i < 3000; i++) {
        /* a and b: the same (oracle-ish) policy; c: a different seed */
        int card[3], rule;
        mcl_wcst_peek(a, card, &rule, NULL, NULL);
        int act = (i % 7 == 0) ? (card[rule] + 1) % 4 : card[rule];
        float ra, rb;
        mcl_wcst_info ia, ib;
        mcl_wcst_step(a, act, &ra, oa, &ia);
        mcl_wcst_step(b, act, &rb, ob, &ib);
        mcl_wcst_step(c, act, NULL, oc, NULL);
        same &= !memcmp(oa, ob, sizeof oa) && ra == rb && ia.rule == ib.rule && ia.target == ib.target;
        differ += memcmp(oa, oc, 12 * sizeof(float)) != 0;
        for (int k = 0; k < 4; k++) fb &= oa[12 + k] == (k == act ? 1.0f : 0.0f);
        fb &= oa[16] == ra && ra == (ia.correct ? 1.0f : -1.0f);
    }
    CHECK(same, "same seed + same actions -> same observations, rewards, rules");
    CHECK(differ > 2000, "another seed -> other cards (%d of 3000 differ)", differ);
    CHECK(fb, "feedback entries: one-hot previous action, previous reward");
    /* the card sequence does not depend on the agent; reset reproduces it */
    mcl_wcst_reset(a, oa);
    mcl_wcst_reset(b, ob);
    int cards_same = 1;
    for (int i = 0; i < 2000; i++) {
        int ca[3], cb[3], rule;
        mcl_wcst_peek(a, ca, &rule, NULL, NULL);
        mcl_wcst_peek(b, cb, NULL, NULL, NULL);
        cards_same &= !memcmp(ca, cb, sizeof ca);
        mcl_wcst_step(a, ca[rule], NULL, NULL, NULL); /* a solves and switches */
        mcl_wcst_step(b, i % 4, NULL, NULL, NULL);    /* b never does */
    }
    CHECK(cards_same && mcl_wcst_num_tasks(a) > 1 && mcl_wcst_num_tasks(b) == 1,
          "cards are the same whatever the agent does");
    /* custom rewards and errors */
    mcl_wcst_cfg cfg;
    mcl_wcst_cfg_default(&cfg);
    cfg.reward_correct = 0.5f;
    cfg.reward_wrong = 0.0f;
    mcl_wcst *d = NULL;
    mcl_wcst_create(&cfg, &d);
    if (d) {
        int card[3], rule;
        mcl_wcst_peek(d, card, &rule, NULL, NULL);
        float r1, r2;
        mcl_wcst_step(d, card[rule], &r1, NULL, NULL);
        mcl_wcst_peek(d, card, &rule, NULL, NULL);
        mcl_wcst_step(d, (card[rule] + 2) % 4, &r2, NULL, NULL);
        CHECK(r1 == 0.5f && r2 == 0.0f, "configured rewards");
        CHECK(mcl_wcst_step(d, 4, NULL, NULL, NULL) == MCL_ERR_INVALID && mcl_wcst_step(d, -1, NULL, NULL, NULL) == MCL_ERR_INVALID,
              "actions outside 0..3 -> INVALID");
        CHECK(mcl_wcst_task(d, 0)->cards == 2, "an invalid action changes nothing");
    }
    mcl_wcst_free(d);
    cfg.episode_len = 0;
    void *dummy = NULL;
    mcl_wcst *e = (mcl_wcst *)&dummy;
    CHECK(mcl_wcst_create(&cfg, &e) == MCL_ERR_INVALID && e == NULL, "episode_len 0 -> INVALID");
    CHECK(mcl_wcst_create(NULL, &e) == MCL_ERR_NULL, "NULL cfg -> NULL");
    CHECK(mcl_wcst_task(a, 99) == NULL && mcl_wcst_step(NULL, 0, NULL, NULL, NULL) == MCL_ERR_NULL,
          "bad task index / NULL env");
    mcl_wcst_free(NULL);
    mcl_wcst_free(a);
    mcl_wcst_free(b);
    mcl_wcst_free(c);
}

/* Snapshot / restore. The policy: mostly the right answer, sometimes the old rule's
 * (perseveration) or a random pile, so rules are solved, switched and erred on. */
static int snap_policy(mcl_wcst *env, mcl_rng *pol)
{
    int card[3], rule, old;
    mcl_wcst_peek(env, card, &rule, &old, NULL);
    uint32_t u = mcl_rng_next_below(pol, 100);
    if (u < 2 && old >= 0) return card[old];
    if (u < 5) return (int)mcl_rng_next_below(pol, 4);
    return card[rule];
}

static int info_eq(const mcl_wcst_info *a, const mcl_wcst_info *b)
{
    return a->card[0] == b->card[0] && a->card[1] == b->card[1] && a->card[2] == b->card[2] &&
           a->rule == b->rule && a->old_rule == b->old_rule && a->target == b->target &&
           a->target_old == b->target_old && a->correct == b->correct &&
           a->persev_error == b->persev_error && a->task == b->task &&
           a->card_index == b->card_index && a->episode == b->episode && a->step == b->step &&
           a->episode_end == b->episode_end && a->solved_now == b->solved_now &&
           a->rule_switched == b->rule_switched;
}

static int stats_eq(const mcl_wcst_task_stats *a, const mcl_wcst_task_stats *b)
{
    return a && b && a->rule == b->rule && a->old_rule == b->old_rule &&
           a->start_card == b->start_card && a->start_episode == b->start_episode &&
           a->cards == b->cards && a->errors == b->errors && a->persev_errors == b->persev_errors &&
           a->cards_to_solve == b->cards_to_solve && a->episodes_to_solve == b->episodes_to_solve;
}

/* Step a and b n times with the policy's actions (from a's hidden state); at step flip_at
 * (-1: never) b gets another pile. Returns the steps at which anything differs: status,
 * reward bits, observation bits, info, hidden state. *switches counts a's rule switches. */
static int64_t replay(mcl_wcst *a, mcl_wcst *b, mcl_rng *pol, int64_t n, int64_t flip_at,
                      int64_t *switches)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        int act = snap_policy(a, pol);
        float ra, rb, oa[17], ob[17];
        mcl_wcst_info ia, ib;
        mcl_status sa = mcl_wcst_step(a, act, &ra, oa, &ia);
        mcl_status sb = mcl_wcst_step(b, i == flip_at ? (act + 1) % 4 : act, &rb, ob, &ib);
        int ca[3], cb[3], rla, rlb, ola, olb, sva, svb;
        mcl_wcst_peek(a, ca, &rla, &ola, &sva);
        mcl_wcst_peek(b, cb, &rlb, &olb, &svb);
        bad += sa != MCL_OK || sb != MCL_OK || memcmp(&ra, &rb, sizeof ra) != 0 ||
               memcmp(oa, ob, sizeof oa) != 0 || !info_eq(&ia, &ib) ||
               memcmp(ca, cb, sizeof ca) != 0 || rla != rlb || ola != olb || sva != svb;
        if (switches) *switches += ia.rule_switched;
    }
    return bad;
}

/* Snapshot of env into a fresh malloc'd buffer (*n values). */
static int64_t *take_snapshot(const mcl_wcst *env, int64_t *n)
{
    *n = mcl_wcst_snapshot(env, NULL, 0);
    int64_t *buf = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *buf);
    if (buf && mcl_wcst_snapshot(env, buf, *n) != *n) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

/* 1 when env's snapshot equals want[0..n). */
static int same_snapshot(const mcl_wcst *env, const int64_t *want, int64_t n)
{
    int64_t m;
    int64_t *got = take_snapshot(env, &m);
    int same = got && m == n && !memcmp(got, want, (size_t)n * sizeof *got);
    free(got);
    return same;
}

/* Layout of snapshot format 1 (wcst.c), for the corruption checks: the test first checks that
 * these slots hold what they should, so a layout change is noticed rather than silently
 * testing other fields. */
enum { SNAP_RULE = 17, SNAP_N_CARDS = 20, SNAP_N_TASKS = 29 };

static void test_snapshot(void)
{
    mcl_wcst_cfg cfg;
    mcl_wcst_cfg_default(&cfg);
    cfg.seed = SEED + 6;
    cfg.obs_feedback = 1;
    cfg.reward_correct = 0.1f; /* not exact in binary: the feedback entry must round-trip */
    cfg.reward_wrong = -0.3f;
    mcl_wcst *a = NULL, *b = NULL, *other = NULL, *longer = NULL;
    mcl_wcst_create(&cfg, &a);
    mcl_wcst_create(&cfg, &b);
    mcl_wcst_create(&cfg, &longer);
    mcl_wcst_cfg ocfg = cfg;
    ocfg.seed = SEED + 7;
    mcl_wcst_create(&ocfg, &other);
    int64_t *mid = NULL, *s0 = NULL, *bad = NULL;
    if (!a || !b || !other || !longer) {
        CHECK(0, "wcst_create for the snapshot test");
        goto done;
    }

    /* sizing: cap 0 / NULL only counts; a short cap writes no more than cap values */
    int64_t n0 = mcl_wcst_snapshot(a, NULL, 0);
    CHECK(n0 > 0 && mcl_wcst_snapshot(a, NULL, 100) == n0, "sizing call: %lld values", (long long)n0);
    int64_t small[8];
    for (int i = 0; i < 8; i++) small[i] = -12345;
    CHECK(mcl_wcst_snapshot(a, small, 5) == n0 && small[4] != -12345 && small[5] == -12345,
          "a snapshot into 5 slots writes 5 and returns the full size");
    CHECK(mcl_wcst_snapshot(NULL, NULL, 0) == 0, "NULL env -> size 0");

    /* a snapshot of a fresh env restores (no feedback yet) */
    int64_t ns0;
    s0 = take_snapshot(a, &ns0);
    CHECK(s0 && mcl_wcst_restore(b, s0, ns0) == MCL_OK && same_snapshot(b, s0, ns0),
          "snapshot at reset round-trips");

    /* run A with the policy to card 2500 or later, until a switch is pending mid-episode */
    mcl_rng pol;
    mcl_rng_init(&pol, SEED, 101);
    int64_t steps = 0, pre_switches = 0;
    for (;;) {
        int solved;
        int card[3];
        mcl_wcst_peek(a, card, NULL, NULL, &solved);
        if (steps >= 2500 && solved && steps % 16 != 0) break;
        if (steps >= 20000) break;
        mcl_wcst_info in;
        mcl_wcst_step(a, snap_policy(a, &pol), NULL, NULL, &in);
        pre_switches += in.rule_switched;
        steps++;
    }
    int solved_mid;
    mcl_wcst_peek(a, NULL, NULL, NULL, &solved_mid);
    int tasks_mid = mcl_wcst_num_tasks(a);
    CHECK(solved_mid && steps < 20000 && pre_switches >= 3,
          "snapshot at card %lld: switch pending, %lld switches before, %d tasks", (long long)steps,
          (long long)pre_switches, tasks_mid);
    int64_t nmid;
    mid = take_snapshot(a, &nmid);
    if (!mid) {
        CHECK(0, "snapshot");
        goto done;
    }
    CHECK(nmid == mcl_wcst_snapshot(a, NULL, 0) && nmid > n0, "the snapshot grows with the tasks");

    /* restore into B, continue both with the same actions: everything identical */
    CHECK(mcl_wcst_restore(b, mid, nmid) == MCL_OK, "restore into a fresh env");
    CHECK(same_snapshot(b, mid, nmid), "B's snapshot after the restore = A's");
    int ca[3], cb[3], ra, rb, oa, ob, sa, sb;
    mcl_wcst_peek(a, ca, &ra, &oa, &sa);
    mcl_wcst_peek(b, cb, &rb, &ob, &sb);
    CHECK(!memcmp(ca, cb, sizeof ca) && ra == rb && oa == ob && sa == sb && mcl_wcst_num_tasks(b) == tasks_mid,
          "restored hidden state: card, rule, old rule, solved, %d tasks", tasks_mid);
    mcl_rng pol_mid = pol;
    int64_t post_switches = 0;
    int64_t rest = 5000 - steps;
    int64_t diff = replay(a, b, &pol, rest, -1, &post_switches);
    CHECK(diff == 0 && post_switches >= 2,
          "A and B continue identically for %lld steps (%lld differ; %lld switches after the snapshot)",
          (long long)rest, (long long)diff, (long long)post_switches);
    int nt = mcl_wcst_num_tasks(a), st_ok = nt == mcl_wcst_num_tasks(b) && nt > tasks_mid;
    for (int t = 0; t < nt && st_ok; t++) st_ok &= stats_eq(mcl_wcst_task(a, t), mcl_wcst_task(b, t));
    int64_t nend;
    int64_t *end = take_snapshot(a, &nend);
    CHECK(st_ok && end && same_snapshot(b, end, nend), "per-task stats (%d tasks) and the final snapshots are equal", nt);
    free(end);

    /* the comparison can fail: one different action after a restore shows */
    mcl_rng_init(&pol, SEED, 102);
    run_agent(longer, 0, 0, 20000, NULL, NULL); /* more tasks than the snapshot */
    CHECK(mcl_wcst_num_tasks(longer) > tasks_mid, "the env restored into holds more tasks (%d)", mcl_wcst_num_tasks(longer));
    CHECK(mcl_wcst_restore(a, mid, nmid) == MCL_OK && mcl_wcst_restore(longer, mid, nmid) == MCL_OK &&
              mcl_wcst_num_tasks(longer) == tasks_mid && same_snapshot(longer, mid, nmid),
          "restore into used envs (one shrinks to %d tasks)", tasks_mid);
    pol = pol_mid;
    diff = replay(a, longer, &pol, 500, 10, NULL);
    CHECK(diff > 0, "one different action at step 10 after the restore is detected (%lld steps differ)", (long long)diff);
    mcl_wcst_restore(a, mid, nmid);
    mcl_wcst_restore(longer, mid, nmid);
    pol = pol_mid;
    diff = replay(a, longer, &pol, 500, -1, NULL);
    CHECK(diff == 0, "restored twice, the same actions: identical again");

    /* refused snapshots leave the env as it was */
    int64_t nb;
    int64_t *before = take_snapshot(b, &nb);
    CHECK(mcl_wcst_restore(other, mid, nmid) == MCL_ERR_FORMAT, "a snapshot from another seed -> FORMAT");
    mcl_wcst_cfg lcfg = cfg;
    lcfg.episode_len = 17;
    mcl_wcst *e17 = NULL;
    mcl_wcst_create(&lcfg, &e17);
    CHECK(e17 && mcl_wcst_restore(e17, mid, nmid) == MCL_ERR_FORMAT, "a snapshot from another episode_len -> FORMAT");
    mcl_wcst_free(e17);
    CHECK(mcl_wcst_restore(b, mid, nmid - 1) == MCL_ERR_FORMAT && mcl_wcst_restore(b, mid, 10) == MCL_ERR_FORMAT &&
              mcl_wcst_restore(b, mid, 0) == MCL_ERR_FORMAT,
          "truncated snapshots -> FORMAT");
    CHECK(before && same_snapshot(b, before, nb), "B unchanged by the refused restores");
    bad = malloc((size_t)nmid * sizeof *bad);
    if (!bad) goto done_before;
    CHECK(mid[SNAP_RULE] == ra && mid[SNAP_N_CARDS] == steps && mid[SNAP_N_TASKS] == tasks_mid,
          "the test's layout indices hold the rule, the card count, the task count");
    struct { int at; int64_t v; const char *what; } corrupt[] = {
        {0, 0, "format tag 0"},
        {SNAP_RULE, 7, "rule 7"},
        {SNAP_RULE, -1, "rule -1"},
        {SNAP_N_CARDS, -1, "negative n_cards"},
        {SNAP_N_CARDS, 0, "n_cards 0 (inconsistent)"},
        {SNAP_N_TASKS, (int64_t)tasks_mid + 1, "task count beyond the data"},
        {SNAP_N_TASKS, INT64_MAX, "task count INT64_MAX"},
        {SNAP_N_TASKS, 0, "task count 0"},
        {-1, -5, "last task's errors negative"},
    };
    int nc = (int)(sizeof corrupt / sizeof corrupt[0]);
    for (int i = 0; i < nc; i++) {
        memcpy(bad, mid, (size_t)nmid * sizeof *bad);
        int at = corrupt[i].at >= 0 ? corrupt[i].at : (int)(nmid - 4); /* errors of the last task */
        bad[at] = corrupt[i].v;
        mcl_status st = mcl_wcst_restore(b, bad, nmid);
        CHECK(st == MCL_ERR_FORMAT && same_snapshot(b, before, nb), "corrupted snapshot (%s) -> FORMAT (%s), env unchanged",
              corrupt[i].what, mcl_status_str(st));
    }
    /* deliberately: the unchanged-check itself detects a changed env */
    memcpy(bad, mid, (size_t)nmid * sizeof *bad);
    CHECK(mcl_wcst_restore(b, bad, nmid) == MCL_OK && !same_snapshot(b, before, nb),
          "a successful restore of another state is seen as a change");
    CHECK(mcl_wcst_restore(NULL, mid, nmid) == MCL_ERR_NULL && mcl_wcst_restore(b, NULL, nmid) == MCL_ERR_NULL,
          "NULL env / buffer -> NULL");
done_before:
    free(before);
done:
    free(bad);
    free(mid);
    free(s0);
    mcl_wcst_free(a);
    mcl_wcst_free(b);
    mcl_wcst_free(other);
    mcl_wcst_free(longer);
}

/* The device's view (ops.def wcst_act, doc/smn.md "The episode on the device"): the cards
 * ahead are the cards dealt, and the rule's state with its draws, carried by wcst_act on the
 * reference backend over windows of 3 episodes, scores every card as the environment does and
 * ends each episode on the environment's next rule. Short episodes (4 cards), rules solved by
 * one perfect episode and switched 1..3 episodes later, an agent right 90 % of the time: many
 * solves and switches, a switch right after a solve among them. Can fail: a state whose rule
 * is off by one scores the first episode differently. */
static void test_device_view(void)
{
    printf("-- the cards ahead and the rule's state on the device (wcst_act)\n");
    mcl_wcst_cfg cfg;
    mcl_wcst_cfg_default(&cfg);
    cfg.seed = 77;
    cfg.episode_len = 4;
    cfg.solve_episodes = 1;
    cfg.switch_within = 3;
    cfg.reward_wrong = -0.5f;
    mcl_wcst *env = NULL;
    char err[256];
    mcl_ctx *ctx = NULL;
    if (!CHECK(mcl_wcst_create(&cfg, &env) == MCL_OK, "create")) return;
    if (!CHECK(mcl_ctx_create(&ctx, MCL_BACKEND_REF, NULL, err, sizeof err) == MCL_OK, "ref context: %s", err)) {
        mcl_wcst_free(env);
        return;
    }
    enum { L = 4, K = 3, NS = 5 + 2 * K };
    const int64_t ss = NS, sl[2] = {L, 4}, sc[2] = {L, 3}, s1 = L;
    mcl_tensor *st = mcl_tensor_create(ctx, 1, &ss), *lg = mcl_tensor_create(ctx, 2, sl);
    mcl_tensor *ct = mcl_tensor_create(ctx, 2, sc), *act = mcl_tensor_create(ctx, 1, &s1);
    mcl_tensor *rew = mcl_tensor_create(ctx, 1, &s1);
    mcl_rng pol;
    mcl_rng_init(&pol, SEED, 99);
    int bad_cards = 0, bad_rewards = 0, bad_rules = 0, switches = 0, quick = 0, caught = 0;
    float state[NS];
    CHECK(mcl_wcst_device_state(env, 2 * K, state) == MCL_OK, "state at the start");
    for (int w = 0; w < 60; w++) {
        int cards[K * L * 3];
        mcl_wcst_cards_ahead(env, K * L, cards);
        mcl_wcst_device_state(env, 2 * K, state);
        if (w == 0) state[0] = (float)((int)(state[0] + 1) % 3); /* the planted error */
        mcl_tensor_write(st, state, NS);
        for (int e = 0; e < K; e++) {
            float l[L * 4], cf[L * 3], a[L], r[L], sd[NS];
            int want[L], rule;
            mcl_wcst_peek(env, NULL, &rule, NULL, NULL);
            for (int c = 0; c < L; c++) {
                const int *cd = cards + (e * L + c) * 3;
                want[c] = mcl_rng_next_uniform(&pol) < 0.9f ? cd[rule] : (cd[rule] + 1) % 4;
                for (int k = 0; k < 4; k++) l[c * 4 + k] = k == want[c] ? 40.0f : 0.0f;
                for (int k = 0; k < 3; k++) cf[c * 3 + k] = (float)cd[k];
            }
            mcl_tensor_write(lg, l, L * 4);
            mcl_tensor_write(ct, cf, L * 3);
            mcl_status s = mcl_wcst_act(ctx, st, lg, ct, act, rew, 1, 2, 0, cfg.solve_episodes, cfg.reward_correct,
                                        cfg.reward_wrong);
            if (!CHECK(s == MCL_OK, "wcst_act: %s", mcl_ctx_error(ctx))) break;
            mcl_tensor_read(act, a, L);
            mcl_tensor_read(rew, r, L);
            for (int c = 0; c < L; c++) {
                int card[3];
                float rr;
                mcl_wcst_info info;
                mcl_wcst_peek(env, card, NULL, NULL, NULL);
                const int *cd = cards + (e * L + c) * 3;
                bad_cards += card[0] != cd[0] || card[1] != cd[1] || card[2] != cd[2];
                mcl_wcst_step(env, (int)a[c], &rr, NULL, &info);
                if (w > 0) bad_rewards += rr != r[c] || a[c] != (float)want[c];
                else caught += rr != r[c]; /* the planted error shows */
                switches += info.rule_switched;
                if (info.rule_switched && info.solved_now) quick++;
            }
            mcl_tensor_read(st, sd, NS);
            int rule_next;
            mcl_wcst_peek(env, NULL, &rule_next, NULL, NULL);
            if (w > 0) bad_rules += sd[0] != (float)rule_next;
        }
        mcl_ctx_reset(ctx);
    }
    printf("  %d switches (%d right after their solve), %d rules\n", switches, quick, mcl_wcst_num_tasks(env));
    CHECK(bad_cards == 0, "%d cards ahead differ from the cards dealt", bad_cards);
    CHECK(bad_rewards == 0, "%d actions or rewards of wcst_act differ from the environment's", bad_rewards);
    CHECK(bad_rules == 0, "%d episodes end on another rule than the environment's", bad_rules);
    CHECK(switches >= 20 && quick >= 1, "many switches (%d), one right after its solve (%d)", switches, quick);
    CHECK(caught > 0, "the planted off-by-one rule must change a reward");
    CHECK(mcl_wcst_device_state(NULL, 1, state) == MCL_ERR_NULL, "NULL environment refused");
    float r0;
    mcl_wcst_step(env, 0, &r0, NULL, NULL); /* inside an episode now */
    CHECK(mcl_wcst_device_state(env, 2, state) == MCL_ERR_STATE, "a state inside an episode refused");
    mcl_tensor_free(st);
    mcl_tensor_free(lg);
    mcl_tensor_free(ct);
    mcl_tensor_free(act);
    mcl_tensor_free(rew);
    mcl_ctx_free(ctx);
    mcl_wcst_free(env);
}

int main(void)
{
    tu_begin("test-wcst", SEED);
    test_cards();
    test_oracle();
    test_solve_rules();
    test_perseveration();
    test_determinism_feedback();
    test_snapshot();
    test_device_view();
    return tu_summary();
}
