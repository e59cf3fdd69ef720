/* render.c — draw a stroke glyph as a handwritten 32×32 image (doc/data.md, "Rendering strokes
 * as handwriting").
 *
 * Pipeline, in pixel units with the origin at the canvas centre:
 *   1. normalize: the glyph's box (over all stroke points) is centred and scaled so that its
 *      longer side is 0.8 × 32 = 25.6 px;
 *   2. every stroke is walked densely (each polyline segment cut into pieces of <= 1.5 px,
 *      the original vertices kept, so corners stay sharp); with t the arc-length position in
 *      the stroke (0 at the start, 1 at the end) every point moves by
 *        - endpoint jitter (1-t)·J(start) + t·J(end)  (this also shifts the whole stroke),
 *        - a gentle bow n·B(mid)·L·sin(πt), n ⟂ the chord (sign fixed by geometry), L the
 *          chord length, mid the chord's midpoint;
 *      J (vector, σ ≈ 0.7 px, wavelengths 6..14 px), B (scalar, σ ≈ 0.06) and the pen factor
 *      W (σ ≈ 0.06) are smooth random fields, sums of a few random plane waves. Reading the
 *      per-stroke distortions from fields makes strokes far apart move independently while
 *      strokes drawn over one another move together. A stroke whose start, end and arc
 *      midpoint all lie within 3 px of an earlier stroke is a "pass" over it (Hershey's
 *      duplex/triplex/gothic fonts draw thick strokes as several passes): each of its points
 *      takes the distortion of the nearest point of that stroke and is pulled 60 % of the way
 *      to it, so a pass stays one (bolder) pen stroke instead of splitting into a double line;
 *   3. a smooth elastic warp: 3 plane waves (vector field, σ ≈ 0.55 px, wavelengths
 *      16..40 px), evaluated at each point;
 *   4. a global affine: rotation θ ~ N(0, 0.1 rad), shear ~ N(0, 0.12), scale U(0.85, 1.05)
 *      times an aspect factor 1 + N(0, 0.05), translation N(0, 0.8 px) per axis;
 *   4b. fit: a first pass maps all points without drawing; if the sample would put ink into
 *      the outermost pixel ring, it is scaled down (about its box centre) and/or shifted so
 *      that every centre line stays >= pen radius + 1 px inside: no sample is cut off;
 *   5. rasterize: each piece is a capsule of radius w/2, pen width w ~ U(1.3, 2.4) px at
 *      28 px (× 32/28), × (1 + W(mid)) per stroke, × max(0.7, sqrt(85 / ink)) for dense
 *      glyphs (ink = total stroke length in px) so they do not fill up; a pixel's coverage
 *      is clamp(w/2 + 0.5 − d, 0, 1) with d the distance of its centre to the piece (a 1-px
 *      anti-aliased edge); pieces combine by max; ink = round(255 · coverage) on 0.
 *   Only the pixels in each capsule's bounding box are visited.
 * clean = 1: steps 1 and 5 only (no fit needed: the box leaves 3.2 px), pen 1.85 px at 28 px.
 *
 * Randomness: Philox4x32-10 (rng.h), key = seed, stream = (uint32 class << 32) + instance
 * (mod 2^64). All parameters (affine, pen, the four fields) are drawn in a fixed order from
 * words 0, 1, 2, ... of that stream (word i is word i % 4 of Philox block i / 4, as in
 * mcl_rng_u32); per-stroke values come from the fields. Normal numbers are Irwin–Hall sums
 * of four uniforms (variance 1, bounded by ±3.46, so no sample is wildly distorted). Every
 * image therefore depends on (glyph, seed, class, instance) alone: not on call order,
 * threads or other samples.
 * Determinism across machines: only +, −, ×, /, sqrt, floor (IEEE, exactly rounded) are used;
 * sines come from the polynomial below, not libm. Build with -ffp-contract=off (configure
 * does) so that no FMA changes a bit.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rng.h"
#include "strokes.h"

#define N MCL_IMG
#define HALF (0.5f * (float)N)
#define BOX (0.8f * (float)N)   /* longer side of the normalized glyph box */
#define PX28 ((float)N / 28.0f) /* pen widths are given for a 28-px canvas */
#define STEP 1.5f               /* longest piece when walking a stroke (px) */
#define PI_F 3.14159265358979f

