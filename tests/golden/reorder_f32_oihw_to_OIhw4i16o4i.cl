// clayout reorder: f32 abcd 256x256x3x3 -> f32 ABcd4b16a4b 256x256x3x3
// Each work-item writes 4 consecutive elements one by one.
// Loops, outermost first: a:16 b:16 cd:9 b:4 a:16 b:4
#pragma OPENCL FP_CONTRACT OFF

__kernel void reorder_f32_abcd_to_f32_ABcd4b16a4b(__global const float *restrict src,
        __global float *restrict dst)
{
    const uint item = get_global_id(0);
    if (item >= 147456u)
        return;
    uint rest = item;
    const uint l4 = rest % 16u;
    rest /= 16u;
    const uint l3 = rest % 4u;
    rest /= 4u;
    const uint l2 = rest % 9u;
    rest /= 9u;
    const uint l1 = rest % 16u;
    rest /= 16u;
    const uint l0 = rest;
    const uint d_base = l4 * 4u + l3 * 64u + l2 * 256u + l1 * 2304u + l0 * 36864u;
    const uint s_base = l4 * 2304u + l3 * 36u + l2 + l1 * 144u + l0 * 36864u;
    for (int k = 0; k < 4; ++k) {
        const uint s_off = s_base + k * 9u;
        const uint d_off = d_base + k;
        dst[d_off] = src[s_off];  // same type: a bit copy
    }
}
