/* wcst.c — the WCST environment (see wcst.h for the semantics).
 *
 * The paper's generator (App. C) in our terms:
 *   next_task():  old_task = current_task; current_task = randint(0, 2) redrawn while equal to
 *                 old_task  ->  rule = old + 1 + below(2) (mod 3): uniform over the other two
 *                 (the first rule: below(3)).
 *   next_card():  code_inds = random.sample(range(4), 3)  ->  a partial Fisher–Yates draw of
 *                 3 of the 4 values: colour, shape, number in that order;
 *                 target = code_inds[current_task]; target_perv = code_inds[old_task].
 * The solve / switch schedule is §4.1.1's text (the appendix does not show it): a rule is
 * solved by 3 consecutive error-free episodes of 16 cards; the switch happens at the start of
 * an episode drawn uniformly among the next 50.
 */
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "wcst.h"

struct mcl_wcst {
    mcl_wcst_cfg cfg;
    mcl_rng card_rng, rule_rng;
    int card[MCL_WCST_ATTRS]; /* current card */
    int rule, old_rule;
    int task;
    int64_t n_cards;   /* cards answered */
    int64_t episode;   /* current episode */
    int step;          /* position of the current card in its episode */
    int ep_perfect;    /* no error so far in the current episode */
    int streak;        /* consecutive perfect episodes of the current rule */
    int solved;
    int64_t switch_episode; /* episode at which the new rule starts, -1 none */
    int prev_action;
    float prev_reward;
    mcl_wcst_task_stats *tasks;
    int n_tasks, cap_tasks;
};

void mcl_wcst_cfg_default(mcl_wcst_cfg *cfg)
{
    if (!cfg) return;
    memset(cfg, 0, sizeof *cfg);
    cfg->seed = 0;
    cfg->episode_len = 16;
    cfg->solve_episodes = 3;
    cfg->switch_within = 50;
    cfg->reward_correct = 1.0f;
    cfg->reward_wrong = -1.0f;
    cfg->obs_feedback = 0;
}

void mcl_wcst_encode_card(const int card[MCL_WCST_ATTRS], float *obs12)
{
    for (int i = 0; i < MCL_WCST_CARD_DIM; i++) obs12[i] = 0.0f;
    for (int a = 0; a < MCL_WCST_ATTRS; a++) obs12[MCL_WCST_OBS_INDEX(a, card[a])] = 1.0f;
}

void mcl_wcst_reference_card(int k, float *obs12)
{
    int c[MCL_WCST_ATTRS] = {k, k, k};
    mcl_wcst_encode_card(c, obs12);
}

static void draw_card(mcl_wcst *env)
{
    int v[MCL_WCST_VALUES] = {0, 1, 2, 3};
    for (int a = 0; a < MCL_WCST_ATTRS; a++) {
        int j = a + (int)mcl_rng_next_below(&env->card_rng, (uint32_t)(MCL_WCST_VALUES - a));
        int t = v[a];
        v[a] = v[j];
        v[j] = t;
        env->card[a] = v[a];
    }
}

/* Room for one more task record (called before any state changes, so a failure leaves the
 * environment as it was). */
static mcl_status reserve_task(mcl_wcst *env)
{
    if (env->n_tasks < env->cap_tasks) return MCL_OK;
    if (env->cap_tasks > (1 << 29)) return MCL_ERR_OOM;
    int cap = env->cap_tasks ? env->cap_tasks * 2 : 16;
    mcl_wcst_task_stats *t = realloc(env->tasks, (size_t)cap * sizeof *t);
    if (!t) return MCL_ERR_OOM;
    env->tasks = t;
    env->cap_tasks = cap;
    return MCL_OK;
}

static void begin_task(mcl_wcst *env)
{
    mcl_wcst_task_stats *ts = &env->tasks[env->n_tasks++];
    memset(ts, 0, sizeof *ts);
    ts->rule = env->rule;
    ts->old_rule = env->old_rule;
    ts->start_card = env->n_cards;
    ts->start_episode = env->episode;
    ts->cards_to_solve = -1;
    ts->episodes_to_solve = -1;
    env->task = env->n_tasks - 1;
    env->streak = 0;
    env->solved = 0;
    env->switch_episode = -1;
}

static void write_obs(const mcl_wcst *env, float *obs)
{
    if (!obs) return;
    mcl_wcst_encode_card(env->card, obs);
    if (env->cfg.obs_feedback) {
        for (int k = 0; k < MCL_WCST_ACTIONS; k++)
            obs[MCL_WCST_CARD_DIM + k] = env->prev_action == k ? 1.0f : 0.0f;
        obs[MCL_WCST_CARD_DIM + MCL_WCST_ACTIONS] = env->prev_reward;
    }
}