/* ---- random words ---------------------------------------------------------------------- */
typedef struct rd {
    uint32_t key[2], s0, s1;
    uint64_t blk;
    int pos;
    uint32_t w[4];
} rd;

static void rd_fill(rd *r)
{
    uint32_t ctr[4] = {(uint32_t)r->blk, (uint32_t)(r->blk >> 32), r->s0, r->s1};
    mcl_philox4x32_10(ctr, r->key, r->w);
}

static void rd_seek(rd *r, uint64_t word)
{
    r->blk = word >> 2;
    r->pos = (int)(word & 3u);
    rd_fill(r);
}

static uint32_t rd_u32(rd *r)
{
    if (r->pos == 4) {
        r->blk++;
        rd_fill(r);
        r->pos = 0;
    }
    return r->w[r->pos++];
}

static float rd_unif(rd *r)
{
    return mcl_u32_to_unit(rd_u32(r));
}

/* Irwin–Hall(4), scaled to unit variance: in [-3.46, 3.46]. */
static float rd_gauss(rd *r)
{
    float a = rd_unif(r), b = rd_unif(r), c = rd_unif(r), d = rd_unif(r);
    return ((a + b) + (c + d) - 2.0f) * 1.7320508f;
}

/* ---- sine without libm: reduce to [-π/2, π/2], odd Taylor polynomial to x^9 (|err| < 4e-6) */
static float fsin(float x)
{
    if (!(x > -1.0e4f && x < 1.0e4f)) return 0.0f;
    float k = floorf(x * 0.159154943f + 0.5f);
    x = (x - k * 6.28125f) - k * 1.93530717958e-3f; /* 2π split in two for accuracy */
    if (x > 1.57079633f)
        x = PI_F - x;
    else if (x < -1.57079633f)
        x = -PI_F - x;
    float x2 = x * x;
    float p = 2.7557319e-6f;
    p = p * x2 - 1.98412698e-4f;
    p = p * x2 + 8.33333333e-3f;
    p = p * x2 - 1.66666667e-1f;
    p = p * x2 + 1.0f;
    return x * p;
}

static float fcos(float x)
{
    return fsin(x + 1.57079633f);
}

/* ---- rasterization ---------------------------------------------------------------------- */
/* Max-blend the coverage of the capsule (a, b, radius r) into cov. Pixel (i, j) has its
 * centre at (i + 0.5, j + 0.5). */
static void capsule(float *cov, float ax, float ay, float bx, float by, float r)
{
    const float lim = 1.0e3f;
    if (!(ax > -lim && ax < lim && ay > -lim && ay < lim && bx > -lim && bx < lim && by > -lim &&
          by < lim))
        return;
    float rout = r + 0.5f, rout2 = rout * rout;
    float rin = r - 0.5f, rin2 = rin > 0.0f ? rin * rin : -1.0f;
    float lox = (ax < bx ? ax : bx) - rout, hix = (ax < bx ? bx : ax) + rout;
    float loy = (ay < by ? ay : by) - rout, hiy = (ay < by ? by : ay) + rout;
    int x0 = (int)floorf(lox - 0.5f) + 1, x1 = (int)floorf(hix - 0.5f);
    int y0 = (int)floorf(loy - 0.5f) + 1, y1 = (int)floorf(hiy - 0.5f);
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > N - 1) x1 = N - 1;
    if (y1 > N - 1) y1 = N - 1;
    float dx = bx - ax, dy = by - ay, l2 = dx * dx + dy * dy;
    float inv = l2 > 1e-12f ? 1.0f / l2 : 0.0f;
    for (int j = y0; j <= y1; j++) {
        float py = ((float)j + 0.5f) - ay;
        float *row = cov + j * N;
        for (int i = x0; i <= x1; i++) {
            float px = ((float)i + 0.5f) - ax;
            float t = (px * dx + py * dy) * inv;
            t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
            float ex = px - t * dx, ey = py - t * dy;
            float d2 = ex * ex + ey * ey;
            if (d2 >= rout2) continue;
            float c = d2 <= rin2 ? 1.0f : rout - sqrtf(d2);
            if (c > 1.0f) c = 1.0f;
            if (c > row[i]) row[i] = c;
        }
    }
}

