// clayout reorder: s8 aBcd16b 8x256x56x56 -> f32 abcd 8x256x56x56
// Each work-group moves a box of b:16 x cd:64 through local memory:
// it reads rows of 1024 elements contiguous in the source, 16 at a
// time, and writes rows of 64 contiguous in the destination, 4 at a time.
// Loops, outermost first: a:8 b:16 b:16 cd:3136
#pragma OPENCL FP_CONTRACT OFF


// Where element k of the box lives in local memory: 16 spare
// elements after every 8, so that neither phase's lanes pile onto
// one memory bank.
// (Named after the kernel: a program may hold several tiled kernels.)
inline uint reorder_s8_aBcd16b_to_f32_abcd_tile_index(uint k)
{
    return k + k / 8u * 16u;
}
__kernel void reorder_s8_aBcd16b_to_f32_abcd(__global const char *restrict src,
        __global float *restrict dst, __global const float *restrict src_scales)
{
    // The box in destination order (see reorder_s8_aBcd16b_to_f32_abcd_tile_index).
    __local char tile[3056] __attribute__((aligned(16)));
    const uint lane = get_local_id(0);
    const uint lanes = get_local_size(0);

    // This work-group's box: where it starts along each loop.
    uint box = get_global_id(1);
    const uint a3_0 = (box % 49u) * 64u;
    box /= 49u;
    const uint a1 = (box % 16u);
    box /= 16u;
    const uint a0 = box;

    // The box's 16 values of src_scales, staged once for the write phase.
    __local float src_scales_box[16];
    for (uint q = lane; q < 16u; q += lanes) {
        const uint j2 = q;
        const uint a2 = j2;
        const uint i = a2 + a1 * 16u;
        src_scales_box[q] = i < 256u ? src_scales[i] : 0;  // past the end: padding
    }

    // 1. Read the box from the source into local memory.
    for (uint r = lane; r < 64u; r += lanes) {
        const uint col = r % 64u;
        const uint row = r / 64u;
        const uint e = col * 16u;  // the vector's first element in its row
        const uint j2 = e % 16u;
        const uint j3 = e / 16u;
        const uint a2 = j2;
        const uint a3 = a3_0 + j3;
        const uint i1 = a1 * 16u + a2;
        const uint s_off = a0 * 802816u + a3 * 16u + (i1 / 16u) * 50176u + i1 % 16u;
        const uint k = j2 * 64u + j3;
        const char16 v = *(__global const char16 *)(src + s_off);
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k)] = v.s0;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 1u * 64u)] = v.s1;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 2u * 64u)] = v.s2;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 3u * 64u)] = v.s3;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 4u * 64u)] = v.s4;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 5u * 64u)] = v.s5;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 6u * 64u)] = v.s6;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 7u * 64u)] = v.s7;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 8u * 64u)] = v.s8;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 9u * 64u)] = v.s9;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 10u * 64u)] = v.sa;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 11u * 64u)] = v.sb;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 12u * 64u)] = v.sc;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 13u * 64u)] = v.sd;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 14u * 64u)] = v.se;
        tile[reorder_s8_aBcd16b_to_f32_abcd_tile_index(k + 15u * 64u)] = v.sf;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < 256u; r += lanes) {
        const uint col = r % 16u;
        const uint row = r / 16u;
        const uint e = col * 4u;  // the vector's first element in its row
        const uint j3 = e;
        const uint j2 = row;
        const uint a2 = j2;
        const uint a3 = a3_0 + j3;
        const uint i1 = a1 * 16u + a2;
        const uint d_off = a0 * 802816u + a1 * 50176u + a2 * 3136u + a3;
        const uint t = reorder_s8_aBcd16b_to_f32_abcd_tile_index(j3 + j2 * 64u);
        float4 x = convert_float4(*(__local char4 *)(tile + t));
        x = (float)src_scales_box[j2] * x;
        *(__global float4 *)(dst + d_off) = x;
    }
}
