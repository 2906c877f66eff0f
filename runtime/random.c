/* random.c: NumPy's default random generator (np.random.default_rng) for compiled code: SeedSequence, PCG64 and
 * the draws lorikeet supports (random, uniform, integers, normal, standard_normal, exponential,
 * standard_exponential, permutation; float32 where NumPy has it), each the same algorithm as
 * NumPy's (numpy/random/bit_generator.pyx, src/pcg64/pcg64.h, src/distributions/distributions.c), so a
 * generator seeded alike gives the same numbers, bit for bit, in the same order.
 *
 * The generator is an RtRng (runtime.h): PCG64's 128-bit state and increment and the buffered half of a 64-bit
 * draw that 32-bit draws use, exactly the state NumPy's PCG64.state holds, so the shim can copy a NumPy Generator
 * in and out of compiled code. Draws are sequential by definition of the stream: nothing here runs on a team,
 * and compiled code never draws inside a parallel region (ir/check_random.c refuses it).
 * Errors are returned as values (the RT_VAL_* message, or RT_RNG_OVERFLOW), never raised from here: the caller
 * fills the error record with its source line. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "runtime.h"
#include "random_ziggurat.h"

/* ---- SeedSequence (bit_generator.pyx): a pool of 4 words mixed from the entropy words ---- */

enum { POOL = 4 };
#define INIT_A 0x43b0d7e5u
#define MULT_A 0x931e8875u
#define INIT_B 0x8b51f9ddu
#define MULT_B 0x58f38dedu
#define MIX_MULT_L 0xca01f9ddu
#define MIX_MULT_R 0x4973f715u

static uint32_t hashmix(uint32_t value, uint32_t *hash_const)
{
    value ^= *hash_const;
    *hash_const *= MULT_A;
    value *= *hash_const;
    value ^= value >> 16;
    return value;
}

static uint32_t mix(uint32_t x, uint32_t y)
{
    uint32_t result = MIX_MULT_L * x - MIX_MULT_R * y;
    result ^= result >> 16;
    return result;
}

/* SeedSequence(entropy).generate_state(4, np.uint64): entropy is the seed's 32-bit words, lowest first (an int
 * below 2**32 is one word; 0 is one word 0). */
static void seed_sequence_state(const uint32_t *entropy, int n, uint64_t out[4])
{
    uint32_t pool[POOL], hash_const = INIT_A;
    for (int i = 0; i < POOL; i++) pool[i] = hashmix(i < n ? entropy[i] : 0, &hash_const);
    for (int src = 0; src < POOL; src++)
        for (int dst = 0; dst < POOL; dst++)
            if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], &hash_const));
    for (int src = POOL; src < n; src++)
        for (int dst = 0; dst < POOL; dst++) pool[dst] = mix(pool[dst], hashmix(entropy[src], &hash_const));
    uint32_t words[8], h = INIT_B;
    for (int i = 0; i < 8; i++) {
        uint32_t v = pool[i % POOL];
        v ^= h;
        h *= MULT_B;
        v *= h;
        v ^= v >> 16;
        words[i] = v;
    }
    for (int i = 0; i < 4; i++) out[i] = (uint64_t)words[2 * i] | (uint64_t)words[2 * i + 1] << 32;
}

/* ---- PCG64 (pcg64.h: setseq_128, XSL-RR output) ---- */

typedef unsigned __int128 u128;
#define PCG_MULT (((u128)2549297995355413924ULL << 64) | 4865540595714422341ULL)

static u128 get_state(const RtRng *g) { return (u128)g->state_hi << 64 | g->state_lo; }
static u128 get_inc(const RtRng *g) { return (u128)g->inc_hi << 64 | g->inc_lo; }

static void set_state(RtRng *g, u128 s)
{
    g->state_hi = (uint64_t)(s >> 64);
    g->state_lo = (uint64_t)s;
}

static uint64_t next_uint64(RtRng *g)
{
    u128 s = get_state(g) * PCG_MULT + get_inc(g);
    set_state(g, s);
    uint64_t hi = (uint64_t)(s >> 64), lo = (uint64_t)s;
    unsigned rot = (unsigned)(hi >> 58);
    uint64_t x = hi ^ lo;
    return (x >> rot) | (x << ((64 - rot) & 63));
}

static uint32_t next_uint32(RtRng *g)
{
    if (g->has_uint32) {
        g->has_uint32 = 0;
        return (uint32_t)g->uinteger;
    }
    uint64_t next = next_uint64(g);
    g->has_uint32 = 1;
    g->uinteger = next >> 32;
    return (uint32_t)(next & 0xffffffffu);
}