/* ---- distortion parameters ---------------------------------------------------------------- */
#define MAX_WAVES 4

/* A smooth random field: v(p) = sum_m a_m sin(k_m . p + phi_m) (vector: a_m = (ax, ay)). */
typedef struct field {
    int n;
    float kx[MAX_WAVES], ky[MAX_WAVES], ph[MAX_WAVES], ax[MAX_WAVES], ay[MAX_WAVES];
} field;

/* n waves, wavelengths U(lmin, lmax) px, uniform directions and phases, amplitudes
 * N(0, sigma^2 * 2/n) per component, so that each component has standard deviation ~sigma. */
static void field_draw(rd *r, field *f, int n, float lmin, float lmax, float sigma, int vec)
{
    float amp = sigma * sqrtf(2.0f / (float)n);
    f->n = n;
    for (int m = 0; m < n; m++) {
        float alpha = 2.0f * PI_F * rd_unif(r);
        float k = 2.0f * PI_F / (lmin + (lmax - lmin) * rd_unif(r));
        f->kx[m] = k * fcos(alpha);
        f->ky[m] = k * fsin(alpha);
        f->ph[m] = 2.0f * PI_F * rd_unif(r);
        f->ax[m] = amp * rd_gauss(r);
        f->ay[m] = vec ? amp * rd_gauss(r) : 0.0f;
    }
}

static void field_eval(const field *f, float x, float y, float *vx, float *vy)
{
    float sx = 0.0f, sy = 0.0f;
    for (int m = 0; m < f->n; m++) {
        float sn = fsin(f->kx[m] * x + f->ky[m] * y + f->ph[m]);
        sx += f->ax[m] * sn;
        sy += f->ay[m] * sn;
    }
    *vx = sx;
    *vy = sy;
}

typedef struct xform {
    float m00, m01, m10, m11, tx, ty; /* affine (linear part and translation, px) */
    field warp;                       /* elastic warp (vector, applied to every point) */
    field jit;                        /* stroke endpoint jitter (vector, at the endpoints) */
    field bow;                        /* stroke bow (scalar, at the chord midpoint)      */
    field pen;                        /* stroke pen-width factor (scalar, at the midpoint) */
    float width;                      /* pen width (px) */
} xform;

/* All parameters, drawn in this order from words 0, 1, 2, ... of the stream.
 * ink: total stroke length (px). */
static void draw_params(rd *r, float ink, xform *x)
{
    rd_seek(r, 0);
    float th = 0.10f * rd_gauss(r);
    float shear = 0.12f * rd_gauss(r);
    float sc = 0.85f + 0.20f * rd_unif(r);
    float asp = 1.0f + 0.05f * rd_gauss(r);
    float tx = 0.8f * rd_gauss(r), ty = 0.8f * rd_gauss(r);
    x->width = (1.3f + 1.1f * rd_unif(r)) * PX28;
    field_draw(r, &x->warp, 3, 16.0f, 40.0f, 0.55f, 1);
    field_draw(r, &x->jit, 4, 6.0f, 14.0f, 0.7f, 1);
    field_draw(r, &x->bow, 3, 8.0f, 24.0f, 0.06f, 0);
    field_draw(r, &x->pen, 2, 10.0f, 30.0f, 0.06f, 0);
    /* dense glyphs get a somewhat thinner pen, so that they do not fill up */
    if (ink > 85.0f) {
        float f = sqrtf(85.0f / ink);
        x->width *= f > 0.7f ? f : 0.7f;
    }
    /* M = R(th) . [[1, shear], [0, 1]] . diag(sc.asp, sc/asp) */
    float c = fcos(th), s = fsin(th);
    float sx = sc * asp, sy = sc / asp;
    x->m00 = c * sx;
    x->m01 = c * shear * sy - s * sy;
    x->m10 = s * sx;
    x->m11 = s * shear * sy + c * sy;
    x->tx = tx;
    x->ty = ty;
}

