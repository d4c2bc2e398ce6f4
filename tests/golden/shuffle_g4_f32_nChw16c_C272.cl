// clayout shuffle: f32 aBcd16b 1x272x56x56 -> f32 aBcd16b 1x272x56x56
// Each work-item moves a block of 272 elements at constant offsets, 4 at a time into the destination.
// Loops, outermost first: b:17 cd:3136 b:16; in the block: b:17 b:16
#pragma OPENCL FP_CONTRACT OFF

__kernel __attribute__((vec_type_hint(float4))) void shuffle_g4_f32_aBcd16b(__global const float *restrict src,
        __global float *restrict dst)
{
    const uint item = get_global_id(0);
    if (item >= 3136u)
        return;
    uint rest = item;
    const uint l1 = rest;
    const uint s_base = l1 * 16u;
    const uint d_base = l1 * 16u;
    const float16 line0 = vload16(0, src + s_base + 0u);
    const float16 line1 = vload16(0, src + s_base + 50176u);
    const float16 line2 = vload16(0, src + s_base + 100352u);
    const float16 line3 = vload16(0, src + s_base + 150528u);
    const float16 line4 = vload16(0, src + s_base + 200704u);
    const float16 line5 = vload16(0, src + s_base + 250880u);
    const float16 line6 = vload16(0, src + s_base + 301056u);
    const float16 line7 = vload16(0, src + s_base + 351232u);
    const float16 line8 = vload16(0, src + s_base + 401408u);
    const float16 line9 = vload16(0, src + s_base + 451584u);
    const float16 line10 = vload16(0, src + s_base + 501760u);
    const float16 line11 = vload16(0, src + s_base + 551936u);
    const float16 line12 = vload16(0, src + s_base + 602112u);
    const float16 line13 = vload16(0, src + s_base + 652288u);
    const float16 line14 = vload16(0, src + s_base + 702464u);
    const float16 line15 = vload16(0, src + s_base + 752640u);
    const float16 line16 = vload16(0, src + s_base + 802816u);
    vstore4((float4)(line0.s0, line0.s4, line0.s8, line0.sc), 0, dst + d_base + 0u);
    vstore4((float4)(line1.s0, line1.s4, line1.s8, line1.sc), 0, dst + d_base + 4u);
    vstore4((float4)(line2.s0, line2.s4, line2.s8, line2.sc), 0, dst + d_base + 8u);
    vstore4((float4)(line3.s0, line3.s4, line3.s8, line3.sc), 0, dst + d_base + 12u);
    vstore4((float4)(line4.s0, line4.s4, line4.s8, line4.sc), 0, dst + d_base + 50176u);
    vstore4((float4)(line5.s0, line5.s4, line5.s8, line5.sc), 0, dst + d_base + 50180u);
    vstore4((float4)(line6.s0, line6.s4, line6.s8, line6.sc), 0, dst + d_base + 50184u);
    vstore4((float4)(line7.s0, line7.s4, line7.s8, line7.sc), 0, dst + d_base + 50188u);
    vstore4((float4)(line8.s0, line8.s4, line8.s8, line8.sc), 0, dst + d_base + 100352u);
    vstore4((float4)(line9.s0, line9.s4, line9.s8, line9.sc), 0, dst + d_base + 100356u);
    vstore4((float4)(line10.s0, line10.s4, line10.s8, line10.sc), 0, dst + d_base + 100360u);
    vstore4((float4)(line11.s0, line11.s4, line11.s8, line11.sc), 0, dst + d_base + 100364u);
    vstore4((float4)(line12.s0, line12.s4, line12.s8, line12.sc), 0, dst + d_base + 150528u);
    vstore4((float4)(line13.s0, line13.s4, line13.s8, line13.sc), 0, dst + d_base + 150532u);
    vstore4((float4)(line14.s0, line14.s4, line14.s8, line14.sc), 0, dst + d_base + 150536u);
    vstore4((float4)(line15.s0, line15.s4, line15.s8, line15.sc), 0, dst + d_base + 150540u);
    vstore4((float4)(line16.s0, line16.s4, line16.s8, line16.sc), 0, dst + d_base + 200704u);
    vstore4((float4)(line0.s1, line0.s5, line0.s9, line0.sd), 0, dst + d_base + 200708u);
    vstore4((float4)(line1.s1, line1.s5, line1.s9, line1.sd), 0, dst + d_base + 200712u);
    vstore4((float4)(line2.s1, line2.s5, line2.s9, line2.sd), 0, dst + d_base + 200716u);
    vstore4((float4)(line3.s1, line3.s5, line3.s9, line3.sd), 0, dst + d_base + 250880u);
    vstore4((float4)(line4.s1, line4.s5, line4.s9, line4.sd), 0, dst + d_base + 250884u);
    vstore4((float4)(line5.s1, line5.s5, line5.s9, line5.sd), 0, dst + d_base + 250888u);
    vstore4((float4)(line6.s1, line6.s5, line6.s9, line6.sd), 0, dst + d_base + 250892u);
    vstore4((float4)(line7.s1, line7.s5, line7.s9, line7.sd), 0, dst + d_base + 301056u);
    vstore4((float4)(line8.s1, line8.s5, line8.s9, line8.sd), 0, dst + d_base + 301060u);
    vstore4((float4)(line9.s1, line9.s5, line9.s9, line9.sd), 0, dst + d_base + 301064u);
    vstore4((float4)(line10.s1, line10.s5, line10.s9, line10.sd), 0, dst + d_base + 301068u);
    vstore4((float4)(line11.s1, line11.s5, line11.s9, line11.sd), 0, dst + d_base + 351232u);
    vstore4((float4)(line12.s1, line12.s5, line12.s9, line12.sd), 0, dst + d_base + 351236u);
    vstore4((float4)(line13.s1, line13.s5, line13.s9, line13.sd), 0, dst + d_base + 351240u);
    vstore4((float4)(line14.s1, line14.s5, line14.s9, line14.sd), 0, dst + d_base + 351244u);
    vstore4((float4)(line15.s1, line15.s5, line15.s9, line15.sd), 0, dst + d_base + 401408u);
    vstore4((float4)(line16.s1, line16.s5, line16.s9, line16.sd), 0, dst + d_base + 401412u);
    vstore4((float4)(line0.s2, line0.s6, line0.sa, line0.se), 0, dst + d_base + 401416u);
    vstore4((float4)(line1.s2, line1.s6, line1.sa, line1.se), 0, dst + d_base + 401420u);
    vstore4((float4)(line2.s2, line2.s6, line2.sa, line2.se), 0, dst + d_base + 451584u);
    vstore4((float4)(line3.s2, line3.s6, line3.sa, line3.se), 0, dst + d_base + 451588u);
    vstore4((float4)(line4.s2, line4.s6, line4.sa, line4.se), 0, dst + d_base + 451592u);
    vstore4((float4)(line5.s2, line5.s6, line5.sa, line5.se), 0, dst + d_base + 451596u);
    vstore4((float4)(line6.s2, line6.s6, line6.sa, line6.se), 0, dst + d_base + 501760u);
    vstore4((float4)(line7.s2, line7.s6, line7.sa, line7.se), 0, dst + d_base + 501764u);
    vstore4((float4)(line8.s2, line8.s6, line8.sa, line8.se), 0, dst + d_base + 501768u);
    vstore4((float4)(line9.s2, line9.s6, line9.sa, line9.se), 0, dst + d_base + 501772u);
    vstore4((float4)(line10.s2, line10.s6, line10.sa, line10.se), 0, dst + d_base + 551936u);
    vstore4((float4)(line11.s2, line11.s6, line11.sa, line11.se), 0, dst + d_base + 551940u);
    vstore4((float4)(line12.s2, line12.s6, line12.sa, line12.se), 0, dst + d_base + 551944u);
    vstore4((float4)(line13.s2, line13.s6, line13.sa, line13.se), 0, dst + d_base + 551948u);
    vstore4((float4)(line14.s2, line14.s6, line14.sa, line14.se), 0, dst + d_base + 602112u);
    vstore4((float4)(line15.s2, line15.s6, line15.sa, line15.se), 0, dst + d_base + 602116u);
    vstore4((float4)(line16.s2, line16.s6, line16.sa, line16.se), 0, dst + d_base + 602120u);
    vstore4((float4)(line0.s3, line0.s7, line0.sb, line0.sf), 0, dst + d_base + 602124u);
    vstore4((float4)(line1.s3, line1.s7, line1.sb, line1.sf), 0, dst + d_base + 652288u);
    vstore4((float4)(line2.s3, line2.s7, line2.sb, line2.sf), 0, dst + d_base + 652292u);
    vstore4((float4)(line3.s3, line3.s7, line3.sb, line3.sf), 0, dst + d_base + 652296u);
    vstore4((float4)(line4.s3, line4.s7, line4.sb, line4.sf), 0, dst + d_base + 652300u);
    vstore4((float4)(line5.s3, line5.s7, line5.sb, line5.sf), 0, dst + d_base + 702464u);
    vstore4((float4)(line6.s3, line6.s7, line6.sb, line6.sf), 0, dst + d_base + 702468u);
    vstore4((float4)(line7.s3, line7.s7, line7.sb, line7.sf), 0, dst + d_base + 702472u);
    vstore4((float4)(line8.s3, line8.s7, line8.sb, line8.sf), 0, dst + d_base + 702476u);
    vstore4((float4)(line9.s3, line9.s7, line9.sb, line9.sf), 0, dst + d_base + 752640u);
    vstore4((float4)(line10.s3, line10.s7, line10.sb, line10.sf), 0, dst + d_base + 752644u);
    vstore4((float4)(line11.s3, line11.s7, line11.sb, line11.sf), 0, dst + d_base + 752648u);
    vstore4((float4)(line12.s3, line12.s7, line12.sb, line12.sf), 0, dst + d_base + 752652u);
    vstore4((float4)(line13.s3, line13.s7, line13.sb, line13.sf), 0, dst + d_base + 802816u);
    vstore4((float4)(line14.s3, line14.s7, line14.sb, line14.sf), 0, dst + d_base + 802820u);
    vstore4((float4)(line15.s3, line15.s7, line15.sb, line15.sf), 0, dst + d_base + 802824u);
    vstore4((float4)(line16.s3, line16.s7, line16.sb, line16.sf), 0, dst + d_base + 802828u);
}
