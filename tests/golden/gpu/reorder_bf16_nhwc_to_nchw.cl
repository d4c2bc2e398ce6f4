// clayout reorder: bf16 acdb 8x256x56x56 -> bf16 abcd 8x256x56x56
// Each work-group moves a box of b:64 x cd:64 through local memory:
// it reads rows of 64 elements contiguous in the source, and
// writes rows of 64 contiguous in the destination.
// Loops, outermost first: a:8 b:256 cd:3136
#pragma OPENCL FP_CONTRACT OFF

__kernel void reorder_bf16_acdb_to_bf16_abcd(__global const ushort *restrict src,
        __global ushort *restrict dst)
{
    // The box in destination order, one spare element after every 32
    // (the read phase then strides across the memory banks).
    __local ushort tile[4223];
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
    for (uint r = lane; r < 4096u; r += lanes) {
        const uint j1 = r % 64u;
        const uint j2 = r / 64u;
        const uint a1 = a1_0 + j1;
        const uint a2 = a2_0 + j2;
        const uint s_off = a0 * 802816u + a1 + a2 * 256u;
        const uint k = j1 * 64u + j2;
        tile[k + k / 32u] = src[s_off];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < 4096u; r += lanes) {
        const uint j2 = r % 64u;
        const uint j1 = r / 64u;
        const uint a1 = a1_0 + j1;
        const uint a2 = a2_0 + j2;
        const uint d_off = a0 * 802816u + a1 * 3136u + a2;
        const uint k = j2 + j1 * 64u;
        const uint t = k + k / 32u;
        dst[d_off] = tile[t];
    }
}
