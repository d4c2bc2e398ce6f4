// clayout reorder: f32 abcd 8x256x56x56 -> f16 abcd 8x256x56x56
// Each work-item moves 8 consecutive elements as one vector.
// Loops, outermost first: abcd:6422528
#pragma OPENCL FP_CONTRACT OFF
#ifndef CLAYOUT_FLOAT_TO_F16_X8
#define CLAYOUT_FLOAT_TO_F16_X8

inline ushort8 float_to_f16_x8(float8 x)
{
    const uint8 u = as_uint8(x), a = u & 0x7fffffffu;
    // Normal: the mantissa rounded to 10 bits, to nearest even, in the
    // integer bits (a carry moves into the exponent), the exponent rebiased.
    uint8 code = ((a + 0xfffu + (a >> 13 & 1u)) >> 13) - 0x1c000u;
    // Below 2^-14: 0.5 + |x| rounds |x| to a multiple of 2^-24 (the
    // subnormals' step, and the f32 ulp of 0.5), leaving its code in the
    // low bits.
    code = select(code, as_uint8(as_float8(a) + 0.5f) - 0x3f000000u, a < 0x38800000u);
    code = select(code, (uint8)0x7c00u, a >= 0x477ff000u);              // from 65520: inf
    code = select(code, 0x7e00u | (a >> 13 & 0x1ffu), a > 0x7f800000u);   // NaN
    return convert_ushort8(code | (u >> 16 & 0x8000u));
}
#endif

__kernel void reorder_f32_abcd_to_f16_abcd(__global const float *restrict src,
        __global ushort *restrict dst)
{
    const uint item = get_global_id(0);
    if (item >= 802816u)
        return;
    uint rest = item;
    const uint l0c = rest;
    const uint d_base = l0c * 8u;
    const uint s_base = l0c * 8u;
    const int k = 0;
    const uint s_off = s_base + k;
    const uint d_off = d_base + k;
    float8 x = *(__global const float8 *)(src + s_off);
    *(__global ushort8 *)(dst + d_off) = float_to_f16_x8(x);
}