/* ---- the renderer -------------------------------------------------------------------------- */
#define MAX_TRACKED 64 /* strokes that get pass detection (later ones are independent) */
#define PASS_PULL 0.6f /* a pass is drawn this fraction of the way towards its stroke */
#define PASS_DIST 3.0f /* px: a stroke within this of an earlier one is a pass over it */

typedef struct sinfo {
    float j0x, j0y, j1x, j1y; /* endpoint jitter */
    float nx, ny, blen;       /* bow direction and amplitude */
    float rad;                /* pen radius */
    int parent;               /* the stroke this one is a pass over, or -1 */
} sinfo;

typedef struct ctx {
    int clean;
    float cx, cy, s; /* normalization: p' = (p - c) . s */
    const float *P;  /* the glyph's points */
    const int *ss;   /* stroke starts */
    xform x;
    float ps, pbx, pby; /* final fit: q' = ps . q + (pbx, pby) */
} ctx;

static void norm_pt(const ctx *c, int i, float *x, float *y)
{
    *x = (c->P[2 * i] - c->cx) * c->s;
    *y = (c->P[2 * i + 1] - c->cy) * c->s;
}

/* Squared distance from (x, y) to stroke k (normalized px); in *t (when not NULL) the
 * arc-length position (0..1) of the nearest point, in *nx, *ny that point. */
static float stroke_dist2(const ctx *c, int k, float x, float y, float *t, float *nx, float *ny)
{
    int a = c->ss[k], b = c->ss[k + 1];
    float ax, ay;
    norm_pt(c, a, &ax, &ay);
    float best = (x - ax) * (x - ax) + (y - ay) * (y - ay), best_s = 0.0f, cum = 0.0f;
    float bx_ = ax, by_ = ay;
    for (int i = a; i + 1 < b; i++) {
        float bx, by;
        norm_pt(c, i + 1, &bx, &by);
        float dx = bx - ax, dy = by - ay, l2 = dx * dx + dy * dy;
        float u = l2 > 1e-12f ? ((x - ax) * dx + (y - ay) * dy) / l2 : 0.0f;
        u = u < 0.0f ? 0.0f : (u > 1.0f ? 1.0f : u);
        float ex = x - ax - u * dx, ey = y - ay - u * dy, d2 = ex * ex + ey * ey;
        float l = sqrtf(l2);
        if (d2 < best) {
            best = d2;
            best_s = cum + u * l;
            bx_ = ax + u * dx;
            by_ = ay + u * dy;
        }
        cum += l;
        ax = bx;
        ay = by;
    }
    if (t) *t = cum > 1e-6f ? best_s / cum : 0.0f;
    if (nx) {
        *nx = bx_;
        *ny = by_;
    }
    return best;
}

/* Arc length of stroke k (normalized px), or 0 when degenerate. */
static float stroke_len(const ctx *c, int k)
{
    float total = 0.0f;
    for (int i = c->ss[k]; i + 1 < c->ss[k + 1]; i++) {
        float ax, ay, bx, by;
        norm_pt(c, i, &ax, &ay);
        norm_pt(c, i + 1, &bx, &by);
        total += sqrtf((bx - ax) * (bx - ax) + (by - ay) * (by - ay));
    }
    return total > 1e-6f && total < 1.0e5f ? total : 0.0f;
}

/* The point at arc-length position t of stroke k. */
static void stroke_at(const ctx *c, int k, float total, float t, float *x, float *y)
{
    float want = t * total, cum = 0.0f;
    int a = c->ss[k], b = c->ss[k + 1];
    norm_pt(c, a, x, y);
    for (int i = a; i + 1 < b; i++) {
        float ax, ay, bx, by;
        norm_pt(c, i, &ax, &ay);
        norm_pt(c, i + 1, &bx, &by);
        float l = sqrtf((bx - ax) * (bx - ax) + (by - ay) * (by - ay));
        if (cum + l >= want && l > 0.0f) {
            float u = (want - cum) / l;
            *x = ax + u * (bx - ax);
            *y = ay + u * (by - ay);
            return;
        }
        cum += l;
        *x = bx;
        *y = by;
    }
}

