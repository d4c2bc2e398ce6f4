// clayout reorder: f32 abcd 8x256x56x56 -> s8 aBcd16b 8x256x56x56
// Each work-item transposes a 16x16 block in registers.
// Loops, outermost first: a:8 b:16 cd:196 cd:16 b:16
#pragma OPENCL FP_CONTRACT OFF

__kernel void reorder_f32_abcd_to_s8_aBcd16b(__global const float *restrict src,
        __global char *restrict dst, __global const float *restrict src_scales)
{
    const uint item = get_global_id(0);
    if (item >= 25088u)
        return;
    uint rest = item;
    const uint l2 = rest % 196u;
    rest /= 196u;
    const uint l1 = rest % 16u;
    rest /= 16u;
    const uint l0 = rest;
    const uint i1_base = l1 * 16u;
    const uint d_base = l2 * 256u + l1 * 50176u + l0 * 802816u;
    const uint s_base = l2 * 16u + l0 * 802816u;
    char16 r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15;
    {
        const int k = 0;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r0 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 1;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r1 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 2;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r2 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 3;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r3 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 4;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r4 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 5;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r5 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 6;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r6 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 7;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r7 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 8;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r8 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 9;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r9 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 10;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r10 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 11;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r11 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 12;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r12 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 13;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r13 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 14;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r14 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    {
        const int k = 15;
        const uint i1 = i1_base + k;
        const uint s_off = s_base + i1 * 3136u;
        float16 x = vload16(0, src + s_off);
        x = (float)src_scales[i1] * x;
        r15 = convert_char16(as_int16(clamp(select(x, (float16)0, isnan(x)), -128.0f, 127.0f) + 12582912.0f) - 0x4b400000);
    }
    // Transposed in 4 rounds of zips (one unpack instruction each): row j
    // of the last round holds column bitrev(j).
    char16 z1_0, z1_1, z1_2, z1_3, z1_4, z1_5, z1_6, z1_7, z1_8, z1_9, z1_10, z1_11, z1_12, z1_13, z1_14, z1_15;  // zipped in 1-byte units
    {
        const char16 a = r0, b = r1;
        z1_0 = (char16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7);
        z1_8 = (char16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf);
    }
    {
        const char16 a = r2, b = r3;
        z1_1 = (char16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7);
        z1_9 = (char16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf);
    }
    {
        const char16 a = r4, b = r5;
        z1_2 = (char16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7);
        z1_10 = (char16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf);
    }
    {
        const char16 a = r6, b = r7;
        z1_3 = (char16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7);
        z1_11 = (char16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf);
    }
    {
        const char16 a = r8, b = r9;
        z1_4 = (char16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7);
        z1_12 = (char16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf);
    }
    {
        const char16 a = r10, b = r11;
        z1_5 = (char16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7);
        z1_13 = (char16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf);
    }
    {
        const char16 a = r12, b = r13;
        z1_6 = (char16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7);
        z1_14 = (char16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf);
    }
    {
        const char16 a = r14, b = r15;
        z1_7 = (char16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7);
        z1_15 = (char16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf);
    }
    char16 z2_0, z2_1, z2_2, z2_3, z2_4, z2_5, z2_6, z2_7, z2_8, z2_9, z2_10, z2_11, z2_12, z2_13, z2_14, z2_15;  // zipped in 2-byte units
    {
        const short8 a = as_short8(z1_0), b = as_short8(z1_1);
        z2_0 = as_char16((short8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_8 = as_char16((short8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const short8 a = as_short8(z1_2), b = as_short8(z1_3);
        z2_1 = as_char16((short8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_9 = as_char16((short8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const short8 a = as_short8(z1_4), b = as_short8(z1_5);
        z2_2 = as_char16((short8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_10 = as_char16((short8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const short8 a = as_short8(z1_6), b = as_short8(z1_7);
        z2_3 = as_char16((short8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_11 = as_char16((short8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const short8 a = as_short8(z1_8), b = as_short8(z1_9);
        z2_4 = as_char16((short8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_12 = as_char16((short8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const short8 a = as_short8(z1_10), b = as_short8(z1_11);
        z2_5 = as_char16((short8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_13 = as_char16((short8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const short8 a = as_short8(z1_12), b = as_short8(z1_13);
        z2_6 = as_char16((short8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_14 = as_char16((short8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const short8 a = as_short8(z1_14), b = as_short8(z1_15);
        z2_7 = as_char16((short8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z2_15 = as_char16((short8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    char16 z3_0, z3_1, z3_2, z3_3, z3_4, z3_5, z3_6, z3_7, z3_8, z3_9, z3_10, z3_11, z3_12, z3_13, z3_14, z3_15;  // zipped in 4-byte units
    {
        const int4 a = as_int4(z2_0), b = as_int4(z2_1);
        z3_0 = as_char16((int4)(a.s0, b.s0, a.s1, b.s1));
        z3_8 = as_char16((int4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const int4 a = as_int4(z2_2), b = as_int4(z2_3);
        z3_1 = as_char16((int4)(a.s0, b.s0, a.s1, b.s1));
        z3_9 = as_char16((int4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const int4 a = as_int4(z2_4), b = as_int4(z2_5);
        z3_2 = as_char16((int4)(a.s0, b.s0, a.s1, b.s1));
        z3_10 = as_char16((int4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const int4 a = as_int4(z2_6), b = as_int4(z2_7);
        z3_3 = as_char16((int4)(a.s0, b.s0, a.s1, b.s1));
        z3_11 = as_char16((int4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const int4 a = as_int4(z2_8), b = as_int4(z2_9);
        z3_4 = as_char16((int4)(a.s0, b.s0, a.s1, b.s1));
        z3_12 = as_char16((int4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const int4 a = as_int4(z2_10), b = as_int4(z2_11);
        z3_5 = as_char16((int4)(a.s0, b.s0, a.s1, b.s1));
        z3_13 = as_char16((int4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const int4 a = as_int4(z2_12), b = as_int4(z2_13);
        z3_6 = as_char16((int4)(a.s0, b.s0, a.s1, b.s1));
        z3_14 = as_char16((int4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const int4 a = as_int4(z2_14), b = as_int4(z2_15);
        z3_7 = as_char16((int4)(a.s0, b.s0, a.s1, b.s1));
        z3_15 = as_char16((int4)(a.s2, b.s2, a.s3, b.s3));
    }
    char16 z4_0, z4_1, z4_2, z4_3, z4_4, z4_5, z4_6, z4_7, z4_8, z4_9, z4_10, z4_11, z4_12, z4_13, z4_14, z4_15;  // zipped in 8-byte units
    {
        const long2 a = as_long2(z3_0), b = as_long2(z3_1);
        z4_0 = as_char16((long2)(a.s0, b.s0));
        z4_8 = as_char16((long2)(a.s1, b.s1));
    }
    {
        const long2 a = as_long2(z3_2), b = as_long2(z3_3);
        z4_1 = as_char16((long2)(a.s0, b.s0));
        z4_9 = as_char16((long2)(a.s1, b.s1));
    }
    {
        const long2 a = as_long2(z3_4), b = as_long2(z3_5);
        z4_2 = as_char16((long2)(a.s0, b.s0));
        z4_10 = as_char16((long2)(a.s1, b.s1));
    }
    {
        const long2 a = as_long2(z3_6), b = as_long2(z3_7);
        z4_3 = as_char16((long2)(a.s0, b.s0));
        z4_11 = as_char16((long2)(a.s1, b.s1));
    }
    {
        const long2 a = as_long2(z3_8), b = as_long2(z3_9);
        z4_4 = as_char16((long2)(a.s0, b.s0));
        z4_12 = as_char16((long2)(a.s1, b.s1));
    }
    {
        const long2 a = as_long2(z3_10), b = as_long2(z3_11);
        z4_5 = as_char16((long2)(a.s0, b.s0));
        z4_13 = as_char16((long2)(a.s1, b.s1));
    }
    {
        const long2 a = as_long2(z3_12), b = as_long2(z3_13);
        z4_6 = as_char16((long2)(a.s0, b.s0));
        z4_14 = as_char16((long2)(a.s1, b.s1));
    }
    {
        const long2 a = as_long2(z3_14), b = as_long2(z3_15);
        z4_7 = as_char16((long2)(a.s0, b.s0));
        z4_15 = as_char16((long2)(a.s1, b.s1));
    }
    *(__global char16 *)(dst + d_base) = z4_0;
    *(__global char16 *)(dst + d_base + 16u) = z4_8;
    *(__global char16 *)(dst + d_base + 32u) = z4_4;
    *(__global char16 *)(dst + d_base + 48u) = z4_12;
    *(__global char16 *)(dst + d_base + 64u) = z4_2;
    *(__global char16 *)(dst + d_base + 80u) = z4_10;
    *(__global char16 *)(dst + d_base + 96u) = z4_6;
    *(__global char16 *)(dst + d_base + 112u) = z4_14;
    *(__global char16 *)(dst + d_base + 128u) = z4_1;
    *(__global char16 *)(dst + d_base + 144u) = z4_9;
    *(__global char16 *)(dst + d_base + 160u) = z4_5;
    *(__global char16 *)(dst + d_base + 176u) = z4_13;
    *(__global char16 *)(dst + d_base + 192u) = z4_3;
    *(__global char16 *)(dst + d_base + 208u) = z4_11;
    *(__global char16 *)(dst + d_base + 224u) = z4_7;
    *(__global char16 *)(dst + d_base + 240u) = z4_15;
}
