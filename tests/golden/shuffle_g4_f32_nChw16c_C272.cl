// clayout shuffle: f32 aBcd16b 1x272x56x56 -> f32 aBcd16b 1x272x56x56
// Each work-item writes 16 consecutive elements one by one.
// Loops, outermost first: b:17 cd:3136 b:16
#pragma OPENCL FP_CONTRACT OFF

__kernel void shuffle_g4_f32_aBcd16b(__global const float *restrict src,
        __global float *restrict dst)
{
    const uint item = get_global_id(0);
    if (item >= 53312u)
        return;
    uint rest = item;
    const uint l1 = rest % 3136u;
    rest /= 3136u;
    const uint l0 = rest;
    const uint i1_base = l0 * 16u;
    const uint d_base = l1 * 16u + l0 * 50176u;
    const uint s_base = l1 * 16u;
    for (int k = 0; k < 16; ++k) {
        const uint i1 = i1_base + k;
        const uint c1 = (i1 % 68u) * 4u + i1 / 68u;
        const uint s_off = s_base + (c1 / 16u) * 50176u + c1 % 16u;
        const uint d_off = d_base + k;
        dst[d_off] = src[s_off];  // same type: a bit copy
    }
}
