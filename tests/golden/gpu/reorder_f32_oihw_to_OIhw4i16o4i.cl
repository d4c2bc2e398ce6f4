// clayout reorder: f32 abcd 256x256x3x3 -> f32 ABcd4b16a4b 256x256x3x3
// Each work-group moves a box of cd:9 x b:4 x a:8 x b:4 through local memory:
// it reads rows of 144 elements contiguous in the source, and
// writes rows of 32 contiguous in the destination.
// Loops, outermost first: a:16 b:16 cd:9 b:4 a:16 b:4
#pragma OPENCL FP_CONTRACT OFF

__kernel void reorder_f32_abcd_to_f32_ABcd4b16a4b(__global const float *restrict src,
        __global float *restrict dst)
{
    // The box in destination order, one spare element after every 32
    // (the read phase then strides across the memory banks).
    __local float tile[1187];
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
    for (uint r = lane; r < 1280u; r += lanes) {
        const uint col = r % 160u;
        if (col >= 144u)
            continue;  // past the row: this lane idles
        const uint row = r / 160u;
        const uint j2 = col % 9u;
        const uint j5 = (col / 9u) % 4u;
        const uint j3 = col / 36u;
        const uint j4 = row;
        const uint a2 = j2;
        const uint a3 = j3;
        const uint a4 = a4_0 + j4;
        const uint a5 = j5;
        const uint s_off = a0 * 36864u + a1 * 144u + a2 + a3 * 36u + a4 * 2304u + a5 * 9u;
        const uint k = j2 * 128u + j5 + j3 * 32u + j4 * 4u;
        tile[k + k / 32u] = src[s_off];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < 1152u; r += lanes) {
        const uint j5 = r % 4u;
        const uint j4 = (r / 4u) % 8u;
        const uint j3 = (r / 32u) % 4u;
        const uint j2 = r / 128u;
        const uint a2 = j2;
        const uint a3 = j3;
        const uint a4 = a4_0 + j4;
        const uint a5 = j5;
        const uint d_off = a0 * 36864u + a1 * 2304u + a2 * 256u + a3 * 64u + a4 * 4u + a5;
        const uint k = j5 + j4 * 4u + j3 * 32u + j2 * 128u;
        const uint t = k + k / 32u;
        dst[d_off] = tile[t];
    }
}
