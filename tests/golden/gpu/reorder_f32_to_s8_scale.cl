// clayout reorder: f32 abcd 8x256x56x56 -> s8 abcd 8x256x56x56
// Each work-item moves 16 consecutive elements as one vector.
// Loops, outermost first: abcd:6422528
#pragma OPENCL FP_CONTRACT OFF

__kernel void reorder_f32_abcd_to_s8_abcd(__global const float *restrict src,
        __global char *restrict dst, const float src_scale)
{
    const uint item = get_global_id(0);
    if (item >= 401408u)
        return;
    uint rest = item;
    const uint l0c = rest;
    const uint d_base = l0c * 16u;
    const uint s_base = l0c * 16u;
    const int k = 0;
    const uint s_off = s_base + k;
    const uint d_off = d_base + k;
    float16 x = *(__global const float16 *)(src + s_off);
    x = (float)src_scale * x;
    *(__global char16 *)(dst + d_off) = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
}
