// clayout reorder: f32 abcd 8x256x56x56 -> f16 abcd 8x256x56x56
// Each work-item moves 8 consecutive elements as one vector.
// Loops, outermost first: abcd:6422528
#pragma OPENCL FP_CONTRACT OFF

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
    vstorea_half8_rte(x, 0, (__global half *)(dst + d_off));
}
