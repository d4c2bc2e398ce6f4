// clayout reorder: f32 abcd 256x256x3x3 -> f32 ABcd4b16a4b 256x256x3x3
// Each work-group moves a box of cd:9 x b:4 x a:8 x b:4 through local memory:
// it reads rows of 144 elements contiguous in the source, 4 at a
// time, and writes rows of 32 contiguous in the destination, 4 at a time.
// Loops, outermost first: a:16 b:16 cd:9 b:4 a:16 b:4
#pragma OPENCL FP_CONTRACT OFF


// Where element k of the box lives in local memory: 8 spare
// elements after every 288, so that neither phase's lanes pile onto
// one memory bank.
// (Named after the kernel: a program may hold several tiled kernels.)
inline uint reorder_f32_abcd_to_f32_ABcd4b16a4b_tile_index(uint k)
{
    return k + k / 288u * 8u;
}
__kernel void reorder_f32_abcd_to_f32_ABcd4b16a4b(__global const float *restrict src,
        __global float *restrict dst)
{
    // The box in source order (see reorder_f32_abcd_to_f32_ABcd4b16a4b_tile_index).
    __local float tile[1176] __attribute__((aligned(16)));
    const uint lane = get_local_id(0);
    const uint lanes = get_local_size(0);

    // This work-group's box: where it starts along each loop.
    uint box = get_global_id(1);
    const uint a4_0 = (box % 2u) * 8u;
    box /= 2u;
    const uint a1 = (box % 16u);
    box /= 16u;
    const uint a0 = box;


    // 1. Read the box from the source into local memory.
    for (uint r = lane; r < 288u; r += lanes) {
        const uint col = r % 36u;
        const uint row = r / 36u;
        const uint e = col * 4u;  // the vector's first element in its row
        const uint j2 = e % 9u;
        const uint j5 = (e / 9u) % 4u;
        const uint j3 = e / 36u;
        const uint j4 = row;
        const uint a2 = j2;
        const uint a3 = j3;
        const uint a4 = a4_0 + j4;
        const uint a5 = j5;
        const uint s_off = a0 * 36864u + a1 * 144u + a2 + a3 * 36u + a4 * 2304u + a5 * 9u;
        const uint k = j2 + j5 * 9u + j3 * 36u + j4 * 144u;
        *(__local float4 *)(tile + reorder_f32_abcd_to_f32_ABcd4b16a4b_tile_index(k)) = *(__global const float4 *)(src + s_off);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < 288u; r += lanes) {
        const uint col = r % 8u;
        const uint row = r / 8u;
        const uint e = col * 4u;  // the vector's first element in its row
        const uint j5 = e % 4u;
        const uint j4 = e / 4u;
        const uint j3 = row % 4u;
        const uint j2 = row / 4u;
        const uint a2 = j2;
        const uint a3 = j3;
        const uint a4 = a4_0 + j4;
        const uint a5 = j5;
        const uint d_off = a0 * 36864u + a1 * 2304u + a2 * 256u + a3 * 64u + a4 * 4u + a5;
        // The vector's elements, gathered from local memory, from element turn on (see the read phase).
        const uint k = j5 * 9u + j4 * 144u + j3 * 36u + j2;
        const uint t = 0;
        const uint turn = r % 4u;
        const uint m0 = turn;
        const uint m1 = (turn + 1u) % 4u;
        const uint m2 = (turn + 2u) % 4u;
        const uint m3 = (turn + 3u) % 4u;
        float g[4];
        g[0] = tile[reorder_f32_abcd_to_f32_ABcd4b16a4b_tile_index(k + m0 * 9u)];
        g[1] = tile[reorder_f32_abcd_to_f32_ABcd4b16a4b_tile_index(k + m1 * 9u)];
        g[2] = tile[reorder_f32_abcd_to_f32_ABcd4b16a4b_tile_index(k + m2 * 9u)];
        g[3] = tile[reorder_f32_abcd_to_f32_ABcd4b16a4b_tile_index(k + m3 * 9u)];
        float4 gathered = (float4)(g[0], g[1], g[2], g[3]);
        gathered = (turn & 1u) ? gathered.s3012 : gathered;
        gathered = (turn & 2u) ? gathered.s2301 : gathered;
        const float4 v = gathered;
        vstore4(v, 0, dst + d_off);
    }
}
