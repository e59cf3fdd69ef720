/* wcst.h — the Wisconsin Card Sorting Test environment (Sparse-MetaNet §4.1.1, App. C;
 * the WCST task of the Sparse Meta Networks paper) (public API).
 *
 * Cards. A card has a colour, a shape and a number, each one of 4 values (0..3). As in the
 * paper's generator (`code_inds = random.sample(range(4), 3)`), the three values of a card are
 * drawn WITHOUT replacement: they are always three different values, every ordered triple of
 * distinct values equally likely (24 cards).
 * Reference cards. Card k (k = 0..3) has colour k, shape k and number k. Sorting a card = the
 * action k (put it under reference card k); under rule a (0 colour, 1 shape, 2 number) the
 * correct action is the card's value of attribute a. Because the card's values are distinct,
 * the answers of two different rules always differ.
 *
 * Observation (float, MCL_WCST_CARD_DIM = 12 entries, the paper's input): three one-hot
 * blocks, colour [0,4), shape [4,8), number [8,12), with the paper's code table
 * `inp_codes = [[0,0,0,1],[0,0,1,0],[0,1,0,0],[1,0,0,0]]`: value v of attribute a sets entry
 * MCL_WCST_OBS_INDEX(a, v) = 4a + 3 - v. With cfg.obs_feedback = 1 (our addition, for
 * agents without gradient-based fast weights) 5 entries follow: the one-hot previous action
 * [12,16) and the previous reward [16] (all 0 before the first step).
 *
 * Episodes and rules. An episode is 16 cards. The rule is hidden. A rule is SOLVED when the
 * agent sorts 3 consecutive episodes (48 cards) without an error; then the rule switches to a
 * different random rule at the start of the d-th episode after the solving one, d uniform in
 * 1..50 ("we then switch to a new random rule in one of the next 50 episodes"). Between the
 * solving episode and the switch the old rule stays in force (more perfect episodes change
 * nothing). Rewards: +1 for a correct sort, -1 for a wrong one (the paper does not give the
 * values; configurable).
 * Perseveration: the target of the previous rule for the same card (`target_perv` in the
 * paper's code; -1 during the first rule). An error is a perseveration error when the action
 * equals that target.
 *
 * Randomness: cards come from Philox stream (seed, MCL_WCST_STREAM_CARDS), card n from the
 * n-th draws of that stream, so the card sequence does not depend on the agent; rules and
 * switch delays from (seed, MCL_WCST_STREAM_RULES). mcl_wcst_reset() restarts both.
 */
#ifndef MCL_WCST_H
#define MCL_WCST_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_WCST_ATTRS 3
#define MCL_WCST_VALUES 4
#define MCL_WCST_ACTIONS 4
#define MCL_WCST_CARD_DIM 12
#define MCL_WCST_FEEDBACK_DIM 5
#define MCL_WCST_OBS_INDEX(a, v) (4 * (a) + 3 - (v))
#define MCL_WCST_STREAM_CARDS 0x5743535443415244ULL /* "WCSTCARD" */
#define MCL_WCST_STREAM_RULES 0x5743535452554c45ULL /* "WCSTRULE" */

enum { MCL_WCST_COLOUR = 0, MCL_WCST_SHAPE = 1, MCL_WCST_NUMBER = 2 };

typedef struct mcl_wcst_cfg {
    uint64_t seed;
    int episode_len;      /* cards per episode (paper: 16)                         */
    int solve_episodes;   /* consecutive perfect episodes that solve a rule (3)     */
    int switch_within;    /* the switch comes 1..switch_within episodes later (50)  */
    float reward_correct; /* +1                                                     */
    float reward_wrong;   /* -1                                                     */
    int obs_feedback;     /* 0: observation = card (paper); 1: + previous action and reward */
} mcl_wcst_cfg;

/* The paper's settings (seed 0). */
void mcl_wcst_cfg_default(mcl_wcst_cfg *cfg);

/* What happened at one step (the card just answered). */
typedef struct mcl_wcst_info {
    int card[MCL_WCST_ATTRS]; /* colour, shape, number of the answered card            */
    int rule;                 /* rule in force for it                                    */
    int old_rule;             /* the previous rule, -1 during the first rule            */
    int target;               /* correct action = card[rule]                             */
    int target_old;           /* card[old_rule] (perseveration target), -1 if none      */
    int correct;
    int persev_error;         /* action == target_old (so wrong)                         */
    int task;                 /* index of the rule period, 0, 1, ...                     */
    int64_t card_index;       /* cards answered before this one                          */
    int64_t episode;          /* episode of this card                                    */
    int step;                 /* position in the episode, 0..episode_len-1               */
    int episode_end;          /* this card was the last of its episode                   */
    int solved_now;           /* this card completed the solving streak                  */
    int rule_switched;        /* the next card is under a new rule                       */
} mcl_wcst_info;