static double next_double(RtRng *g) { return (double)(next_uint64(g) >> 11) * (1.0 / 9007199254740992.0); }
static float next_float(RtRng *g) { return (float)(next_uint32(g) >> 8) * (1.0f / 16777216.0f); }

/* pcg64_set_seed: state and increment from the seed sequence's four words */
static void pcg64_seed(RtRng *g, const uint64_t w[4])
{
    u128 initstate = (u128)w[0] << 64 | w[1], initseq = (u128)w[2] << 64 | w[3];
    u128 inc = initseq << 1 | 1;
    g->inc_hi = (uint64_t)(inc >> 64);
    g->inc_lo = (uint64_t)inc;
    set_state(g, 0);
    set_state(g, get_state(g) * PCG_MULT + inc);
    set_state(g, get_state(g) + initstate);
    set_state(g, get_state(g) * PCG_MULT + inc);
    g->has_uint32 = 0;
    g->uinteger = 0;
}

/* 128 bits of the operating system's entropy, as NumPy's SeedSequence() takes them (secrets.randbits(128)) */
static void os_entropy(uint32_t out[4])
{
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(out, sizeof(uint32_t), 4, f) : 0;
    if (f) fclose(f);
    if (got == 4) return;
    /* no /dev/urandom: the clock and an address, mixed by the seed sequence (not for cryptography) */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    out[0] = (uint32_t)ts.tv_nsec;
    out[1] = (uint32_t)ts.tv_sec;
    out[2] = (uint32_t)(uintptr_t)out;
    out[3] = (uint32_t)((uintptr_t)out >> 32);
}

int rt_rng_seed(RtRng *g, int32_t has_seed, int64_t seed)
{
    uint32_t entropy[4];
    int n;
    if (has_seed) {
        if (seed < 0) return RT_VAL_RNG_SEED;
        entropy[0] = (uint32_t)seed;
        entropy[1] = (uint32_t)((uint64_t)seed >> 32);
        n = entropy[1] ? 2 : 1;
    } else {
        os_entropy(entropy);
        n = 4;
        while (n > 1 && entropy[n - 1] == 0) n--; /* an int's words: no leading zero words */
    }
    uint64_t w[4];
    seed_sequence_state(entropy, n, w);
    pcg64_seed(g, w);
    return 0;
}

/* ---- the distributions (distributions.c) ---- */

static double standard_normal(RtRng *g)
{
    for (;;) {
        uint64_t r = next_uint64(g);
        int idx = (int)(r & 0xff);
        r >>= 8;
        int sign = (int)(r & 0x1);
        uint64_t rabs = (r >> 1) & 0x000fffffffffffffULL;
        double x = (double)rabs * wi_double[idx];
        if (sign & 0x1) x = -x;
        if (rabs < ki_double[idx]) return x; /* 99.3% of the time */
        if (idx == 0) {
            for (;;) {
                double xx = -ziggurat_nor_inv_r * log1p(-next_double(g));
                double yy = -log1p(-next_double(g));
                if (yy + yy > xx * xx) return ((rabs >> 8) & 0x1) ? -(ziggurat_nor_r + xx) : ziggurat_nor_r + xx;
            }
        } else {
            if (((fi_double[idx - 1] - fi_double[idx]) * next_double(g) + fi_double[idx]) < exp(-0.5 * x * x)) return x;
        }
    }
}

/* float32: r = n23sb8 (distributions.c: random_standard_normal_f); the acceptance test compares in double, as C
 * promotes there */
static float standard_normal_f(RtRng *g)
{
    for (;;) {
        uint32_t r = next_uint32(g);
        int idx = (int)(r & 0xff);
        int sign = (int)((r >> 8) & 0x1);
        uint32_t rabs = (r >> 9) & 0x0007fffff;
        float x = (float)rabs * wi_float[idx];
        if (sign & 0x1) x = -x;
        if (rabs < ki_float[idx]) return x; /* 99.3% of the time */
        if (idx == 0) {
            for (;;) {
                float xx = -ziggurat_nor_inv_r_f * log1pf(-next_float(g));
                float yy = -log1pf(-next_float(g));
                if (yy + yy > xx * xx) return ((rabs >> 8) & 0x1) ? -(ziggurat_nor_r_f + xx) : ziggurat_nor_r_f + xx;
            }
        } else {
            if (((fi_float[idx - 1] - fi_float[idx]) * next_float(g) + fi_float[idx]) < exp(-0.5 * x * x)) return x;
        }
    }
}

