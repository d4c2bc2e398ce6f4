// clayout reorder: s8 aBcd16b 8x256x56x56 -> f32 abcd 8x256x56x56
// Each work-group moves a box of b:16 x cd:64 through local memory:
// it reads rows of 1024 elements contiguous in the source, and
// writes rows of 64 contiguous in the destination.
// Loops, outermost first: a:8 b:16 b:16 cd:3136
#pragma OPENCL FP_CONTRACT OFF

__kernel void reorder_s8_aBcd16b_to_f32_abcd(__global const char *restrict src,
        __global float *restrict dst, __global const float *restrict src_scales)
{
    // The box in destination order, one spare element after every 32
    // (the read phase then strides across the memory banks).
    __local char tile[1055];
    const uint lane = get_local_id(0);
    const uint lanes = get_local_size(0);

    // This work-group's box: where it starts along each loop.
    uint box = get_global_id(1);
    const uint a3_0 = (box % 49u) * 64u;
    box /= 49u;
    const uint a1 = (box % 16u);
    box /= 16u;
    const uint a0 = box;

    // 1. Read the box from the source into local memory.
    for (uint r = lane; r < 1024u; r += lanes) {
        const uint j2 = r % 16u;
        const uint j3 = r / 16u;
        const uint a2 = j2;
        const uint a3 = a3_0 + j3;
        const uint i1 = a1 * 16u + a2;
        const uint s_off = a0 * 802816u + a3 * 16u + (i1 / 16u) * 50176u + i1 % 16u;
        const uint k = j2 * 64u + j3;
        tile[k + k / 32u] = src[s_off];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < 1024u; r += lanes) {
        const uint j3 = r % 64u;
        const uint j2 = r / 64u;
        const uint a2 = j2;
        const uint a3 = a3_0 + j3;
        const uint i1 = a1 * 16u + a2;
        const uint d_off = a0 * 802816u + a1 * 50176u + a2 * 3136u + a3;
        const uint k = j3 + j2 * 64u;
        const uint t = k + k / 32u;
        float x = convert_float(tile[t]);
        x = (float)src_scales[i1] * x;
        dst[d_off] = x;
    }
}
