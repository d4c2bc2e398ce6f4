// clayout reorder: bf16 acdb 8x256x56x56 -> bf16 abcd 8x256x56x56
// Each work-item transposes a 8x8 block in registers.
// Loops, outermost first: a:8 b:32 b:8 cd:3136
#pragma OPENCL FP_CONTRACT OFF

__kernel void reorder_bf16_acdb_to_bf16_abcd(__global const ushort *restrict src,
        __global ushort *restrict dst)
{
    const uint item = get_global_id(0);
    if (item >= 100352u)
        return;
    uint rest = item;
    const uint l3c = rest % 392u;
    rest /= 392u;
    const uint l1 = rest % 32u;
    rest /= 32u;
    const uint l0 = rest;
    const uint d_base = l1 * 25088u + l0 * 802816u + l3c * 8u;
    const uint s_base = l1 * 8u + l0 * 802816u + l3c * 2048u;
    ushort8 r0, r1, r2, r3, r4, r5, r6, r7;
    {
        const int k = 0;
        const uint s_off = s_base + k * 256u;
        r0 = vload8(0, src + s_off);
    }
    {
        const int k = 1;
        const uint s_off = s_base + k * 256u;
        r1 = vload8(0, src + s_off);
    }
    {
        const int k = 2;
        const uint s_off = s_base + k * 256u;
        r2 = vload8(0, src + s_off);
    }
    {
        const int k = 3;
        const uint s_off = s_base + k * 256u;
        r3 = vload8(0, src + s_off);
    }
    {
        const int k = 4;
        const uint s_off = s_base + k * 256u;
        r4 = vload8(0, src + s_off);
    }
    {
        const int k = 5;
        const uint s_off = s_base + k * 256u;
        r5 = vload8(0, src + s_off);
    }
    {
        const int k = 6;
        const uint s_off = s_base + k * 256u;
        r6 = vload8(0, src + s_off);
    }
    {
        const int k = 7;
        const uint s_off = s_base + k * 256u;
        r7 = vload8(0, src + s_off);
    }
    vstore8((ushort8)(r0.s0, r1.s0, r2.s0, r3.s0, r4.s0, r5.s0, r6.s0, r7.s0), 0, dst + d_base);
    vstore8((ushort8)(r0.s1, r1.s1, r2.s1, r3.s1, r4.s1, r5.s1, r6.s1, r7.s1), 0, dst + d_base + 3136u);
    vstore8((ushort8)(r0.s2, r1.s2, r2.s2, r3.s2, r4.s2, r5.s2, r6.s2, r7.s2), 0, dst + d_base + 6272u);
    vstore8((ushort8)(r0.s3, r1.s3, r2.s3, r3.s3, r4.s3, r5.s3, r6.s3, r7.s3), 0, dst + d_base + 9408u);
    vstore8((ushort8)(r0.s4, r1.s4, r2.s4, r3.s4, r4.s4, r5.s4, r6.s4, r7.s4), 0, dst + d_base + 12544u);
    vstore8((ushort8)(r0.s5, r1.s5, r2.s5, r3.s5, r4.s5, r5.s5, r6.s5, r7.s5), 0, dst + d_base + 15680u);
    vstore8((ushort8)(r0.s6, r1.s6, r2.s6, r3.s6, r4.s6, r5.s6, r6.s6, r7.s6), 0, dst + d_base + 18816u);
    vstore8((ushort8)(r0.s7, r1.s7, r2.s7, r3.s7, r4.s7, r5.s7, r6.s7, r7.s7), 0, dst + d_base + 21952u);
}
