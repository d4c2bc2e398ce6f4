// clayout shuffle: f32 aBcd16b 1x272x56x56 -> f32 aBcd16b 1x272x56x56
// Each work-group moves a box of b:17 x cd:4 x b:16 through local memory:
// it reads rows of 64 elements contiguous in the source, 1 at a
// time, and writes rows of 64 contiguous in the destination, 4 at a time.
// Loops, outermost first: b:17 cd:3136 b:16
#pragma OPENCL FP_CONTRACT OFF


// Where element k of the box lives in local memory: 16 spare
// elements after every 8, so that neither phase's lanes pile onto
// one memory bank.
// (Named after the kernel: a program may hold several tiled kernels.)
inline uint shuffle_g4_f32_aBcd16b_tile_index(uint k)
{
    return k + k / 8u * 16u;
}
__kernel void shuffle_g4_f32_aBcd16b(__global const float *restrict src,
        __global float *restrict dst)
{
    // The box in destination order (see shuffle_g4_f32_aBcd16b_tile_index).
    __local float tile[3248] __attribute__((aligned(16)));
    const uint lane = get_local_id(0);
    const uint lanes = get_local_size(0);

    // This work-group's box: where it starts along each loop.
    uint box = get_global_id(1);
    const uint a1_0 = box * 4u;


    // 1. Read the box from the source into local memory.
    for (uint r = lane; r < 1088u; r += lanes) {
        const uint j2 = r % 16u;
        const uint j1 = (r / 16u) % 4u;
        const uint j0 = r / 64u;
        const uint a0 = j0;
        const uint a1 = a1_0 + j1;
        const uint a2 = j2;
        const uint i1 = a0 * 16u + a2;
        const uint c1 = (i1 % 4u) * 68u + i1 / 4u;
        const uint s_off = a1 * 16u + (i1 / 16u) * 50176u + i1 % 16u;
        const uint k = (c1 % 16u) + j1 * 16u + (c1 / 16u % 17u) * 64u;
        tile[shuffle_g4_f32_aBcd16b_tile_index(k)] = src[s_off];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < 272u; r += lanes) {
        const uint col = r % 16u;
        const uint row = r / 16u;
        const uint e = col * 4u;  // the vector's first element in its row
        const uint j2 = e % 16u;
        const uint j1 = e / 16u;
        const uint j0 = row;
        const uint a0 = j0;
        const uint a1 = a1_0 + j1;
        const uint a2 = j2;
        const uint i1 = a0 * 16u + a2;
        const uint d_off = a0 * 50176u + a1 * 16u + a2;
        const uint t = shuffle_g4_f32_aBcd16b_tile_index(j2 + j1 * 16u + j0 * 64u);
        const float4 v = *(__local float4 *)(tile + t);
        *(__global float4 *)(dst + d_off) = v;
    }
}