/* Per rule period (task). */
typedef struct mcl_wcst_task_stats {
    int rule, old_rule;
    int64_t start_card, start_episode;
    int64_t cards;             /* cards answered under this rule                         */
    int64_t errors;
    int64_t persev_errors;     /* errors that followed the previous rule                 */
    int64_t cards_to_solve;    /* cards from the rule's start to the solve, -1 if unsolved */
    int64_t episodes_to_solve; /* episodes likewise, -1 if unsolved                       */
} mcl_wcst_task_stats;

typedef struct mcl_wcst mcl_wcst;

mcl_status mcl_wcst_create(const mcl_wcst_cfg *cfg, mcl_wcst **out);
void mcl_wcst_free(mcl_wcst *env);

/* Observation size: 12, or 17 with obs_feedback. */
int mcl_wcst_obs_dim(const mcl_wcst *env);

/* Restart from the seed (same cards, same rules for the same actions); writes the first
 * observation (obs_dim floats) when obs is not NULL. */
mcl_status mcl_wcst_reset(mcl_wcst *env, float *obs);

/* Sort the current card into pile `action` (0..3). Writes the reward, the next observation
 * (when next_obs is not NULL) and info (when not NULL). Episodes run on without reset. */
mcl_status mcl_wcst_step(mcl_wcst *env, int action, float *reward, float *next_obs,
                         mcl_wcst_info *info);

/* Hidden state, for evaluation and tests: the current card's values, the current rule, the
 * previous rule (-1), and whether the current rule is solved (switch pending). */
void mcl_wcst_peek(const mcl_wcst *env, int card[MCL_WCST_ATTRS], int *rule, int *old_rule,
                   int *solved);

/* Rule periods so far (the current one included) and their statistics. */
int mcl_wcst_num_tasks(const mcl_wcst *env);
const mcl_wcst_task_stats *mcl_wcst_task(const mcl_wcst *env, int i);

/* Checkpoints. The whole state as integers: the card and rule random streams (seed, stream,
 * index), the current card, rules, task, card / episode / step counters, the solve streak
 * and pending switch, the feedback (the previous reward as its float bits) and every task's
 * statistics, so that an environment restored from it continues exactly as the original
 * would (same cards, rules, switch delays, streaks and statistics for the same actions).
 * The layout is private but versioned: the first value is a format tag.
 * mcl_wcst_snapshot writes the first min(cap, needed) values into buf and returns the number
 * needed (cap 0 / buf NULL: only sizes it; 0 for a NULL env). The config is recorded in the
 * snapshot but is not restored from it.
 * mcl_wcst_restore loads a snapshot of n values taken from an environment with the same
 * config. It checks everything first and leaves env unchanged on any error: a snapshot of
 * another format or length, from another config (seed, episode_len, solve_episodes,
 * switch_within, rewards, obs_feedback), with values out of range (a rule not 0..2, negative
 * counters, a task count beyond the data, ...) or inconsistent with each other ->
 * MCL_ERR_FORMAT; NULL env or buf -> MCL_ERR_NULL; no memory for the task records ->
 * MCL_ERR_OOM. */
int64_t mcl_wcst_snapshot(const mcl_wcst *env, int64_t *buf, int64_t cap);
mcl_status mcl_wcst_restore(mcl_wcst *env, const int64_t *buf, int64_t n);

/* The cards of the next n steps, in order, the current card first (cards[3n]: colour, shape,
 * number of each): the cards do not depend on the actions (their stream is drawn once per
 * card), so they are known before the agent acts. The environment is not changed. */
void mcl_wcst_cards_ahead(const mcl_wcst *env, int64_t n, int *cards);

/* The rule's state at the start of the current episode as the device's episodes take it
 * (ops.def wcst_act): state[0] rule, [1] streak, [2] solved, [3] countdown (episodes to the
 * pending switch, else 0), [4] 0 (the next draw), then the next n_draws draws of the rule
 * stream in the order the environment will make them (the switch delay at a solve, the new
 * rule's offset 0/1 at the switch; a pending switch's offset first): 5 + n_draws floats. Two
 * draws per episode are enough for any number of episodes. The environment is not changed.
 * MCL_ERR_STATE when the environment is inside an episode; MCL_ERR_NULL for NULLs. */
mcl_status mcl_wcst_device_state(const mcl_wcst *env, int n_draws, float *state);

/* The 12-entry code of a card (values in 0..3), and of reference card k. */
void mcl_wcst_encode_card(const int card[MCL_WCST_ATTRS], float *obs12);
void mcl_wcst_reference_card(int k, float *obs12);

#ifdef __cplusplus
}
#endif
#endif
