// clayout reorder: f32 acdb 8x256x56x56 -> f32 abcd 8x256x56x56
// Each work-item transposes a 16x16 block in registers.
// Loops, outermost first: a:8 b:16 b:16 cd:3136
#pragma OPENCL FP_CONTRACT OFF

__kernel void reorder_f32_acdb_to_f32_abcd(__global const float *restrict src,
        __global float *restrict dst)
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
    float16 r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15;
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
    float16 z1_0, z1_1, z1_2, z1_3, z1_4, z1_5, z1_6, z1_7, z1_8, z1_9, z1_10, z1_11, z1_12, z1_13, z1_14, z1_15;  // zipped in 4-byte units
    {
        const int16 a = as_int16(r0), b = as_int16(r1);
        z1_0 = as_float16((int16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_8 = as_float16((int16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const int16 a = as_int16(r2), b = as_int16(r3);
        z1_1 = as_float16((int16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_9 = as_float16((int16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const int16 a = as_int16(r4), b = as_int16(r5);
        z1_2 = as_float16((int16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_10 = as_float16((int16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const int16 a = as_int16(r6), b = as_int16(r7);
        z1_3 = as_float16((int16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_11 = as_float16((int16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const int16 a = as_int16(r8), b = as_int16(r9);
        z1_4 = as_float16((int16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_12 = as_float16((int16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const int16 a = as_int16(r10), b = as_int16(r11);
        z1_5 = as_float16((int16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_13 = as_float16((int16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const int16 a = as_int16(r12), b = as_int16(r13);
        z1_6 = as_float16((int16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_14 = as_float16((int16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    {
        const int16 a = as_int16(r14), b = as_int16(r15);
        z1_7 = as_float16((int16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
        z1_15 = as_float16((int16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf));
    }
    float16 z2_0, z2_1, z2_2, z2_3, z2_4, z2_5, z2_6, z2_7, z2_8, z2_9, z2_10, z2_11, z2_12, z2_13, z2_14, z2_15;  // zipped in 8-byte units
    {
        const long8 a = as_long8(z1_0), b = as_long8(z1_1);
        z2_0 = as_float16((long8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_8 = as_float16((long8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const long8 a = as_long8(z1_2), b = as_long8(z1_3);
        z2_1 = as_float16((long8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_9 = as_float16((long8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const long8 a = as_long8(z1_4), b = as_long8(z1_5);
        z2_2 = as_float16((long8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_10 = as_float16((long8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const long8 a = as_long8(z1_6), b = as_long8(z1_7);
        z2_3 = as_float16((long8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_11 = as_float16((long8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const long8 a = as_long8(z1_8), b = as_long8(z1_9);
        z2_4 = as_float16((long8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_12 = as_float16((long8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const long8 a = as_long8(z1_10), b = as_long8(z1_11);
        z2_5 = as_float16((long8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_13 = as_float16((long8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const long8 a = as_long8(z1_12), b = as_long8(z1_13);
        z2_6 = as_float16((long8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_14 = as_float16((long8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const long8 a = as_long8(z1_14), b = as_long8(z1_15);
        z2_7 = as_float16((long8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_15 = as_float16((long8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    float16 z3_0, z3_1, z3_2, z3_3, z3_4, z3_5, z3_6, z3_7, z3_8, z3_9, z3_10, z3_11, z3_12, z3_13, z3_14, z3_15;  // zipped in 16-byte units
    z3_0 = (float16)(z2_0.s0123, z2_1.s0123, z2_0.s4567, z2_1.s4567);
    z3_8 = (float16)(z2_0.s89ab, z2_1.s89ab, z2_0.scdef, z2_1.scdef);
    z3_1 = (float16)(z2_2.s0123, z2_3.s0123, z2_2.s4567, z2_3.s4567);
    z3_9 = (float16)(z2_2.s89ab, z2_3.s89ab, z2_2.scdef, z2_3.scdef);
    z3_2 = (float16)(z2_4.s0123, z2_5.s0123, z2_4.s4567, z2_5.s4567);
    z3_10 = (float16)(z2_4.s89ab, z2_5.s89ab, z2_4.scdef, z2_5.scdef);
    z3_3 = (float16)(z2_6.s0123, z2_7.s0123, z2_6.s4567, z2_7.s4567);
    z3_11 = (float16)(z2_6.s89ab, z2_7.s89ab, z2_6.scdef, z2_7.scdef);
    z3_4 = (float16)(z2_8.s0123, z2_9.s0123, z2_8.s4567, z2_9.s4567);
    z3_12 = (float16)(z2_8.s89ab, z2_9.s89ab, z2_8.scdef, z2_9.scdef);
    z3_5 = (float16)(z2_10.s0123, z2_11.s0123, z2_10.s4567, z2_11.s4567);
    z3_13 = (float16)(z2_10.s89ab, z2_11.s89ab, z2_10.scdef, z2_11.scdef);
    z3_6 = (float16)(z2_12.s0123, z2_13.s0123, z2_12.s4567, z2_13.s4567);
    z3_14 = (float16)(z2_12.s89ab, z2_13.s89ab, z2_12.scdef, z2_13.scdef);
    z3_7 = (float16)(z2_14.s0123, z2_15.s0123, z2_14.s4567, z2_15.s4567);
    z3_15 = (float16)(z2_14.s89ab, z2_15.s89ab, z2_14.scdef, z2_15.scdef);
    float16 z4_0, z4_1, z4_2, z4_3, z4_4, z4_5, z4_6, z4_7, z4_8, z4_9, z4_10, z4_11, z4_12, z4_13, z4_14, z4_15;  // zipped in 32-byte units
    z4_0 = (float16)(z3_0.lo, z3_1.lo);
    z4_8 = (float16)(z3_0.hi, z3_1.hi);
    z4_1 = (float16)(z3_2.lo, z3_3.lo);
    z4_9 = (float16)(z3_2.hi, z3_3.hi);
    z4_2 = (float16)(z3_4.lo, z3_5.lo);
    z4_10 = (float16)(z3_4.hi, z3_5.hi);
    z4_3 = (float16)(z3_6.lo, z3_7.lo);
    z4_11 = (float16)(z3_6.hi, z3_7.hi);
    z4_4 = (float16)(z3_8.lo, z3_9.lo);
    z4_12 = (float16)(z3_8.hi, z3_9.hi);
    z4_5 = (float16)(z3_10.lo, z3_11.lo);
    z4_13 = (float16)(z3_10.hi, z3_11.hi);
    z4_6 = (float16)(z3_12.lo, z3_13.lo);
    z4_14 = (float16)(z3_12.hi, z3_13.hi);
    z4_7 = (float16)(z3_14.lo, z3_15.lo);
    z4_15 = (float16)(z3_14.hi, z3_15.hi);
    vstore16(z4_0, 0, dst + d_base);
    vstore16(z4_8, 0, dst + d_base + 3136u);
    vstore16(z4_4, 0, dst + d_base + 6272u);
    vstore16(z4_12, 0, dst + d_base + 9408u);
    vstore16(z4_2, 0, dst + d_base + 12544u);
    vstore16(z4_10, 0, dst + d_base + 15680u);
    vstore16(z4_6, 0, dst + d_base + 18816u);
    vstore16(z4_14, 0, dst + d_base + 21952u);
    vstore16(z4_1, 0, dst + d_base + 25088u);
    vstore16(z4_9, 0, dst + d_base + 28224u);
    vstore16(z4_5, 0, dst + d_base + 31360u);
    vstore16(z4_13, 0, dst + d_base + 34496u);
    vstore16(z4_3, 0, dst + d_base + 37632u);
    vstore16(z4_11, 0, dst + d_base + 40768u);
    vstore16(z4_7, 0, dst + d_base + 43904u);
    vstore16(z4_15, 0, dst + d_base + 47040u);
}
