// clayout reorder: s8 aBcd16b 8x256x56x56 -> f32 abcd 8x256x56x56
// Each work-item writes 16 consecutive elements one by one, for each of 8 items spaced by the global size.
// Loops, outermost first: a:8 b:16 b:16 cd:3136
#pragma OPENCL FP_CONTRACT OFF

__kernel void reorder_s8_aBcd16b_to_f32_abcd(__global const char *restrict src,
        __global float *restrict dst, __global const float *restrict src_scales)
{
    for (int chunk = 0; chunk < 8; ++chunk) {
        const uint item = get_global_id(0) + chunk * (uint)get_global_size(0);
        if (item >= 401408u)
            return;
        uint rest = item;
        const uint l2 = rest % 16u;
        rest /= 16u;
        const uint l3c = rest % 196u;
        rest /= 196u;
        const uint l1 = rest % 16u;
        rest /= 16u;
        const uint l0 = rest;
        const uint i1_base = l2 + l1 * 16u;
        const uint d_base = l2 * 3136u + l1 * 50176u + l0 * 802816u + l3c * 16u;
        const uint s_base = l0 * 802816u + l3c * 256u;
        for (int k = 0; k < 16; ++k) {
            const uint i1 = i1_base;
            const uint s_off = s_base + k * 16u + (i1 / 16u) * 50176u + i1 % 16u;
            const uint d_off = d_base + k;
            float x = convert_float(src[s_off]);
            x = (float)src_scales[i1] * x;
            dst[d_off] = x;
        }
    }
}