/* The per-stroke distortions of stroke k, read from smooth fields at the stroke's endpoints
 * and chord midpoint. */
static void stroke_params(const ctx *c, int k, sinfo *si)
{
    float sx, sy, ex, ey, bw, pw, unused;
    norm_pt(c, c->ss[k], &sx, &sy);
    norm_pt(c, c->ss[k + 1] - 1, &ex, &ey);
    field_eval(&c->x.jit, sx, sy, &si->j0x, &si->j0y);
    field_eval(&c->x.jit, ex, ey, &si->j1x, &si->j1y);
    float mx = 0.5f * (sx + ex), my = 0.5f * (sy + ey);
    field_eval(&c->x.bow, mx, my, &bw, &unused);
    field_eval(&c->x.pen, mx, my, &pw, &unused);
    si->rad = 0.5f * c->x.width * (1.0f + pw);
    /* bow: perpendicular to the chord (its sign fixed by geometry, not by the drawing
     * direction), proportional to the chord's length */
    float chx = ex - sx, chy = ey - sy, L = sqrtf(chx * chx + chy * chy);
    si->nx = si->ny = si->blen = 0.0f;
    if (L > 2.0f && L < 1.0e4f) {
        si->nx = -chy / L;
        si->ny = chx / L;
        if (si->ny < 0.0f || (si->ny == 0.0f && si->nx < 0.0f)) {
            si->nx = -si->nx;
            si->ny = -si->ny;
        }
        si->blen = bw * L;
    }
    si->parent = -1;
}

/* Is stroke k a pass over stroke j (its start, end and arc midpoint within PASS_DIST)? */
static int is_pass_over(const ctx *c, int k, float len_k, int j)
{
    float px[3], py[3];
    norm_pt(c, c->ss[k], &px[0], &py[0]);
    norm_pt(c, c->ss[k + 1] - 1, &px[1], &py[1]);
    stroke_at(c, k, len_k, 0.5f, &px[2], &py[2]);
    for (int q = 0; q < 3; q++)
        if (stroke_dist2(c, j, px[q], py[q], NULL, NULL, NULL) > PASS_DIST * PASS_DIST) return 0;
    return 1;
}

/* Map a normalized point, displaced by stroke si at position t, to the canvas. */
static void map_point(const ctx *c, const sinfo *si, float x, float y, float t, float *qx,
                      float *qy)
{
    if (c->clean) {
        *qx = x + HALF;
        *qy = y + HALF;
        return;
    }
    float b = si->blen * fsin(PI_F * t);
    x = x + (1.0f - t) * si->j0x + t * si->j1x + si->nx * b;
    y = y + (1.0f - t) * si->j0y + t * si->j1y + si->ny * b;
    float dx, dy;
    field_eval(&c->x.warp, x, y, &dx, &dy);
    x += dx;
    y += dy;
    *qx = c->ps * (c->x.m00 * x + c->x.m01 * y + c->x.tx + HALF) + c->pbx;
    *qy = c->ps * (c->x.m10 * x + c->x.m11 * y + c->x.ty + HALF) + c->pby;
}

static int finite_pt(const float *p)
{
    return p[0] > -1.0e30f && p[0] < 1.0e30f && p[1] > -1.0e30f && p[1] < 1.0e30f;
}

/* Rasterize a piece into cov, or (cov NULL) grow box = {min x, min y, max x, max y, max r}. */
static void emit(float *cov, float *box, float ax, float ay, float bx, float by, float r)
{
    if (cov) {
        capsule(cov, ax, ay, bx, by, r);
        return;
    }
    const float p[4] = {ax, ay, bx, by};
    for (int i = 0; i < 4; i += 2) {
        float x = p[i], y = p[i + 1];
        if (!(x > -1.0e3f && x < 1.0e3f && y > -1.0e3f && y < 1.0e3f)) continue;
        box[0] = x < box[0] ? x : box[0];
        box[1] = y < box[1] ? y : box[1];
        box[2] = x > box[2] ? x : box[2];
        box[3] = y > box[3] ? y : box[3];
    }
    box[4] = r > box[4] ? r : box[4];
}