mcl_status mcl_wcst_create(const mcl_wcst_cfg *cfg, mcl_wcst **out)
{
    if (!out) return MCL_ERR_NULL;
    *out = NULL;
    if (!cfg) return MCL_ERR_NULL;
    if (cfg->episode_len < 1 || cfg->solve_episodes < 1 || cfg->switch_within < 1 ||
        (cfg->obs_feedback != 0 && cfg->obs_feedback != 1))
        return MCL_ERR_INVALID;
    mcl_wcst *env = calloc(1, sizeof *env);
    if (!env) return MCL_ERR_OOM;
    env->cfg = *cfg;
    mcl_status s = mcl_wcst_reset(env, NULL);
    if (s != MCL_OK) {
        mcl_wcst_free(env);
        return s;
    }
    *out = env;
    return MCL_OK;
}

void mcl_wcst_free(mcl_wcst *env)
{
    if (!env) return;
    free(env->tasks);
    free(env);
}

int mcl_wcst_obs_dim(const mcl_wcst *env)
{
    if (!env) return 0;
    return MCL_WCST_CARD_DIM + (env->cfg.obs_feedback ? MCL_WCST_FEEDBACK_DIM : 0);
}

mcl_status mcl_wcst_reset(mcl_wcst *env, float *obs)
{
    if (!env) return MCL_ERR_NULL;
    mcl_rng_init(&env->card_rng, env->cfg.seed, MCL_WCST_STREAM_CARDS);
    mcl_rng_init(&env->rule_rng, env->cfg.seed, MCL_WCST_STREAM_RULES);
    env->n_tasks = 0;
    env->n_cards = 0;
    env->episode = 0;
    env->step = 0;
    env->ep_perfect = 1;
    env->prev_action = -1;
    env->prev_reward = 0.0f;
    env->old_rule = -1;
    mcl_status s = reserve_task(env);
    if (s != MCL_OK) return s;
    env->rule = (int)mcl_rng_next_below(&env->rule_rng, MCL_WCST_ATTRS);
    begin_task(env);
    draw_card(env);
    write_obs(env, obs);
    return MCL_OK;
}

mcl_status mcl_wcst_step(mcl_wcst *env, int action, float *reward, float *next_obs,
                         mcl_wcst_info *info)
{
    if (!env) return MCL_ERR_NULL;
    if (action < 0 || action >= MCL_WCST_ACTIONS) return MCL_ERR_INVALID;
    mcl_status s = reserve_task(env);
    if (s != MCL_OK) return s;
    mcl_wcst_info in;
    memset(&in, 0, sizeof in);
    for (int a = 0; a < MCL_WCST_ATTRS; a++) in.card[a] = env->card[a];
    in.rule = env->rule;
    in.old_rule = env->old_rule;
    in.target = env->card[env->rule];
    in.target_old = env->old_rule >= 0 ? env->card[env->old_rule] : -1;
    in.correct = action == in.target;
    in.persev_error = in.target_old >= 0 && action == in.target_old;
    in.task = env->task;
    in.card_index = env->n_cards;
    in.episode = env->episode;
    in.step = env->step;
    float r = in.correct ? env->cfg.reward_correct : env->cfg.reward_wrong;

    mcl_wcst_task_stats *ts = &env->tasks[env->task];
    ts->cards++;
    if (!in.correct) {
        ts->errors++;
        env->ep_perfect = 0;
    }
    if (in.persev_error) ts->persev_errors++;
    env->n_cards++;
    env->prev_action = action;
    env->prev_reward = r;

    env->step++;
    if (env->step == env->cfg.episode_len) { /* end of the episode */
        in.episode_end = 1;
        env->streak = env->ep_perfect ? env->streak + 1 : 0;
        if (!env->solved && env->streak >= env->cfg.solve_episodes) {
            env->solved = 1;
            in.solved_now = 1;
            ts->cards_to_solve = env->n_cards - ts->start_card;
            ts->episodes_to_solve = env->episode + 1 - ts->start_episode;
            env->switch_episode =
                env->episode + 1 +
                (int64_t)mcl_rng_next_below(&env->rule_rng, (uint32_t)env->cfg.switch_within);
        }
        env->episode++;
        env->step = 0;
        env->ep_perfect = 1;
        if (env->solved && env->episode == env->switch_episode) {
            env->old_rule = env->rule;
            env->rule = (env->rule + 1 + (int)mcl_rng_next_below(&env->rule_rng, 2)) % MCL_WCST_ATTRS;
            begin_task(env);
            in.rule_switched = 1;
        }
    }
    draw_card(env);
    if (reward) *reward = r;
    write_obs(env, next_obs);
    if (info) *info = in;
    return MCL_OK;
}

void mcl_wcst_peek(const mcl_wcst *env, int card[MCL_WCST_ATTRS], int *rule, int *old_rule,
                   int *solved)
{
    if (!env) return;
    if (card)
        for (int a = 0; a < MCL_WCST_ATTRS; a++) card[a] = env->card[a];
    if (rule) *rule = env->rule;
    if (old_rule) *old_rule = env->old_rule;
    if (solved) *solved = env->solved;
}

int mcl_wcst_num_tasks(const mcl_wcst *env) { return env ? env->n_tasks : 0; }

const mcl_wcst_task_stats *mcl_wcst_task(const mcl_wcst *env, int i)
{
    if (!env || i < 0 || i >= env->n_tasks) return NULL;
    return &env->tasks[i];
}
