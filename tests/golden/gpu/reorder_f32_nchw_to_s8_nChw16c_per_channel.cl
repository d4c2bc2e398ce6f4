// clayout reorder: f32 abcd 8x256x56x56 -> s8 aBcd16b 8x256x56x56
// Each work-group moves a box of cd:64 x b:16 through local memory:
// it reads rows of 64 elements contiguous in the source, 4 at a
// time, and writes rows of 1024 contiguous in the destination, 16 at a time.
// Loops, outermost first: a:8 b:16 cd:3136 b:16
#pragma OPENCL FP_CONTRACT OFF


// Where element k of the box lives in local memory: 4 spare
// elements after every 1024, so that neither phase's lanes pile onto
// one memory bank.
// (Named after the kernel: a program may hold several tiled kernels.)
inline uint reorder_f32_abcd_to_s8_aBcd16b_tile_index(uint k)
{
    return k + k / 1024u * 4u;
}
__kernel void reorder_f32_abcd_to_s8_aBcd16b(__global const float *restrict src,
        __global char *restrict dst, __global const float *restrict src_scales)
{
    // The box in source order (see reorder_f32_abcd_to_s8_aBcd16b_tile_index).
    __local float tile[1024] __attribute__((aligned(16)));
    const uint lane = get_local_id(0);
    const uint lanes = get_local_size(0);

    // This work-group's box: where it starts along each loop.
    uint box = get_global_id(1);
    const uint a2_0 = (box % 49u) * 64u;
    box /= 49u;
    const uint a1 = (box % 16u);
    box /= 16u;
    const uint a0 = box;


    // 1. Read the box from the source into local memory.
    for (uint r = lane; r < 256u; r += lanes) {
        const uint col = r % 16u;
        const uint row = r / 16u;
        const uint e = col * 4u;  // the vector's first element in its row
        const uint j2 = e;
        const uint j3 = row;
        const uint a2 = a2_0 + j2;
        const uint a3 = j3;
        const uint i1 = a1 * 16u + a3;
        const uint s_off = a0 * 802816u + a2 + i1 * 3136u;
        const uint k = j2 + j3 * 64u;
        *(__local float4 *)(tile + reorder_f32_abcd_to_s8_aBcd16b_tile_index(k)) = *(__global const float4 *)(src + s_off);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < 64u; r += lanes) {
        const uint col = r % 64u;
        const uint row = r / 64u;
        const uint e = col * 16u;  // the vector's first element in its row
        const uint j3 = e % 16u;
        const uint j2 = e / 16u;
        const uint a2 = a2_0 + j2;
        const uint a3 = j3;
        const uint i1 = a1 * 16u + a3;
        const uint d_off = a0 * 802816u + a1 * 50176u + a2 * 16u + a3;
        // The vector's elements, gathered from local memory.
        const uint k = j3 * 64u + j2;
        const uint t = 0;
        float g[16];
        g[0] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k)];
        g[1] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 1u * 64u)];
        g[2] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 2u * 64u)];
        g[3] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 3u * 64u)];
        g[4] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 4u * 64u)];
        g[5] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 5u * 64u)];
        g[6] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 6u * 64u)];
        g[7] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 7u * 64u)];
        g[8] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 8u * 64u)];
        g[9] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 9u * 64u)];
        g[10] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 10u * 64u)];
        g[11] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 11u * 64u)];
        g[12] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 12u * 64u)];
        g[13] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 13u * 64u)];
        g[14] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 14u * 64u)];
        g[15] = tile[reorder_f32_abcd_to_s8_aBcd16b_tile_index(k + 15u * 64u)];
        float16 x = (float16)(g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
        x = vload16(0, src_scales + i1) * x;
        vstore16(convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000), 0, dst + d_off);
    }
}