/* distributions.c: random_standard_exponential (the ziggurat; the unlikely case draws again) */
static double standard_exponential(RtRng *g)
{
    for (;;) {
        uint64_t ri = next_uint64(g) >> 3;
        uint8_t idx = (uint8_t)(ri & 0xff);
        ri >>= 8;
        double x = (double)ri * we_double[idx];
        if (ri < ke_double[idx]) return x; /* 98.9% of the time */
        if (idx == 0) return ziggurat_exp_r - log1p(-next_double(g));
        if ((fe_double[idx - 1] - fe_double[idx]) * next_double(g) + fe_double[idx] < exp(-x)) return x;
    }
}

static float standard_exponential_f(RtRng *g)
{
    for (;;) {
        uint32_t ri = next_uint32(g) >> 1;
        uint8_t idx = (uint8_t)(ri & 0xff);
        ri >>= 8;
        float x = (float)ri * we_float[idx];
        if (ri < ke_float[idx]) return x;
        if (idx == 0) return ziggurat_exp_r_f - log1pf(-next_float(g));
        if ((fe_float[idx - 1] - fe_float[idx]) * next_float(g) + fe_float[idx] < expf(-x)) return x;
    }
}

/* random_interval: an integer in [0, max] by masked rejection (what Generator.shuffle draws with) */
static uint64_t random_interval(RtRng *g, uint64_t max)
{
    if (max == 0) return 0;
    uint64_t mask = max, value;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    if (max <= 0xffffffffULL)
        while ((value = (next_uint32(g) & mask)) > max) {}
    else
        while ((value = (next_uint64(g) & mask)) > max) {}
    return value;
}

