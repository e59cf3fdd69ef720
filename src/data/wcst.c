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
#include <limits.h>
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

/* Most task records the environment holds (the capacity doubles up to this). */
#define MAX_TASKS (1 << 30)

/* Room for `need` task records (called before any state changes, so a failure leaves the
 * environment as it was: only the capacity grows). */
static mcl_status reserve_tasks(mcl_wcst *env, int64_t need)
{
    if (need <= env->cap_tasks) return MCL_OK;
    if (need > MAX_TASKS) return MCL_ERR_OOM;
    int cap = env->cap_tasks ? env->cap_tasks : 16;
    while (cap < need) cap *= 2;
    mcl_wcst_task_stats *t = realloc(env->tasks, (size_t)cap * sizeof *t);
    if (!t) return MCL_ERR_OOM;
    env->tasks = t;
    env->cap_tasks = cap;
    return MCL_OK;
}

/* Room for one more task record. */
static mcl_status reserve_task(mcl_wcst *env)
{
    return reserve_tasks(env, (int64_t)env->n_tasks + 1);
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

/* Snapshot layout (format 1), all int64:
 *   [0] SNAP_TAG
 *   [1..7] the config: seed (bits), episode_len, solve_episodes, switch_within,
 *          reward_correct and reward_wrong (float bits), obs_feedback
 *   [8..13] card_rng seed, stream, index; rule_rng seed, stream, index (bits)
 *   [14..16] the current card; [17] rule, [18] old_rule, [19] task, [20] n_cards,
 *   [21] episode, [22] step, [23] ep_perfect, [24] streak, [25] solved, [26] switch_episode,
 *   [27] prev_action, [28] prev_reward (float bits), [29] n_tasks
 *   then SNAP_TASK values per task: rule, old_rule, start_card, start_episode, cards, errors,
 *   persev_errors, cards_to_solve, episodes_to_solve. */
#define SNAP_TAG ((int64_t)0x5743535453000001LL) /* "WCSTS", format 1 */
#define SNAP_HEAD 30
#define SNAP_TASK 9

static int64_t u64_bits(uint64_t u)
{
    int64_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static uint64_t bits_u64(int64_t v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static int64_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (int64_t)u;
}

static float bits_f32(int64_t v)
{
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void snap_cfg(const mcl_wcst_cfg *cfg, int64_t *h)
{
    h[0] = u64_bits(cfg->seed);
    h[1] = cfg->episode_len;
    h[2] = cfg->solve_episodes;
    h[3] = cfg->switch_within;
    h[4] = f32_bits(cfg->reward_correct);
    h[5] = f32_bits(cfg->reward_wrong);
    h[6] = cfg->obs_feedback;
}

int64_t mcl_wcst_snapshot(const mcl_wcst *env, int64_t *buf, int64_t cap)
{
    if (!env) return 0;
    int64_t need = SNAP_HEAD + (int64_t)SNAP_TASK * env->n_tasks;
    if (!buf || cap <= 0) return need;
    int64_t h[SNAP_HEAD];
    h[0] = SNAP_TAG;
    snap_cfg(&env->cfg, h + 1);
    h[8] = u64_bits(env->card_rng.seed);
    h[9] = u64_bits(env->card_rng.stream);
    h[10] = u64_bits(env->card_rng.index);
    h[11] = u64_bits(env->rule_rng.seed);
    h[12] = u64_bits(env->rule_rng.stream);
    h[13] = u64_bits(env->rule_rng.index);
    for (int a = 0; a < MCL_WCST_ATTRS; a++) h[14 + a] = env->card[a];
    h[17] = env->rule;
    h[18] = env->old_rule;
    h[19] = env->task;
    h[20] = env->n_cards;
    h[21] = env->episode;
    h[22] = env->step;
    h[23] = env->ep_perfect;
    h[24] = env->streak;
    h[25] = env->solved;
    h[26] = env->switch_episode;
    h[27] = env->prev_action;
    h[28] = f32_bits(env->prev_reward);
    h[29] = env->n_tasks;
    int64_t k = 0;
    for (; k < SNAP_HEAD && k < cap; k++) buf[k] = h[k];
    for (int t = 0; t < env->n_tasks && k < cap; t++) {
        const mcl_wcst_task_stats *ts = &env->tasks[t];
        const int64_t v[SNAP_TASK] = {ts->rule,          ts->old_rule, ts->start_card,
                                      ts->start_episode, ts->cards,    ts->errors,
                                      ts->persev_errors, ts->cards_to_solve,
                                      ts->episodes_to_solve};
        for (int j = 0; j < SNAP_TASK && k < cap; j++) buf[k++] = v[j];
    }
    return need;
}

/* 1 when the task records of a snapshot are consistent with each other and with the
 * header's card count. */
static int snap_tasks_ok(const int64_t *p, int64_t n_tasks, int64_t n_cards,
                         const mcl_wcst_cfg *cfg)
{
    int64_t ep_len = cfg->episode_len, next_start = 0;
    for (int64_t t = 0; t < n_tasks; t++, p += SNAP_TASK) {
        int64_t rule = p[0], old = p[1], start = p[2], start_ep = p[3], cards = p[4];
        int64_t errors = p[5], persev = p[6], c_solve = p[7], e_solve = p[8];
        if (rule < 0 || rule >= MCL_WCST_ATTRS) return 0;
        if (t == 0 ? old != -1 : (old != p[-SNAP_TASK] || old == rule)) return 0;
        /* a task starts at an episode boundary where the previous one ended */
        if (start != next_start || start_ep < 0 || start_ep > start / ep_len ||
            start != start_ep * ep_len)
            return 0;
        if (cards < 0 || cards > n_cards - start) return 0;
        if (errors < 0 || errors > cards || persev < 0 || persev > errors) return 0;
        if (old < 0 && persev != 0) return 0;
        /* solved at an episode end, after at least solve_episodes episodes */
        if (c_solve == -1 ? e_solve != -1
                          : (c_solve < 1 || c_solve > cards || e_solve < cfg->solve_episodes ||
                             e_solve > c_solve / ep_len || c_solve != e_solve * ep_len))
            return 0;
        if (t + 1 < n_tasks && c_solve == -1) return 0; /* only a solved rule switches */
        next_start = start + cards;
    }
    return next_start == n_cards;
}

mcl_status mcl_wcst_restore(mcl_wcst *env, const int64_t *buf, int64_t n)
{
    if (!env || !buf) return MCL_ERR_NULL;
    if (n < SNAP_HEAD || buf[0] != SNAP_TAG) return MCL_ERR_FORMAT;
    const int64_t *h = buf;
    /* the config */
    int64_t c[7];
    snap_cfg(&env->cfg, c);
    for (int i = 0; i < 7; i++)
        if (h[1 + i] != c[i]) return MCL_ERR_FORMAT;
    /* the length, from the task count (bounded by the data before any multiplication) */
    int64_t n_tasks = h[29];
    if (n_tasks < 1 || n_tasks > (n - SNAP_HEAD) / SNAP_TASK || n_tasks > MAX_TASKS ||
        n != SNAP_HEAD + SNAP_TASK * n_tasks)
        return MCL_ERR_FORMAT;
    /* the random streams: this seed, the environment's streams */
    int64_t n_cards = h[20], episode = h[21], step = h[22];
    int64_t ep_len = env->cfg.episode_len;
    if (bits_u64(h[8]) != env->cfg.seed || bits_u64(h[9]) != MCL_WCST_STREAM_CARDS ||
        bits_u64(h[11]) != env->cfg.seed || bits_u64(h[12]) != MCL_WCST_STREAM_RULES)
        return MCL_ERR_FORMAT;
    /* counters: every card takes >= 3 card draws (the current one included), every rule >= 1
     * rule draw */
    if (n_cards < 0 || n_cards > (INT64_MAX / 3) - 1 || h[10] < 3 * (n_cards + 1) ||
        h[13] < n_tasks)
        return MCL_ERR_FORMAT;
    /* the card: three distinct values */
    for (int a = 0; a < MCL_WCST_ATTRS; a++) {
        if (h[14 + a] < 0 || h[14 + a] >= MCL_WCST_VALUES) return MCL_ERR_FORMAT;
        for (int b = 0; b < a; b++)
            if (h[14 + a] == h[14 + b]) return MCL_ERR_FORMAT;
    }
    /* the rule period: the last task's */
    const int64_t *last = h + SNAP_HEAD + SNAP_TASK * (n_tasks - 1);
    int64_t rule = h[17], old_rule = h[18];
    if (rule < 0 || rule >= MCL_WCST_ATTRS || old_rule < -1 || old_rule >= MCL_WCST_ATTRS ||
        rule == old_rule || h[19] != n_tasks - 1 || rule != last[0] || old_rule != last[1])
        return MCL_ERR_FORMAT;
    /* position: episodes run on, n_cards = episode * episode_len + step */
    if (episode < 0 || step < 0 || step >= ep_len || episode > n_cards / ep_len ||
        n_cards != episode * ep_len + step)
        return MCL_ERR_FORMAT;
    /* episode flags, streak (at most the rule's finished episodes; it runs on after the
     * solve, and an error episode resets it without unsolving) and the switch schedule (the
     * switch is 1..switch_within-1 episodes ahead while it is pending: a delay of 0 switches at
     * once) */
    int64_t ep_perfect = h[23], streak = h[24], solved = h[25], switch_ep = h[26];
    if ((ep_perfect != 0 && ep_perfect != 1) || (step == 0 && ep_perfect != 1) || streak < 0 ||
        streak > episode - last[3] || streak > INT_MAX || (solved != 0 && solved != 1))
        return MCL_ERR_FORMAT;
    if (solved ? (last[7] == -1 || switch_ep <= episode ||
                  switch_ep - episode >= env->cfg.switch_within)
               : (last[7] != -1 || streak >= env->cfg.solve_episodes || switch_ep != -1))
        return MCL_ERR_FORMAT;
    /* feedback: none before the first card, else one of the configured rewards */
    int64_t prev_action = h[27], prev_reward = h[28];
    if (prev_action < -1 || prev_action >= MCL_WCST_ACTIONS || (prev_action == -1) != (n_cards == 0))
        return MCL_ERR_FORMAT;
    if (prev_action == -1 ? prev_reward != f32_bits(0.0f)
                          : (prev_reward != c[4] && prev_reward != c[5]))
        return MCL_ERR_FORMAT;
    if (!snap_tasks_ok(h + SNAP_HEAD, n_tasks, n_cards, &env->cfg)) return MCL_ERR_FORMAT;

    /* valid: make room (only the capacity changes on failure), then copy */
    mcl_status s = reserve_tasks(env, n_tasks);
    if (s != MCL_OK) return s;
    env->card_rng.seed = bits_u64(h[8]);
    env->card_rng.stream = bits_u64(h[9]);
    env->card_rng.index = bits_u64(h[10]);
    env->rule_rng.seed = bits_u64(h[11]);
    env->rule_rng.stream = bits_u64(h[12]);
    env->rule_rng.index = bits_u64(h[13]);
    for (int a = 0; a < MCL_WCST_ATTRS; a++) env->card[a] = (int)h[14 + a];
    env->rule = (int)rule;
    env->old_rule = (int)old_rule;
    env->task = (int)h[19];
    env->n_cards = n_cards;
    env->episode = episode;
    env->step = (int)step;
    env->ep_perfect = (int)ep_perfect;
    env->streak = (int)streak;
    env->solved = (int)solved;
    env->switch_episode = switch_ep;
    env->prev_action = (int)prev_action;
    env->prev_reward = bits_f32(prev_reward);
    env->n_tasks = (int)n_tasks;
    const int64_t *p = h + SNAP_HEAD;
    for (int64_t t = 0; t < n_tasks; t++, p += SNAP_TASK) {
        mcl_wcst_task_stats *ts = &env->tasks[t];
        memset(ts, 0, sizeof *ts);
        ts->rule = (int)p[0];
        ts->old_rule = (int)p[1];
        ts->start_card = p[2];
        ts->start_episode = p[3];
        ts->cards = p[4];
        ts->errors = p[5];
        ts->persev_errors = p[6];
        ts->cards_to_solve = p[7];
        ts->episodes_to_solve = p[8];
    }
    return MCL_OK;
}

void mcl_wcst_cards_ahead(const mcl_wcst *env, int64_t n, int *cards)
{
    if (!env || !cards || n < 1) return;
    mcl_wcst tmp = *env; /* the card stream only: a counter-based generator, copied by value */
    for (int64_t i = 0; i < n; i++) {
        if (i > 0) draw_card(&tmp);
        for (int a = 0; a < MCL_WCST_ATTRS; a++) cards[i * MCL_WCST_ATTRS + a] = tmp.card[a];
    }
}

mcl_status mcl_wcst_device_state(const mcl_wcst *env, int n_draws, float *state)
{
    if (!env || !state) return MCL_ERR_NULL;
    if (env->step != 0 || n_draws < 0) return MCL_ERR_STATE;
    state[0] = (float)env->rule;
    state[1] = (float)env->streak;
    state[2] = (float)env->solved;
    state[3] = env->solved ? (float)(env->switch_episode - env->episode) : 0.0f;
    state[4] = 0.0f;
    mcl_rng r = env->rule_rng;
    int offset = env->solved; /* a pending switch: its offset is the next draw */
    for (int i = 0; i < n_draws; i++, offset = !offset)
        state[5 + i] = (float)(offset ? mcl_rng_next_below(&r, 2)
                                      : mcl_rng_next_below(&r, (uint32_t)env->cfg.switch_within));
    return MCL_OK;
}
