/* half.c: IEEE binary16 (NumPy's float16) to and from float32 and float64, rounding to nearest even, as
 * NumPy's npy_float_to_half and npy_double_to_half do, and as x86's vcvtps2ph does: overflow gives inf, NaN stays
 * NaN (its sign and the top bits of its payload kept, made quiet), subnormals are exact.
 *
 * Two users: the compiler (typespec rounds float16 constants, the shim boxes np.float16 scalars) and compiled
 * code. LLVM lowers a conversion between half and float or double to a call of a libgcc/compiler-rt routine where
 * the CPU has no instruction for it (x86-64 without F16C: both ways; with F16C: double to half). A process may not
 * have those routines (libgcc has them only since GCC 12), and theirs need not agree with the instructions on
 * NaN payloads; so the JIT is given ours under their names (rt_symbols), and results do not depend on the CPU.
 * Those take and return half values in an XMM register (the x86-64 psABI's _Float16), hence the _Float16
 * wrappers, which only move bits. Nothing here allocates or can fail. */
#include <string.h>
#include "runtime.h"

uint16_t rt_half_from_double(double d)
{
    uint64_t x;
    memcpy(&x, &d, sizeof x);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000);
    uint64_t a = x & 0x7fffffffffffffffULL;
    if (a >= 0x7ff0000000000000ULL) /* inf, or NaN: quiet, the payload's top 10 bits */
        return a == 0x7ff0000000000000ULL ? sign | 0x7c00 : (uint16_t)(sign | 0x7e00 | ((a >> 42) & 0x3ff));
    if (a >= 0x40effe0000000000ULL) return sign | 0x7c00; /* >= 65520, halfway above 65504: inf */
    int exp = (int)(a >> 52);
    uint64_t m;
    int shift;
    if (exp >= 1009) {            /* a normal half (>= 2^-14): the exponent field rides above the mantissa, so a */
        m = (a & ((1ULL << 52) - 1)) | ((uint64_t)(exp - 1008) << 52); /* rounding carry moves into it */
        shift = 42;
    } else {                      /* a subnormal half (units of 2^-24), or zero */
        if (exp < 988) return sign;                 /* below 2^-35: rounds to zero */
        m = (a & ((1ULL << 52) - 1)) | (1ULL << 52); /* (a double subnormal is below 2^-1022: returned above) */
        shift = 1051 - exp;
    }
    uint64_t r = m >> shift, rem = m & ((1ULL << shift) - 1), halfway = 1ULL << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

uint16_t rt_half_from_float(float f)
{
    return rt_half_from_double((double)f); /* exact, so one rounding */
}

/* Widening is exact: the fields move (a NaN made quiet, its payload in the top bits), a subnormal is scaled. */
double rt_half_to_double(uint16_t h)
{
    uint64_t sign = (uint64_t)(h & 0x8000) << 48, m = h & 0x3ff;
    unsigned e = (h >> 10) & 0x1f;
    if (e == 0) {
        double v = (double)m * 0x1p-24;
        return sign ? -v : v;
    }
    uint64_t bits = sign | (m << 42);
    if (e == 31) bits |= 0x7ff0000000000000ULL | (m ? 0x0008000000000000ULL : 0);
    else bits |= (uint64_t)(e + 1008) << 52;
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

float rt_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, m = h & 0x3ff;
    unsigned e = (h >> 10) & 0x1f;
    if (e == 0) {
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    uint32_t bits = sign | (m << 13);
    if (e == 31) bits |= 0x7f800000u | (m ? 0x00400000u : 0);
    else bits |= (uint32_t)(e + 112) << 23;
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* ---- the routines LLVM calls, with the psABI's _Float16 in and out ---- */

static uint16_t bits_of(_Float16 h)
{
    uint16_t b;
    memcpy(&b, &h, sizeof b);
    return b;
}

static _Float16 half_of(uint16_t b)
{
    _Float16 h;
    memcpy(&h, &b, sizeof h);
    return h;
}

static float extend_hf_sf(_Float16 h) { return rt_half_to_float(bits_of(h)); }
static double extend_hf_df(_Float16 h) { return rt_half_to_double(bits_of(h)); }
static _Float16 trunc_sf_hf(float f) { return half_of(rt_half_from_float(f)); }
static _Float16 trunc_df_hf(double d) { return half_of(rt_half_from_double(d)); }

const RtSymbol *rt_half_symbols(int *count)
{
    static const RtSymbol syms[] = {
        {"__extendhfsf2", (void *)extend_hf_sf}, {"__extendhfdf2", (void *)extend_hf_df},
        {"__truncsfhf2", (void *)trunc_sf_hf}, {"__truncdfhf2", (void *)trunc_df_hf},
    };
    *count = (int)(sizeof syms / sizeof syms[0]);
    return syms;
}