/* Lemire's bounded integer in [0, rng] (rng < 2**64 - 1), 64-bit */
static uint64_t bounded_lemire_uint64(RtRng *g, uint64_t rng)
{
    const uint64_t rng_excl = rng + 1;
    u128 m = (u128)next_uint64(g) * rng_excl;
    uint64_t leftover = (uint64_t)m;
    if (leftover < rng_excl) {
        const uint64_t threshold = (UINT64_MAX - rng) % rng_excl;
        while (leftover < threshold) {
            m = (u128)next_uint64(g) * rng_excl;
            leftover = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* the same on 32 bits (rng < 2**32 - 1), drawing through next_uint32 (its buffered half) */
static uint32_t bounded_lemire_uint32(RtRng *g, uint32_t rng)
{
    const uint32_t rng_excl = rng + 1;
    uint64_t m = (uint64_t)next_uint32(g) * rng_excl;
    uint32_t leftover = (uint32_t)m;
    if (leftover < rng_excl) {
        const uint32_t threshold = (UINT32_MAX - rng) % rng_excl;
        while (leftover < threshold) {
            m = (uint64_t)next_uint32(g) * rng_excl;
            leftover = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* random_bounded_uint64_fill: cnt integers off + [0, rng] */
static void bounded_uint64_fill(RtRng *g, uint64_t off, uint64_t rng, int64_t cnt, int64_t *out)
{
    for (int64_t i = 0; i < cnt; i++) {
        uint64_t v;
        if (rng == 0) v = off;
        else if (rng == 0xffffffffULL) v = off + next_uint32(g);
        else if (rng < 0xffffffffULL) v = off + bounded_lemire_uint32(g, (uint32_t)rng);
        else if (rng == UINT64_MAX) v = off + next_uint64(g);
        else v = off + bounded_lemire_uint64(g, rng);
        out[i] = (int64_t)v;
    }
}

/* random_bounded_uint32_fill */
static void bounded_uint32_fill(RtRng *g, uint32_t off, uint32_t rng, int64_t cnt, int32_t *out)
{
    for (int64_t i = 0; i < cnt; i++) {
        uint32_t v;
        if (rng == 0) v = off;
        else if (rng == 0xffffffffu) v = off + next_uint32(g);
        else v = off + bounded_lemire_uint32(g, rng);
        out[i] = (int32_t)v;
    }
}

/* The elements of shape, and whether one is negative. */
static int64_t count_of(const int64_t *shape, int ndim, int *negative)
{
    int64_t n = 1;
    *negative = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) *negative = 1;
        n *= shape[d] < 0 ? 0 : shape[d];
    }
    return n;
}

/* integers(lo, hi, endpoint): NumPy's checks, in its order (_bounded_integers.pyx: an empty size first, then the
 * bounds); 0 when they pass, with [off, off + *rng] the closed interval. */
static int integer_bounds(int method, int32_t elsize, int64_t lo, int64_t hi, uint64_t *rng)
{
    int closed = method == RT_RNG_INTEGERS_CLOSED;
    if (!closed && hi == INT64_MIN) return lo == 0 ? RT_VAL_RNG_HIGH_0 : RT_VAL_RNG_LOW_HIGH;
    int64_t top = closed ? hi : hi - 1;
    if (elsize == 4 && lo < INT32_MIN) return RT_VAL_RNG_LOW_INT32;
    if (elsize == 4 && top > INT32_MAX) return RT_VAL_RNG_HIGH_INT32;
    if (lo > top) return lo == 0 ? (closed ? RT_VAL_RNG_HIGH_0_CLOSED : RT_VAL_RNG_HIGH_0)
                                 : (closed ? RT_VAL_RNG_LOW_HIGH_CLOSED : RT_VAL_RNG_LOW_HIGH);
    *rng = (uint64_t)top - (uint64_t)lo;
    return 0;
}

int rt_rng_fill(RtRng *g, int32_t method, int32_t elsize, double a, double b, int64_t lo, int64_t hi,
                const int64_t *shape, int32_t ndim, void *out)
{
    int negative;
    int64_t n = count_of(shape, ndim, &negative);
    uint64_t rng = 0;
    switch (method) {
    case RT_RNG_RANDOM: case RT_RNG_STANDARD_NORMAL: case RT_RNG_STANDARD_EXPONENTIAL:
    case RT_RNG_STANDARD_EXPONENTIAL_INV: case RT_RNG_PERMUTATION:
        break;
    case RT_RNG_EXPONENTIAL:
        if (b < 0) return RT_VAL_RNG_SCALE;
        break;
    case RT_RNG_UNIFORM:
        if (!isfinite(b - a)) return RT_RNG_OVERFLOW;
        break;
    case RT_RNG_NORMAL:
        if (b < 0) return RT_VAL_RNG_SCALE;
        break;
    case RT_RNG_INTEGERS: case RT_RNG_INTEGERS_CLOSED: {
        if (n == 0 && ndim > 0) return negative ? RT_VAL_NEGATIVE_DIM : 0; /* np.prod(size) == 0: no checks */
        int bad = integer_bounds(method, elsize, lo, hi, &rng);
        if (bad) return bad;
        break;
    }
    default: return RT_VAL_RNG_SCALE; /* not reached: compiled code passes the methods above */
    }
    if (negative) return RT_VAL_NEGATIVE_DIM;
    double *f = out;
    float *f32 = out; /* the float draws with elsize 4: NumPy's float32 streams (a 32-bit draw each) */
    switch (method) {
    case RT_RNG_RANDOM:
        if (elsize == 4)
            for (int64_t i = 0; i < n; i++) f32[i] = next_float(g);
        else
            for (int64_t i = 0; i < n; i++) f[i] = next_double(g);
        break;
    case RT_RNG_STANDARD_EXPONENTIAL:
        if (elsize == 4)
            for (int64_t i = 0; i < n; i++) f32[i] = standard_exponential_f(g);
        else
            for (int64_t i = 0; i < n; i++) f[i] = standard_exponential(g);
        break;
    case RT_RNG_STANDARD_EXPONENTIAL_INV:
        if (elsize == 4)
            for (int64_t i = 0; i < n; i++) f32[i] = (float)-log1p(-next_float(g));
        else
            for (int64_t i = 0; i < n; i++) f[i] = -log1p(-next_double(g));
        break;
    case RT_RNG_EXPONENTIAL:
        for (int64_t i = 0; i < n; i++) f[i] = b * standard_exponential(g);
        break;
    case RT_RNG_PERMUTATION: {
        /* np.arange(n) shuffled as Generator.shuffle does: for i = n-1 .. 1, swap i with random_interval(i) */
        int64_t *p = out;
        for (int64_t i = 0; i < n; i++) p[i] = i;
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)random_interval(g, (uint64_t)i), t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        break;
    }
    case RT_RNG_UNIFORM:
        for (int64_t i = 0; i < n; i++) f[i] = a + (b - a) * next_double(g);
        break;
    case RT_RNG_STANDARD_NORMAL:
        if (elsize == 4)
            for (int64_t i = 0; i < n; i++) f32[i] = standard_normal_f(g);
        else
            for (int64_t i = 0; i < n; i++) f[i] = standard_normal(g);
        break;
    case RT_RNG_NORMAL:
        for (int64_t i = 0; i < n; i++) f[i] = a + b * standard_normal(g);
        break;
    default:
        if (elsize == 4) bounded_uint32_fill(g, (uint32_t)(int32_t)lo, (uint32_t)rng, n, out);
        else bounded_uint64_fill(g, (uint64_t)lo, rng, n, out);
        break;
    }
    return 0;
}