/* Walk every stroke: rasterize into cov, or only measure (cov NULL, see emit). */
static void walk(const ctx *c, int ns, const sinfo *info, int tracked, const float *lens,
                 float *cov, float *box)
{
    for (int k = 0; k < ns; k++) {
        int a = c->ss[k], b = c->ss[k + 1];
        sinfo own;
        const sinfo *si = &own;
        float len_k;
        if (k < tracked) {
            si = &info[k];
            len_k = lens[k];
        } else {
            len_k = stroke_len(c, k);
        }
        if (c->clean) {
            memset(&own, 0, sizeof own);
            own.rad = 0.5f * c->x.width;
            own.parent = -1;
            si = &own;
        } else if (k >= tracked) {
            stroke_params(c, k, &own);
        }
        const sinfo *pi = si->parent >= 0 ? &info[si->parent] : NULL;
        float x0, y0, qx, qy, t0 = 0.0f;
        norm_pt(c, a, &x0, &y0);
        if (pi) {
            float nx, ny;
            stroke_dist2(c, si->parent, x0, y0, &t0, &nx, &ny);
            map_point(c, pi, x0 + PASS_PULL * (nx - x0), y0 + PASS_PULL * (ny - y0), t0, &qx, &qy);
        } else {
            map_point(c, si, x0, y0, t0, &qx, &qy);
        }
        if (len_k <= 0.0f) { /* a dot (or degenerate stroke) */
            emit(cov, box, qx, qy, qx, qy, si->rad);
            continue;
        }
        float inv_total = 1.0f / len_k, cum = 0.0f;
        for (int i = a; i + 1 < b; i++) {
            float x1, y1;
            norm_pt(c, i + 1, &x1, &y1);
            float dx = x1 - x0, dy = y1 - y0;
            float li = sqrtf(dx * dx + dy * dy);
            int nsub = li < 1.0e3f ? (int)(li * (1.0f / STEP)) + 1 : 1;
            for (int j = 1; j <= nsub; j++) {
                float f = (float)j / (float)nsub, t, rx, ry;
                float px = x0 + f * dx, py = y0 + f * dy;
                if (pi) {
                    float nx, ny;
                    stroke_dist2(c, si->parent, px, py, &t, &nx, &ny);
                    px += PASS_PULL * (nx - px);
                    py += PASS_PULL * (ny - py);
                } else {
                    t = (cum + f * li) * inv_total;
                    if (t > 1.0f) t = 1.0f;
                }
                map_point(c, pi ? pi : si, px, py, t, &rx, &ry);
                emit(cov, box, qx, qy, rx, ry, si->rad);
                qx = rx;
                qy = ry;
            }
            cum += li;
            x0 = x1;
            y0 = y1;
        }
    }
}

