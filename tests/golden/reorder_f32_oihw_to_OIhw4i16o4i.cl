// clayout reorder: f32 abcd 256x256x3x3 -> f32 ABcd4b16a4b 256x256x3x3
// Each work-item moves a block of 256 elements at constant offsets, 4 at a time into the destination.
// Loops, outermost first: a:16 b:16 cd:9 b:4 a:16 b:4; in the block: b:4 a:16 b:4
#pragma OPENCL FP_CONTRACT OFF

__kernel __attribute__((vec_type_hint(float4))) void reorder_f32_abcd_to_f32_ABcd4b16a4b(__global const float *restrict src,
        __global float *restrict dst)
{
    // Strided loads stay scalar: PoCL's LLVM would make each run a gather
    // (vgatherqps), 1.3-1.6x slower on an AMD EPYC.
    __global const volatile float *strided_src = src;
    const uint item = get_global_id(0);
    if (item >= 2304u)
        return;
    uint rest = item;
    const uint l2 = rest % 9u;
    rest /= 9u;
    const uint l1 = rest % 16u;
    rest /= 16u;
    const uint l0 = rest;
    const uint s_base = l2 + l1 * 144u + l0 * 36864u;
    const uint d_base = l2 * 256u + l1 * 2304u + l0 * 36864u;
    vstore4((float4)(strided_src[s_base + 0u], strided_src[s_base + 9u], strided_src[s_base + 18u], strided_src[s_base + 27u]), 0, dst + d_base + 0u);
    vstore4((float4)(strided_src[s_base + 2304u], strided_src[s_base + 2313u], strided_src[s_base + 2322u], strided_src[s_base + 2331u]), 0, dst + d_base + 4u);
    vstore4((float4)(strided_src[s_base + 4608u], strided_src[s_base + 4617u], strided_src[s_base + 4626u], strided_src[s_base + 4635u]), 0, dst + d_base + 8u);
    vstore4((float4)(strided_src[s_base + 6912u], strided_src[s_base + 6921u], strided_src[s_base + 6930u], strided_src[s_base + 6939u]), 0, dst + d_base + 12u);
    vstore4((float4)(strided_src[s_base + 9216u], strided_src[s_base + 9225u], strided_src[s_base + 9234u], strided_src[s_base + 9243u]), 0, dst + d_base + 16u);
    vstore4((float4)(strided_src[s_base + 11520u], strided_src[s_base + 11529u], strided_src[s_base + 11538u], strided_src[s_base + 11547u]), 0, dst + d_base + 20u);
    vstore4((float4)(strided_src[s_base + 13824u], strided_src[s_base + 13833u], strided_src[s_base + 13842u], strided_src[s_base + 13851u]), 0, dst + d_base + 24u);
    vstore4((float4)(strided_src[s_base + 16128u], strided_src[s_base + 16137u], strided_src[s_base + 16146u], strided_src[s_base + 16155u]), 0, dst + d_base + 28u);
    vstore4((float4)(strided_src[s_base + 18432u], strided_src[s_base + 18441u], strided_src[s_base + 18450u], strided_src[s_base + 18459u]), 0, dst + d_base + 32u);
    vstore4((float4)(strided_src[s_base + 20736u], strided_src[s_base + 20745u], strided_src[s_base + 20754u], strided_src[s_base + 20763u]), 0, dst + d_base + 36u);
    vstore4((float4)(strided_src[s_base + 23040u], strided_src[s_base + 23049u], strided_src[s_base + 23058u], strided_src[s_base + 23067u]), 0, dst + d_base + 40u);
    vstore4((float4)(strided_src[s_base + 25344u], strided_src[s_base + 25353u], strided_src[s_base + 25362u], strided_src[s_base + 25371u]), 0, dst + d_base + 44u);
    vstore4((float4)(strided_src[s_base + 27648u], strided_src[s_base + 27657u], strided_src[s_base + 27666u], strided_src[s_base + 27675u]), 0, dst + d_base + 48u);
    vstore4((float4)(strided_src[s_base + 29952u], strided_src[s_base + 29961u], strided_src[s_base + 29970u], strided_src[s_base + 29979u]), 0, dst + d_base + 52u);
    vstore4((float4)(strided_src[s_base + 32256u], strided_src[s_base + 32265u], strided_src[s_base + 32274u], strided_src[s_base + 32283u]), 0, dst + d_base + 56u);
    vstore4((float4)(strided_src[s_base + 34560u], strided_src[s_base + 34569u], strided_src[s_base + 34578u], strided_src[s_base + 34587u]), 0, dst + d_base + 60u);
    vstore4((float4)(strided_src[s_base + 36u], strided_src[s_base + 45u], strided_src[s_base + 54u], strided_src[s_base + 63u]), 0, dst + d_base + 64u);
    vstore4((float4)(strided_src[s_base + 2340u], strided_src[s_base + 2349u], strided_src[s_base + 2358u], strided_src[s_base + 2367u]), 0, dst + d_base + 68u);
    vstore4((float4)(strided_src[s_base + 4644u], strided_src[s_base + 4653u], strided_src[s_base + 4662u], strided_src[s_base + 4671u]), 0, dst + d_base + 72u);
    vstore4((float4)(strided_src[s_base + 6948u], strided_src[s_base + 6957u], strided_src[s_base + 6966u], strided_src[s_base + 6975u]), 0, dst + d_base + 76u);
    vstore4((float4)(strided_src[s_base + 9252u], strided_src[s_base + 9261u], strided_src[s_base + 9270u], strided_src[s_base + 9279u]), 0, dst + d_base + 80u);
    vstore4((float4)(strided_src[s_base + 11556u], strided_src[s_base + 11565u], strided_src[s_base + 11574u], strided_src[s_base + 11583u]), 0, dst + d_base + 84u);
    vstore4((float4)(strided_src[s_base + 13860u], strided_src[s_base + 13869u], strided_src[s_base + 13878u], strided_src[s_base + 13887u]), 0, dst + d_base + 88u);
    vstore4((float4)(strided_src[s_base + 16164u], strided_src[s_base + 16173u], strided_src[s_base + 16182u], strided_src[s_base + 16191u]), 0, dst + d_base + 92u);
    vstore4((float4)(strided_src[s_base + 18468u], strided_src[s_base + 18477u], strided_src[s_base + 18486u], strided_src[s_base + 18495u]), 0, dst + d_base + 96u);
    vstore4((float4)(strided_src[s_base + 20772u], strided_src[s_base + 20781u], strided_src[s_base + 20790u], strided_src[s_base + 20799u]), 0, dst + d_base + 100u);
    vstore4((float4)(strided_src[s_base + 23076u], strided_src[s_base + 23085u], strided_src[s_base + 23094u], strided_src[s_base + 23103u]), 0, dst + d_base + 104u);
    vstore4((float4)(strided_src[s_base + 25380u], strided_src[s_base + 25389u], strided_src[s_base + 25398u], strided_src[s_base + 25407u]), 0, dst + d_base + 108u);
    vstore4((float4)(strided_src[s_base + 27684u], strided_src[s_base + 27693u], strided_src[s_base + 27702u], strided_src[s_base + 27711u]), 0, dst + d_base + 112u);
    vstore4((float4)(strided_src[s_base + 29988u], strided_src[s_base + 29997u], strided_src[s_base + 30006u], strided_src[s_base + 30015u]), 0, dst + d_base + 116u);
    vstore4((float4)(strided_src[s_base + 32292u], strided_src[s_base + 32301u], strided_src[s_base + 32310u], strided_src[s_base + 32319u]), 0, dst + d_base + 120u);
    vstore4((float4)(strided_src[s_base + 34596u], strided_src[s_base + 34605u], strided_src[s_base + 34614u], strided_src[s_base + 34623u]), 0, dst + d_base + 124u);
    vstore4((float4)(strided_src[s_base + 72u], strided_src[s_base + 81u], strided_src[s_base + 90u], strided_src[s_base + 99u]), 0, dst + d_base + 128u);
    vstore4((float4)(strided_src[s_base + 2376u], strided_src[s_base + 2385u], strided_src[s_base + 2394u], strided_src[s_base + 2403u]), 0, dst + d_base + 132u);
    vstore4((float4)(strided_src[s_base + 4680u], strided_src[s_base + 4689u], strided_src[s_base + 4698u], strided_src[s_base + 4707u]), 0, dst + d_base + 136u);
    vstore4((float4)(strided_src[s_base + 6984u], strided_src[s_base + 6993u], strided_src[s_base + 7002u], strided_src[s_base + 7011u]), 0, dst + d_base + 140u);
    vstore4((float4)(strided_src[s_base + 9288u], strided_src[s_base + 9297u], strided_src[s_base + 9306u], strided_src[s_base + 9315u]), 0, dst + d_base + 144u);
    vstore4((float4)(strided_src[s_base + 11592u], strided_src[s_base + 11601u], strided_src[s_base + 11610u], strided_src[s_base + 11619u]), 0, dst + d_base + 148u);
    vstore4((float4)(strided_src[s_base + 13896u], strided_src[s_base + 13905u], strided_src[s_base + 13914u], strided_src[s_base + 13923u]), 0, dst + d_base + 152u);
    vstore4((float4)(strided_src[s_base + 16200u], strided_src[s_base + 16209u], strided_src[s_base + 16218u], strided_src[s_base + 16227u]), 0, dst + d_base + 156u);
    vstore4((float4)(strided_src[s_base + 18504u], strided_src[s_base + 18513u], strided_src[s_base + 18522u], strided_src[s_base + 18531u]), 0, dst + d_base + 160u);
    vstore4((float4)(strided_src[s_base + 20808u], strided_src[s_base + 20817u], strided_src[s_base + 20826u], strided_src[s_base + 20835u]), 0, dst + d_base + 164u);
    vstore4((float4)(strided_src[s_base + 23112u], strided_src[s_base + 23121u], strided_src[s_base + 23130u], strided_src[s_base + 23139u]), 0, dst + d_base + 168u);
    vstore4((float4)(strided_src[s_base + 25416u], strided_src[s_base + 25425u], strided_src[s_base + 25434u], strided_src[s_base + 25443u]), 0, dst + d_base + 172u);
    vstore4((float4)(strided_src[s_base + 27720u], strided_src[s_base + 27729u], strided_src[s_base + 27738u], strided_src[s_base + 27747u]), 0, dst + d_base + 176u);
    vstore4((float4)(strided_src[s_base + 30024u], strided_src[s_base + 30033u], strided_src[s_base + 30042u], strided_src[s_base + 30051u]), 0, dst + d_base + 180u);
    vstore4((float4)(strided_src[s_base + 32328u], strided_src[s_base + 32337u], strided_src[s_base + 32346u], strided_src[s_base + 32355u]), 0, dst + d_base + 184u);
    vstore4((float4)(strided_src[s_base + 34632u], strided_src[s_base + 34641u], strided_src[s_base + 34650u], strided_src[s_base + 34659u]), 0, dst + d_base + 188u);
    vstore4((float4)(strided_src[s_base + 108u], strided_src[s_base + 117u], strided_src[s_base + 126u], strided_src[s_base + 135u]), 0, dst + d_base + 192u);
    vstore4((float4)(strided_src[s_base + 2412u], strided_src[s_base + 2421u], strided_src[s_base + 2430u], strided_src[s_base + 2439u]), 0, dst + d_base + 196u);
    vstore4((float4)(strided_src[s_base + 4716u], strided_src[s_base + 4725u], strided_src[s_base + 4734u], strided_src[s_base + 4743u]), 0, dst + d_base + 200u);
    vstore4((float4)(strided_src[s_base + 7020u], strided_src[s_base + 7029u], strided_src[s_base + 7038u], strided_src[s_base + 7047u]), 0, dst + d_base + 204u);
    vstore4((float4)(strided_src[s_base + 9324u], strided_src[s_base + 9333u], strided_src[s_base + 9342u], strided_src[s_base + 9351u]), 0, dst + d_base + 208u);
    vstore4((float4)(strided_src[s_base + 11628u], strided_src[s_base + 11637u], strided_src[s_base + 11646u], strided_src[s_base + 11655u]), 0, dst + d_base + 212u);
    vstore4((float4)(strided_src[s_base + 13932u], strided_src[s_base + 13941u], strided_src[s_base + 13950u], strided_src[s_base + 13959u]), 0, dst + d_base + 216u);
    vstore4((float4)(strided_src[s_base + 16236u], strided_src[s_base + 16245u], strided_src[s_base + 16254u], strided_src[s_base + 16263u]), 0, dst + d_base + 220u);
    vstore4((float4)(strided_src[s_base + 18540u], strided_src[s_base + 18549u], strided_src[s_base + 18558u], strided_src[s_base + 18567u]), 0, dst + d_base + 224u);
    vstore4((float4)(strided_src[s_base + 20844u], strided_src[s_base + 20853u], strided_src[s_base + 20862u], strided_src[s_base + 20871u]), 0, dst + d_base + 228u);
    vstore4((float4)(strided_src[s_base + 23148u], strided_src[s_base + 23157u], strided_src[s_base + 23166u], strided_src[s_base + 23175u]), 0, dst + d_base + 232u);
    vstore4((float4)(strided_src[s_base + 25452u], strided_src[s_base + 25461u], strided_src[s_base + 25470u], strided_src[s_base + 25479u]), 0, dst + d_base + 236u);
    vstore4((float4)(strided_src[s_base + 27756u], strided_src[s_base + 27765u], strided_src[s_base + 27774u], strided_src[s_base + 27783u]), 0, dst + d_base + 240u);
    vstore4((float4)(strided_src[s_base + 30060u], strided_src[s_base + 30069u], strided_src[s_base + 30078u], strided_src[s_base + 30087u]), 0, dst + d_base + 244u);
    vstore4((float4)(strided_src[s_base + 32364u], strided_src[s_base + 32373u], strided_src[s_base + 32382u], strided_src[s_base + 32391u]), 0, dst + d_base + 248u);
    vstore4((float4)(strided_src[s_base + 34668u], strided_src[s_base + 34677u], strided_src[s_base + 34686u], strided_src[s_base + 34695u]), 0, dst + d_base + 252u);
}
