// clayout reorder: bf16 acdb 8x256x56x56 -> bf16 abcd 8x256x56x56
// Each work-group moves a box of b:64 x cd:64 through local memory:
// it reads rows of 64 elements contiguous in the source, 8 at a
// time, and writes rows of 64 contiguous in the destination, 8 at a time.
// Loops, outermost first: a:8 b:256 cd:3136
#pragma OPENCL FP_CONTRACT OFF


// Where element k of the box lives in local memory: 8 spare
// elements after every 512, so that neither phase's lanes pile onto
// one memory bank.
// (Named after the kernel: a program may hold several tiled kernels.)
inline uint reorder_bf16_acdb_to_bf16_abcd_tile_index(uint k)
{
    return k + k / 512u * 8u;
}
__kernel void reorder_bf16_acdb_to_bf16_abcd(__global const ushort *restrict src,
        __global ushort *restrict dst)
{
    // The box in destination order (see reorder_bf16_acdb_to_bf16_abcd_tile_index).
    __local ushort tile[4152] __attribute__((aligned(16)));
    const uint lane = get_local_id(0);
    const uint lanes = get_local_size(0);

    // This work-group's box: where it starts along each loop.
    uint box = get_global_id(1);
    const uint a2_0 = (box % 49u) * 64u;
    box /= 49u;
    const uint a1_0 = (box % 4u) * 64u;
    box /= 4u;
    const uint a0 = box;


    // 1. Read the box from the source into local memory.
    for (uint r = lane; r < 512u; r += lanes) {
        const uint col = r % 8u;
        const uint row = r / 8u;
        const uint e = col * 8u;  // the vector's first element in its row
        const uint j1 = e;
        const uint j2 = row;
        const uint a1 = a1_0 + j1;
        const uint a2 = a2_0 + j2;
        const uint s_off = a0 * 802816u + a1 + a2 * 256u;
        const uint k = j1 * 64u + j2;
        const ushort8 v = *(__global const ushort8 *)(src + s_off);
        tile[reorder_bf16_acdb_to_bf16_abcd_tile_index(k)] = v.s0;
        tile[reorder_bf16_acdb_to_bf16_abcd_tile_index(k + 1u * 64u)] = v.s1;
        tile[reorder_bf16_acdb_to_bf16_abcd_tile_index(k + 2u * 64u)] = v.s2;
        tile[reorder_bf16_acdb_to_bf16_abcd_tile_index(k + 3u * 64u)] = v.s3;
        tile[reorder_bf16_acdb_to_bf16_abcd_tile_index(k + 4u * 64u)] = v.s4;
        tile[reorder_bf16_acdb_to_bf16_abcd_tile_index(k + 5u * 64u)] = v.s5;
        tile[reorder_bf16_acdb_to_bf16_abcd_tile_index(k + 6u * 64u)] = v.s6;
        tile[reorder_bf16_acdb_to_bf16_abcd_tile_index(k + 7u * 64u)] = v.s7;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < 512u; r += lanes) {
        const uint col = r % 8u;
        const uint row = r / 8u;
        const uint e = col * 8u;  // the vector's first element in its row
        const uint j2 = e;
        const uint j1 = row;
        const uint a1 = a1_0 + j1;
        const uint a2 = a2_0 + j2;
        const uint d_off = a0 * 802816u + a1 * 3136u + a2;
        const uint t = reorder_bf16_acdb_to_bf16_abcd_tile_index(j2 + j1 * 64u);
        const ushort8 v = *(__local ushort8 *)(tile + t);
        *(__global ushort8 *)(dst + d_off) = v;
    }
}
