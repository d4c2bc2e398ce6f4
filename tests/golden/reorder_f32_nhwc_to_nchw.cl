// clayout reorder: f32 acdb 8x256x56x56 -> f32 abcd 8x256x56x56
// Each work-item transposes a 8x8 block in registers.
// Loops, outermost first: a:8 b:32 b:8 cd:3136
#pragma OPENCL FP_CONTRACT OFF

__kernel void reorder_f32_acdb_to_f32_abcd(__global const float *restrict src,
        __global float *restrict dst)
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
    float8 r0, r1, r2, r3, r4, r5, r6, r7;
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
    // Transposed in 3 rounds of zips (one unpack instruction each): row j
    // of the last round holds column bitrev(j).
    float8 z1_0, z1_1, z1_2, z1_3, z1_4, z1_5, z1_6, z1_7;  // zipped in 4-byte units
    {
        const int8 a = as_int8(r0), b = as_int8(r1);
        z1_0 = as_float8((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z1_4 = as_float8((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const int8 a = as_int8(r2), b = as_int8(r3);
        z1_1 = as_float8((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z1_5 = as_float8((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const int8 a = as_int8(r4), b = as_int8(r5);
        z1_2 = as_float8((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z1_6 = as_float8((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    {
        const int8 a = as_int8(r6), b = as_int8(r7);
        z1_3 = as_float8((int8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3));
        z1_7 = as_float8((int8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7));
    }
    float8 z2_0, z2_1, z2_2, z2_3, z2_4, z2_5, z2_6, z2_7;  // zipped in 8-byte units
    {
        const long4 a = as_long4(z1_0), b = as_long4(z1_1);
        z2_0 = as_float8((long4)(a.s0, b.s0, a.s1, b.s1));
        z2_4 = as_float8((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const long4 a = as_long4(z1_2), b = as_long4(z1_3);
        z2_1 = as_float8((long4)(a.s0, b.s0, a.s1, b.s1));
        z2_5 = as_float8((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const long4 a = as_long4(z1_4), b = as_long4(z1_5);
        z2_2 = as_float8((long4)(a.s0, b.s0, a.s1, b.s1));
        z2_6 = as_float8((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    {
        const long4 a = as_long4(z1_6), b = as_long4(z1_7);
        z2_3 = as_float8((long4)(a.s0, b.s0, a.s1, b.s1));
        z2_7 = as_float8((long4)(a.s2, b.s2, a.s3, b.s3));
    }
    float8 z3_0, z3_1, z3_2, z3_3, z3_4, z3_5, z3_6, z3_7;  // zipped in 16-byte units
    z3_0 = (float8)(z2_0.lo, z2_1.lo);
    z3_4 = (float8)(z2_0.hi, z2_1.hi);
    z3_1 = (float8)(z2_2.lo, z2_3.lo);
    z3_5 = (float8)(z2_2.hi, z2_3.hi);
    z3_2 = (float8)(z2_4.lo, z2_5.lo);
    z3_6 = (float8)(z2_4.hi, z2_5.hi);
    z3_3 = (float8)(z2_6.lo, z2_7.lo);
    z3_7 = (float8)(z2_6.hi, z2_7.hi);
    vstore8(z3_0, 0, dst + d_base);
    vstore8(z3_4, 0, dst + d_base + 3136u);
    vstore8(z3_2, 0, dst + d_base + 6272u);
    vstore8(z3_6, 0, dst + d_base + 9408u);
    vstore8(z3_1, 0, dst + d_base + 12544u);
    vstore8(z3_5, 0, dst + d_base + 15680u);
    vstore8(z3_3, 0, dst + d_base + 18816u);
    vstore8(z3_7, 0, dst + d_base + 21952u);
}
