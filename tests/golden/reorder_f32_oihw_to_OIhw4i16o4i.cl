// clayout reorder: f32 abcd 256x256x3x3 -> f32 ABcd4b16a4b 256x256x3x3
// Each work-item moves a block of 256 elements at constant offsets, 4 at a time into the destination.
// Loops, outermost first: a:16 b:16 cd:9 b:4 a:16 b:4; in the block: b:4 a:16 b:4
#pragma OPENCL FP_CONTRACT OFF

__kernel __attribute__((vec_type_hint(float4))) void reorder_f32_abcd_to_f32_ABcd4b16a4b(__global const float *restrict src,
        __global float *restrict dst)
{
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
    vstore4((float4)(src[s_base + 0u], src[s_base + 9u], src[s_base + 18u], src[s_base + 27u]), 0, dst + d_base + 0u);
    vstore4((float4)(src[s_base + 2304u], src[s_base + 2313u], src[s_base + 2322u], src[s_base + 2331u]), 0, dst + d_base + 4u);
    vstore4((float4)(src[s_base + 4608u], src[s_base + 4617u], src[s_base + 4626u], src[s_base + 4635u]), 0, dst + d_base + 8u);
    vstore4((float4)(src[s_base + 6912u], src[s_base + 6921u], src[s_base + 6930u], src[s_base + 6939u]), 0, dst + d_base + 12u);
    vstore4((float4)(src[s_base + 9216u], src[s_base + 9225u], src[s_base + 9234u], src[s_base + 9243u]), 0, dst + d_base + 16u);
    vstore4((float4)(src[s_base + 11520u], src[s_base + 11529u], src[s_base + 11538u], src[s_base + 11547u]), 0, dst + d_base + 20u);
    vstore4((float4)(src[s_base + 13824u], src[s_base + 13833u], src[s_base + 13842u], src[s_base + 13851u]), 0, dst + d_base + 24u);
    vstore4((float4)(src[s_base + 16128u], src[s_base + 16137u], src[s_base + 16146u], src[s_base + 16155u]), 0, dst + d_base + 28u);
    vstore4((float4)(src[s_base + 18432u], src[s_base + 18441u], src[s_base + 18450u], src[s_base + 18459u]), 0, dst + d_base + 32u);
    vstore4((float4)(src[s_base + 20736u], src[s_base + 20745u], src[s_base + 20754u], src[s_base + 20763u]), 0, dst + d_base + 36u);
    vstore4((float4)(src[s_base + 23040u], src[s_base + 23049u], src[s_base + 23058u], src[s_base + 23067u]), 0, dst + d_base + 40u);
    vstore4((float4)(src[s_base + 25344u], src[s_base + 25353u], src[s_base + 25362u], src[s_base + 25371u]), 0, dst + d_base + 44u);
    vstore4((float4)(src[s_base + 27648u], src[s_base + 27657u], src[s_base + 27666u], src[s_base + 27675u]), 0, dst + d_base + 48u);
    vstore4((float4)(src[s_base + 29952u], src[s_base + 29961u], src[s_base + 29970u], src[s_base + 29979u]), 0, dst + d_base + 52u);
    vstore4((float4)(src[s_base + 32256u], src[s_base + 32265u], src[s_base + 32274u], src[s_base + 32283u]), 0, dst + d_base + 56u);
    vstore4((float4)(src[s_base + 34560u], src[s_base + 34569u], src[s_base + 34578u], src[s_base + 34587u]), 0, dst + d_base + 60u);
    vstore4((float4)(src[s_base + 36u], src[s_base + 45u], src[s_base + 54u], src[s_base + 63u]), 0, dst + d_base + 64u);
    vstore4((float4)(src[s_base + 2340u], src[s_base + 2349u], src[s_base + 2358u], src[s_base + 2367u]), 0, dst + d_base + 68u);
    vstore4((float4)(src[s_base + 4644u], src[s_base + 4653u], src[s_base + 4662u], src[s_base + 4671u]), 0, dst + d_base + 72u);
    vstore4((float4)(src[s_base + 6948u], src[s_base + 6957u], src[s_base + 6966u], src[s_base + 6975u]), 0, dst + d_base + 76u);
    vstore4((float4)(src[s_base + 9252u], src[s_base + 9261u], src[s_base + 9270u], src[s_base + 9279u]), 0, dst + d_base + 80u);
    vstore4((float4)(src[s_base + 11556u], src[s_base + 11565u], src[s_base + 11574u], src[s_base + 11583u]), 0, dst + d_base + 84u);
    vstore4((float4)(src[s_base + 13860u], src[s_base + 13869u], src[s_base + 13878u], src[s_base + 13887u]), 0, dst + d_base + 88u);
    vstore4((float4)(src[s_base + 16164u], src[s_base + 16173u], src[s_base + 16182u], src[s_base + 16191u]), 0, dst + d_base + 92u);
    vstore4((float4)(src[s_base + 18468u], src[s_base + 18477u], src[s_base + 18486u], src[s_base + 18495u]), 0, dst + d_base + 96u);
    vstore4((float4)(src[s_base + 20772u], src[s_base + 20781u], src[s_base + 20790u], src[s_base + 20799u]), 0, dst + d_base + 100u);
    vstore4((float4)(src[s_base + 23076u], src[s_base + 23085u], src[s_base + 23094u], src[s_base + 23103u]), 0, dst + d_base + 104u);
    vstore4((float4)(src[s_base + 25380u], src[s_base + 25389u], src[s_base + 25398u], src[s_base + 25407u]), 0, dst + d_base + 108u);
    vstore4((float4)(src[s_base + 27684u], src[s_base + 27693u], src[s_base + 27702u], src[s_base + 27711u]), 0, dst + d_base + 112u);
    vstore4((float4)(src[s_base + 29988u], src[s_base + 29997u], src[s_base + 30006u], src[s_base + 30015u]), 0, dst + d_base + 116u);
    vstore4((float4)(src[s_base + 32292u], src[s_base + 32301u], src[s_base + 32310u], src[s_base + 32319u]), 0, dst + d_base + 120u);
    vstore4((float4)(src[s_base + 34596u], src[s_base + 34605u], src[s_base + 34614u], src[s_base + 34623u]), 0, dst + d_base + 124u);
    vstore4((float4)(src[s_base + 72u], src[s_base + 81u], src[s_base + 90u], src[s_base + 99u]), 0, dst + d_base + 128u);
    vstore4((float4)(src[s_base + 2376u], src[s_base + 2385u], src[s_base + 2394u], src[s_base + 2403u]), 0, dst + d_base + 132u);
    vstore4((float4)(src[s_base + 4680u], src[s_base + 4689u], src[s_base + 4698u], src[s_base + 4707u]), 0, dst + d_base + 136u);
    vstore4((float4)(src[s_base + 6984u], src[s_base + 6993u], src[s_base + 7002u], src[s_base + 7011u]), 0, dst + d_base + 140u);
    vstore4((float4)(src[s_base + 9288u], src[s_base + 9297u], src[s_base + 9306u], src[s_base + 9315u]), 0, dst + d_base + 144u);
    vstore4((float4)(src[s_base + 11592u], src[s_base + 11601u], src[s_base + 11610u], src[s_base + 11619u]), 0, dst + d_base + 148u);
    vstore4((float4)(src[s_base + 13896u], src[s_base + 13905u], src[s_base + 13914u], src[s_base + 13923u]), 0, dst + d_base + 152u);
    vstore4((float4)(src[s_base + 16200u], src[s_base + 16209u], src[s_base + 16218u], src[s_base + 16227u]), 0, dst + d_base + 156u);
    vstore4((float4)(src[s_base + 18504u], src[s_base + 18513u], src[s_base + 18522u], src[s_base + 18531u]), 0, dst + d_base + 160u);
    vstore4((float4)(src[s_base + 20808u], src[s_base + 20817u], src[s_base + 20826u], src[s_base + 20835u]), 0, dst + d_base + 164u);
    vstore4((float4)(src[s_base + 23112u], src[s_base + 23121u], src[s_base + 23130u], src[s_base + 23139u]), 0, dst + d_base + 168u);
    vstore4((float4)(src[s_base + 25416u], src[s_base + 25425u], src[s_base + 25434u], src[s_base + 25443u]), 0, dst + d_base + 172u);
    vstore4((float4)(src[s_base + 27720u], src[s_base + 27729u], src[s_base + 27738u], src[s_base + 27747u]), 0, dst + d_base + 176u);
    vstore4((float4)(src[s_base + 30024u], src[s_base + 30033u], src[s_base + 30042u], src[s_base + 30051u]), 0, dst + d_base + 180u);
    vstore4((float4)(src[s_base + 32328u], src[s_base + 32337u], src[s_base + 32346u], src[s_base + 32355u]), 0, dst + d_base + 184u);
    vstore4((float4)(src[s_base + 34632u], src[s_base + 34641u], src[s_base + 34650u], src[s_base + 34659u]), 0, dst + d_base + 188u);
    vstore4((float4)(src[s_base + 108u], src[s_base + 117u], src[s_base + 126u], src[s_base + 135u]), 0, dst + d_base + 192u);
    vstore4((float4)(src[s_base + 2412u], src[s_base + 2421u], src[s_base + 2430u], src[s_base + 2439u]), 0, dst + d_base + 196u);
    vstore4((float4)(src[s_base + 4716u], src[s_base + 4725u], src[s_base + 4734u], src[s_base + 4743u]), 0, dst + d_base + 200u);
    vstore4((float4)(src[s_base + 7020u], src[s_base + 7029u], src[s_base + 7038u], src[s_base + 7047u]), 0, dst + d_base + 204u);
    vstore4((float4)(src[s_base + 9324u], src[s_base + 9333u], src[s_base + 9342u], src[s_base + 9351u]), 0, dst + d_base + 208u);
    vstore4((float4)(src[s_base + 11628u], src[s_base + 11637u], src[s_base + 11646u], src[s_base + 11655u]), 0, dst + d_base + 212u);
    vstore4((float4)(src[s_base + 13932u], src[s_base + 13941u], src[s_base + 13950u], src[s_base + 13959u]), 0, dst + d_base + 216u);
    vstore4((float4)(src[s_base + 16236u], src[s_base + 16245u], src[s_base + 16254u], src[s_base + 16263u]), 0, dst + d_base + 220u);
    vstore4((float4)(src[s_base + 18540u], src[s_base + 18549u], src[s_base + 18558u], src[s_base + 18567u]), 0, dst + d_base + 224u);
    vstore4((float4)(src[s_base + 20844u], src[s_base + 20853u], src[s_base + 20862u], src[s_base + 20871u]), 0, dst + d_base + 228u);
    vstore4((float4)(src[s_base + 23148u], src[s_base + 23157u], src[s_base + 23166u], src[s_base + 23175u]), 0, dst + d_base + 232u);
    vstore4((float4)(src[s_base + 25452u], src[s_base + 25461u], src[s_base + 25470u], src[s_base + 25479u]), 0, dst + d_base + 236u);
    vstore4((float4)(src[s_base + 27756u], src[s_base + 27765u], src[s_base + 27774u], src[s_base + 27783u]), 0, dst + d_base + 240u);
    vstore4((float4)(src[s_base + 30060u], src[s_base + 30069u], src[s_base + 30078u], src[s_base + 30087u]), 0, dst + d_base + 244u);
    vstore4((float4)(src[s_base + 32364u], src[s_base + 32373u], src[s_base + 32382u], src[s_base + 32391u]), 0, dst + d_base + 248u);
    vstore4((float4)(src[s_base + 34668u], src[s_base + 34677u], src[s_base + 34686u], src[s_base + 34695u]), 0, dst + d_base + 252u);
}
