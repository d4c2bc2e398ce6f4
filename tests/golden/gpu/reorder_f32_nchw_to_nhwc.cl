// clayout reorder: f32 abcd 8x256x56x56 -> f32 acdb 8x256x56x56
// Each work-group moves a box of cd:32 x b:32 through local memory:
// it reads rows of 32 elements contiguous in the source, 4 at a
// time, and writes rows of 32 contiguous in the destination, 4 at a time.
// Loops, outermost first: a:8 cd:3136 b:256
#pragma OPENCL FP_CONTRACT OFF


// Where element k of the box lives in local memory: 4 spare
// elements after every 128, so that neither phase's lanes pile onto
// one memory bank.
// (Named after the kernel: a program may hold several tiled kernels.)
inline uint reorder_f32_abcd_to_f32_acdb_tile_index(uint k)
{
    return k + k / 128u * 4u;
}
__kernel void reorder_f32_abcd_to_f32_acdb(__global const float *restrict src,
        __global float *restrict dst)
{
    // The box in destination order (see reorder_f32_abcd_to_f32_acdb_tile_index).
    __local float tile[1052] __attribute__((aligned(16)));
    const uint lane = get_local_id(0);
    const uint lanes = get_local_size(0);

    // This work-group's box: where it starts along each loop.
    uint box = get_global_id(1);
    const uint a2_0 = (box % 8u) * 32u;
    box /= 8u;
    const uint a1_0 = (box % 98u) * 32u;
    box /= 98u;
    const uint a0 = box;


    // 1. Read the box from the source into local memory.
    for (uint r = lane; r < 256u; r += lanes) {
        const uint col = r % 8u;
        const uint row = r / 8u;
        const uint e = col * 4u;  // the vector's first element in its row
        const uint j1 = e;
        const uint j2 = row;
        const uint a1 = a1_0 + j1;
        const uint a2 = a2_0 + j2;
        const uint s_off = a0 * 802816u + a1 + a2 * 3136u;
        const uint k = j1 * 32u + j2;
        const float4 v = *(__global const float4 *)(src + s_off);
        tile[reorder_f32_abcd_to_f32_acdb_tile_index(k)] = v.s0;
        tile[reorder_f32_abcd_to_f32_acdb_tile_index(k + 1u * 32u)] = v.s1;
        tile[reorder_f32_abcd_to_f32_acdb_tile_index(k + 2u * 32u)] = v.s2;
        tile[reorder_f32_abcd_to_f32_acdb_tile_index(k + 3u * 32u)] = v.s3;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < 256u; r += lanes) {
        const uint col = r % 8u;
        const uint row = r / 8u;
        const uint e = col * 4u;  // the vector's first element in its row
        const uint j2 = e;
        const uint j1 = row;
        const uint a1 = a1_0 + j1;
        const uint a2 = a2_0 + j2;
        const uint d_off = a0 * 802816u + a1 * 256u + a2;
        const uint t = reorder_f32_abcd_to_f32_acdb_tile_index(j2 + j1 * 32u);
        const float4 v = *(__local float4 *)(tile + t);
        *(__global float4 *)(dst + d_off) = v;
    }
}
