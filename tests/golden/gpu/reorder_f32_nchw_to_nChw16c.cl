// clayout reorder: f32 abcd 8x256x56x56 -> f32 aBcd16b 8x256x56x56
// Each work-group moves a box of cd:64 x b:16 through local memory:
// it reads rows of 64 elements contiguous in the source, 4 at a
// time, and writes rows of 1024 contiguous in the destination, 4 at a time.
// Loops, outermost first: ab:128 cd:3136 b:16
#pragma OPENCL FP_CONTRACT OFF


// Where element k of the box lives in local memory: 8 spare
// elements after every 256, so that neither phase's lanes pile onto
// one memory bank.
// (Named after the kernel: a program may hold several tiled kernels.)
inline uint reorder_f32_abcd_to_f32_aBcd16b_tile_index(uint k)
{
    return k + k / 256u * 8u;
}
__kernel void reorder_f32_abcd_to_f32_aBcd16b(__global const float *restrict src,
        __global float *restrict dst)
{
    // The box in source order (see reorder_f32_abcd_to_f32_aBcd16b_tile_index).
    __local float tile[1048] __attribute__((aligned(16)));
    const uint lane = get_local_id(0);
    const uint lanes = get_local_size(0);

    // This work-group's box: where it starts along each loop.
    uint box = get_global_id(1);
    const uint a1_0 = (box % 49u) * 64u;
    box /= 49u;
    const uint a0 = box;


    // 1. Read the box from the source into local memory.
    for (uint r = lane; r < 256u; r += lanes) {
        const uint col = r % 16u;
        const uint row = r / 16u;
        const uint e = col * 4u;  // the vector's first element in its row
        const uint j1 = e;
        const uint j2 = row;
        const uint a1 = a1_0 + j1;
        const uint a2 = j2;
        const uint s_off = a0 * 50176u + a1 + a2 * 3136u;
        const uint k = j1 + j2 * 64u;
        *(__local float4 *)(tile + reorder_f32_abcd_to_f32_aBcd16b_tile_index(k)) = *(__global const float4 *)(src + s_off);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < 256u; r += lanes) {
        const uint col = r % 256u;
        const uint row = r / 256u;
        const uint e = col * 4u;  // the vector's first element in its row
        const uint j2 = e % 16u;
        const uint j1 = e / 16u;
        const uint a1 = a1_0 + j1;
        const uint a2 = j2;
        const uint d_off = a0 * 50176u + a1 * 16u + a2;
        // The vector's elements, gathered from local memory.
        const uint k = j2 * 64u + j1;
        const uint t = 0;
        float g[4];
        g[0] = tile[reorder_f32_abcd_to_f32_aBcd16b_tile_index(k)];
        g[1] = tile[reorder_f32_abcd_to_f32_aBcd16b_tile_index(k + 1u * 64u)];
        g[2] = tile[reorder_f32_abcd_to_f32_aBcd16b_tile_index(k + 2u * 64u)];
        g[3] = tile[reorder_f32_abcd_to_f32_aBcd16b_tile_index(k + 3u * 64u)];
        const float4 v = (float4)(g[0], g[1], g[2], g[3]);
        vstore4(v, 0, dst + d_off);
    }
}
