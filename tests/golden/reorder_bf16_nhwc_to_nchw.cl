// clayout reorder: bf16 acdb 8x256x56x56 -> bf16 abcd 8x256x56x56
// Each work-item transposes a 16x16 block in registers.
// Loops, outermost first: a:8 b:16 b:16 cd:3136
#pragma OPENCL FP_CONTRACT OFF

__kernel void reorder_bf16_acdb_to_bf16_abcd(__global const ushort *restrict src,
        __global ushort *restrict dst)
{
    const uint item = get_global_id(0);
    if (item >= 25088u)
        return;
    uint rest = item;
    const uint l3c = rest % 196u;
    rest /= 196u;
    const uint l1 = rest % 16u;
    rest /= 16u;
    const uint l0 = rest;
    const uint d_base = l1 * 50176u + l0 * 802816u + l3c * 16u;
    const uint s_base = l1 * 16u + l0 * 802816u + l3c * 4096u;
    ushort16 r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15;
    {
        const int k = 0;
        const uint s_off = s_base + k * 256u;
        r0 = vload16(0, src + s_off);
    }
    {
        const int k = 1;
        const uint s_off = s_base + k * 256u;
        r1 = vload16(0, src + s_off);
    }
    {
        const int k = 2;
        const uint s_off = s_base + k * 256u;
        r2 = vload16(0, src + s_off);
    }
    {
        const int k = 3;
        const uint s_off = s_base + k * 256u;
        r3 = vload16(0, src + s_off);
    }
    {
        const int k = 4;
        const uint s_off = s_base + k * 256u;
        r4 = vload16(0, src + s_off);
    }
    {
        const int k = 5;
        const uint s_off = s_base + k * 256u;
        r5 = vload16(0, src + s_off);
    }
    {
        const int k = 6;
        const uint s_off = s_base + k * 256u;
        r6 = vload16(0, src + s_off);
    }
    {
        const int k = 7;
        const uint s_off = s_base + k * 256u;
        r7 = vload16(0, src + s_off);
    }
    {
        const int k = 8;
        const uint s_off = s_base + k * 256u;
        r8 = vload16(0, src + s_off);
    }
    {
        const int k = 9;
        const uint s_off = s_base + k * 256u;
        r9 = vload16(0, src + s_off);
    }
    {
        const int k = 10;
        const uint s_off = s_base + k * 256u;
        r10 = vload16(0, src + s_off);
    }
    {
        const int k = 11;
        const uint s_off = s_base + k * 256u;
        r11 = vload16(0, src + s_off);
    }
    {
        const int k = 12;
        const uint s_off = s_base + k * 256u;
        r12 = vload16(0, src + s_off);
    }
    {
        const int k = 13;
        const uint s_off = s_base + k * 256u;
        r13 = vload16(0, src + s_off);
    }
    {
        const int k = 14;
        const uint s_off = s_base + k * 256u;
        r14 = vload16(0, src + s_off);
    }
    {
        const int k = 15;
        const uint s_off = s_base + k * 256u;
        r15 = vload16(0, src + s_off);
    }
    // Transposed in 4 rounds of zips (one unpack instruction each): row j
    // of the last round holds column bitrev(j).
    ushort16 z1_0, z1_1, z1_2, z1_3, z1_4, z1_5, z1_6, z1_7, z1_8, z1_9, z1_10, z1_11, z1_12, z1_13, z1_14, z1_15;  // zipped in 2-byte units
    {
        const short16 a = as_short16(r0), b = as_short16(r1);
        z1_0 = as_ushort16((short16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_8 = as_ushort16((short16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const short16 a = as_short16(r2), b = as_short16(r3);
        z1_1 = as_ushort16((short16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_9 = as_ushort16((short16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const short16 a = as_short16(r4), b = as_short16(r5);
        z1_2 = as_ushort16((short16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_10 = as_ushort16((short16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const short16 a = as_short16(r6), b = as_short16(r7);
        z1_3 = as_ushort16((short16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_11 = as_ushort16((short16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const short16 a = as_short16(r8), b = as_short16(r9);
        z1_4 = as_ushort16((short16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_12 = as_ushort16((short16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const short16 a = as_short16(r10), b = as_short16(r11);
        z1_5 = as_ushort16((short16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_13 = as_ushort16((short16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const short16 a = as_short16(r12), b = as_short16(r13);
        z1_6 = as_ushort16((short16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_14 = as_ushort16((short16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const short16 a = as_short16(r14), b = as_short16(r15);
        z1_7 = as_ushort16((short16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_15 = as_ushort16((short16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    ushort16 z2_0, z2_1, z2_2, z2_3, z2_4, z2_5, z2_6, z2_7, z2_8, z2_9, z2_10, z2_11, z2_12, z2_13, z2_14, z2_15;  // zipped in 4-byte units
    {
        const int8 a = as_int8(z1_0), b = as_int8(z1_1);
        z2_0 = as_ushort16((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_8 = as_ushort16((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const int8 a = as_int8(z1_2), b = as_int8(z1_3);
        z2_1 = as_ushort16((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_9 = as_ushort16((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const int8 a = as_int8(z1_4), b = as_int8(z1_5);
        z2_2 = as_ushort16((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_10 = as_ushort16((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const int8 a = as_int8(z1_6), b = as_int8(z1_7);
        z2_3 = as_ushort16((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_11 = as_ushort16((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const int8 a = as_int8(z1_8), b = as_int8(z1_9);
        z2_4 = as_ushort16((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_12 = as_ushort16((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const int8 a = as_int8(z1_10), b = as_int8(z1_11);
        z2_5 = as_ushort16((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_13 = as_ushort16((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const int8 a = as_int8(z1_12), b = as_int8(z1_13);
        z2_6 = as_ushort16((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_14 = as_ushort16((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const int8 a = as_int8(z1_14), b = as_int8(z1_15);
        z2_7 = as_ushort16((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_15 = as_ushort16((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    ushort16 z3_0, z3_1, z3_2, z3_3, z3_4, z3_5, z3_6, z3_7, z3_8, z3_9, z3_10, z3_11, z3_12, z3_13, z3_14, z3_15;  // zipped in 8-byte units
    {
        const long4 a = as_long4(z2_0), b = as_long4(z2_1);
        z3_0 = as_ushort16((long4)(a.s0, b.s0, a.s1, b.s1));
        z3_8 = as_ushort16((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const long4 a = as_long4(z2_2), b = as_long4(z2_3);
        z3_1 = as_ushort16((long4)(a.s0, b.s0, a.s1, b.s1));
        z3_9 = as_ushort16((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const long4 a = as_long4(z2_4), b = as_long4(z2_5);
        z3_2 = as_ushort16((long4)(a.s0, b.s0, a.s1, b.s1));
        z3_10 = as_ushort16((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const long4 a = as_long4(z2_6), b = as_long4(z2_7);
        z3_3 = as_ushort16((long4)(a.s0, b.s0, a.s1, b.s1));
        z3_11 = as_ushort16((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const long4 a = as_long4(z2_8), b = as_long4(z2_9);
        z3_4 = as_ushort16((long4)(a.s0, b.s0, a.s1, b.s1));
        z3_12 = as_ushort16((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const long4 a = as_long4(z2_10), b = as_long4(z2_11);
        z3_5 = as_ushort16((long4)(a.s0, b.s0, a.s1, b.s1));
        z3_13 = as_ushort16((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const long4 a = as_long4(z2_12), b = as_long4(z2_13);
        z3_6 = as_ushort16((long4)(a.s0, b.s0, a.s1, b.s1));
        z3_14 = as_ushort16((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const long4 a = as_long4(z2_14), b = as_long4(z2_15);
        z3_7 = as_ushort16((long4)(a.s0, b.s0, a.s1, b.s1));
        z3_15 = as_ushort16((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    ushort16 z4_0, z4_1, z4_2, z4_3, z4_4, z4_5, z4_6, z4_7, z4_8, z4_9, z4_10, z4_11, z4_12, z4_13, z4_14, z4_15;  // zipped in 16-byte units
    z4_0 = (ushort16)(z3_0.lo, z3_1.lo);
    z4_8 = (ushort16)(z3_0.hi, z3_1.hi);
    z4_1 = (ushort16)(z3_2.lo, z3_3.lo);
    z4_9 = (ushort16)(z3_2.hi, z3_3.hi);
    z4_2 = (ushort16)(z3_4.lo, z3_5.lo);
    z4_10 = (ushort16)(z3_4.hi, z3_5.hi);
    z4_3 = (ushort16)(z3_6.lo, z3_7.lo);
    z4_11 = (ushort16)(z3_6.hi, z3_7.hi);
    z4_4 = (ushort16)(z3_8.lo, z3_9.lo);
    z4_12 = (ushort16)(z3_8.hi, z3_9.hi);
    z4_5 = (ushort16)(z3_10.lo, z3_11.lo);
    z4_13 = (ushort16)(z3_10.hi, z3_11.hi);
    z4_6 = (ushort16)(z3_12.lo, z3_13.lo);
    z4_14 = (ushort16)(z3_12.hi, z3_13.hi);
    z4_7 = (ushort16)(z3_14.lo, z3_15.lo);
    z4_15 = (ushort16)(z3_14.hi, z3_15.hi);
    *(__global ushort16 *)(dst + d_base) = z4_0;
    *(__global ushort16 *)(dst + d_base + 3136u) = z4_8;
    *(__global ushort16 *)(dst + d_base + 6272u) = z4_4;
    *(__global ushort16 *)(dst + d_base + 9408u) = z4_12;
    *(__global ushort16 *)(dst + d_base + 12544u) = z4_2;
    *(__global ushort16 *)(dst + d_base + 15680u) = z4_10;
    *(__global ushort16 *)(dst + d_base + 18816u) = z4_6;
    *(__global ushort16 *)(dst + d_base + 21952u) = z4_14;
    *(__global ushort16 *)(dst + d_base + 25088u) = z4_1;
    *(__global ushort16 *)(dst + d_base + 28224u) = z4_9;
    *(__global ushort16 *)(dst + d_base + 31360u) = z4_5;
    *(__global ushort16 *)(dst + d_base + 34496u) = z4_13;
    *(__global ushort16 *)(dst + d_base + 37632u) = z4_3;
    *(__global ushort16 *)(dst + d_base + 40768u) = z4_11;
    *(__global ushort16 *)(dst + d_base + 43904u) = z4_7;
    *(__global ushort16 *)(dst + d_base + 47040u) = z4_15;
}