void mcl_render_glyph(const mcl_glyph *g, uint64_t seed, int32_t cls, int64_t instance, int clean,
                      uint8_t *out)
{
    if (!out) return;
    memset(out, 0, N * N);
    if (!g || g->n_strokes <= 0 || !g->stroke_start || !g->pts) return;
    const int ns = g->n_strokes;
    const int np = g->stroke_start[ns];
    if (np <= 0 || g->stroke_start[0] != 0) return;
    for (int k = 0; k < ns; k++)
        if (g->stroke_start[k + 1] <= g->stroke_start[k] || g->stroke_start[k + 1] > np) return;

    /* 1. the box over all (finite) points */
    float minx = 0, maxx = 0, miny = 0, maxy = 0;
    int any = 0;
    for (int i = 0; i < np; i++) {
        const float *p = g->pts + 2 * i;
        if (!finite_pt(p)) continue;
        if (!any) {
            minx = maxx = p[0];
            miny = maxy = p[1];
            any = 1;
        } else {
            minx = p[0] < minx ? p[0] : minx;
            maxx = p[0] > maxx ? p[0] : maxx;
            miny = p[1] < miny ? p[1] : miny;
            maxy = p[1] > maxy ? p[1] : maxy;
        }
    }
    if (!any) return;
    ctx c;
    memset(&c, 0, sizeof c);
    c.clean = clean != 0;
    c.P = g->pts;
    c.ss = g->stroke_start;
    c.cx = 0.5f * (minx + maxx);
    c.cy = 0.5f * (miny + maxy);
    float ext = (maxx - minx) > (maxy - miny) ? (maxx - minx) : (maxy - miny);
    c.s = ext > 1e-9f ? BOX / ext : 0.0f;

    /* stroke lengths; total ink length, for the pen width of dense glyphs */
    float lens[MAX_TRACKED], ink = 0.0f;
    for (int k = 0; k < ns; k++) {
        float l = stroke_len(&c, k);
        if (k < MAX_TRACKED) lens[k] = l;
        ink += l;
    }

    rd r;
    uint64_t stream = ((uint64_t)(uint32_t)cls << 32) + (uint64_t)instance;
    r.key[0] = (uint32_t)seed;
    r.key[1] = (uint32_t)(seed >> 32);
    r.s0 = (uint32_t)stream;
    r.s1 = (uint32_t)(stream >> 32);
    if (c.clean)
        c.x.width = 1.85f * PX28;
    else
        draw_params(&r, ink, &c.x);

    /* per-stroke distortions; a stroke drawn over an earlier one (the multi-pass strokes of
     * duplex/triplex Hershey fonts) follows that stroke's distortion, so passes stay together */
    sinfo info[MAX_TRACKED];
    int tracked = ns < MAX_TRACKED ? ns : MAX_TRACKED;
    if (!c.clean)
        for (int k = 0; k < tracked; k++) {
            stroke_params(&c, k, &info[k]);
            for (int j = 0; j < k && info[k].parent < 0; j++)
                if (info[j].parent < 0 && is_pass_over(&c, k, lens[k], j)) info[k].parent = j;
            if (info[k].parent >= 0) info[k].rad = info[info[k].parent].rad;
        }

    /* pass 1: where the centre lines land; pass 2: rasterize, scaled and shifted (when
     * needed) so that no ink reaches the outermost pixels */
    c.ps = 1.0f;
    c.pbx = c.pby = 0.0f;
    if (!c.clean) {
        float box[5] = {1.0e30f, 1.0e30f, -1.0e30f, -1.0e30f, 0.0f};
        walk(&c, ns, info, tracked, lens, NULL, box);
        if (box[0] <= box[2] && box[1] <= box[3]) {
            float m = box[4] + 1.02f, lo = m, hi = (float)N - m, avail = hi - lo;
            float w = box[2] - box[0], h = box[3] - box[1], big = w > h ? w : h;
            float f = big > avail && avail > 0.0f ? avail / big : 1.0f;
            float mx = 0.5f * (box[0] + box[2]), my = 0.5f * (box[1] + box[3]);
            float ox = 0.0f, oy = 0.0f;
            if (mx - 0.5f * f * w < lo) ox = lo - (mx - 0.5f * f * w);
            if (mx + 0.5f * f * w > hi) ox = hi - (mx + 0.5f * f * w);
            if (my - 0.5f * f * h < lo) oy = lo - (my - 0.5f * f * h);
            if (my + 0.5f * f * h > hi) oy = hi - (my + 0.5f * f * h);
            c.ps = f;
            c.pbx = (1.0f - f) * mx + ox;
            c.pby = (1.0f - f) * my + oy;
        }
    }
    float cov[N * N];
    memset(cov, 0, sizeof cov);
    walk(&c, ns, info, tracked, lens, cov, NULL);
    for (int i = 0; i < N * N; i++) {
        float v = cov[i] * 255.0f + 0.5f;
        out[i] = (uint8_t)(v > 255.0f ? 255.0f : v);
    }
}
