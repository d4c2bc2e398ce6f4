// clayout shuffle: f32 aBcd16b 1x272x56x56 -> f32 aBcd16b 1x272x56x56
// Each work-item moves a block of 272 elements at constant offsets, 4 at a time into the destination.
// Loops, outermost first: b:17 cd:3136 b:16; in the block: b:17 b:16
#pragma OPENCL FP_CONTRACT OFF

__kernel __attribute__((vec_type_hint(float4))) void shuffle_g4_f32_aBcd16b(__global const float *restrict src,
        __global float *restrict dst)
{
    // Strided loads stay scalar: PoCL's LLVM would make each run a gather
    // (vgatherqps), 1.3-1.6x slower on an AMD EPYC.
    __global const volatile float *strided_src = src;
    const uint item = get_global_id(0);
    if (item >= 3136u)
        return;
    uint rest = item;
    const uint l1 = rest;
    const uint s_base = l1 * 16u;
    const uint d_base = l1 * 16u;
    vstore4((float4)(strided_src[s_base + 0u], strided_src[s_base + 4u], strided_src[s_base + 8u], strided_src[s_base + 12u]), 0, dst + d_base + 0u);
    vstore4((float4)(strided_src[s_base + 50176u], strided_src[s_base + 50180u], strided_src[s_base + 50184u], strided_src[s_base + 50188u]), 0, dst + d_base + 4u);
    vstore4((float4)(strided_src[s_base + 100352u], strided_src[s_base + 100356u], strided_src[s_base + 100360u], strided_src[s_base + 100364u]), 0, dst + d_base + 8u);
    vstore4((float4)(strided_src[s_base + 150528u], strided_src[s_base + 150532u], strided_src[s_base + 150536u], strided_src[s_base + 150540u]), 0, dst + d_base + 12u);
    vstore4((float4)(strided_src[s_base + 200704u], strided_src[s_base + 200708u], strided_src[s_base + 200712u], strided_src[s_base + 200716u]), 0, dst + d_base + 50176u);
    vstore4((float4)(strided_src[s_base + 250880u], strided_src[s_base + 250884u], strided_src[s_base + 250888u], strided_src[s_base + 250892u]), 0, dst + d_base + 50180u);
    vstore4((float4)(strided_src[s_base + 301056u], strided_src[s_base + 301060u], strided_src[s_base + 301064u], strided_src[s_base + 301068u]), 0, dst + d_base + 50184u);
    vstore4((float4)(strided_src[s_base + 351232u], strided_src[s_base + 351236u], strided_src[s_base + 351240u], strided_src[s_base + 351244u]), 0, dst + d_base + 50188u);
    vstore4((float4)(strided_src[s_base + 401408u], strided_src[s_base + 401412u], strided_src[s_base + 401416u], strided_src[s_base + 401420u]), 0, dst + d_base + 100352u);
    vstore4((float4)(strided_src[s_base + 451584u], strided_src[s_base + 451588u], strided_src[s_base + 451592u], strided_src[s_base + 451596u]), 0, dst + d_base + 100356u);
    vstore4((float4)(strided_src[s_base + 501760u], strided_src[s_base + 501764u], strided_src[s_base + 501768u], strided_src[s_base + 501772u]), 0, dst + d_base + 100360u);
    vstore4((float4)(strided_src[s_base + 551936u], strided_src[s_base + 551940u], strided_src[s_base + 551944u], strided_src[s_base + 551948u]), 0, dst + d_base + 100364u);
    vstore4((float4)(strided_src[s_base + 602112u], strided_src[s_base + 602116u], strided_src[s_base + 602120u], strided_src[s_base + 602124u]), 0, dst + d_base + 150528u);
    vstore4((float4)(strided_src[s_base + 652288u], strided_src[s_base + 652292u], strided_src[s_base + 652296u], strided_src[s_base + 652300u]), 0, dst + d_base + 150532u);
    vstore4((float4)(strided_src[s_base + 702464u], strided_src[s_base + 702468u], strided_src[s_base + 702472u], strided_src[s_base + 702476u]), 0, dst + d_base + 150536u);
    vstore4((float4)(strided_src[s_base + 752640u], strided_src[s_base + 752644u], strided_src[s_base + 752648u], strided_src[s_base + 752652u]), 0, dst + d_base + 150540u);
    vstore4((float4)(strided_src[s_base + 802816u], strided_src[s_base + 802820u], strided_src[s_base + 802824u], strided_src[s_base + 802828u]), 0, dst + d_base + 200704u);
    vstore4((float4)(strided_src[s_base + 1u], strided_src[s_base + 5u], strided_src[s_base + 9u], strided_src[s_base + 13u]), 0, dst + d_base + 200708u);
    vstore4((float4)(strided_src[s_base + 50177u], strided_src[s_base + 50181u], strided_src[s_base + 50185u], strided_src[s_base + 50189u]), 0, dst + d_base + 200712u);
    vstore4((float4)(strided_src[s_base + 100353u], strided_src[s_base + 100357u], strided_src[s_base + 100361u], strided_src[s_base + 100365u]), 0, dst + d_base + 200716u);
    vstore4((float4)(strided_src[s_base + 150529u], strided_src[s_base + 150533u], strided_src[s_base + 150537u], strided_src[s_base + 150541u]), 0, dst + d_base + 250880u);
    vstore4((float4)(strided_src[s_base + 200705u], strided_src[s_base + 200709u], strided_src[s_base + 200713u], strided_src[s_base + 200717u]), 0, dst + d_base + 250884u);
    vstore4((float4)(strided_src[s_base + 250881u], strided_src[s_base + 250885u], strided_src[s_base + 250889u], strided_src[s_base + 250893u]), 0, dst + d_base + 250888u);
    vstore4((float4)(strided_src[s_base + 301057u], strided_src[s_base + 301061u], strided_src[s_base + 301065u], strided_src[s_base + 301069u]), 0, dst + d_base + 250892u);
    vstore4((float4)(strided_src[s_base + 351233u], strided_src[s_base + 351237u], strided_src[s_base + 351241u], strided_src[s_base + 351245u]), 0, dst + d_base + 301056u);
    vstore4((float4)(strided_src[s_base + 401409u], strided_src[s_base + 401413u], strided_src[s_base + 401417u], strided_src[s_base + 401421u]), 0, dst + d_base + 301060u);
    vstore4((float4)(strided_src[s_base + 451585u], strided_src[s_base + 451589u], strided_src[s_base + 451593u], strided_src[s_base + 451597u]), 0, dst + d_base + 301064u);
    vstore4((float4)(strided_src[s_base + 501761u], strided_src[s_base + 501765u], strided_src[s_base + 501769u], strided_src[s_base + 501773u]), 0, dst + d_base + 301068u);
    vstore4((float4)(strided_src[s_base + 551937u], strided_src[s_base + 551941u], strided_src[s_base + 551945u], strided_src[s_base + 551949u]), 0, dst + d_base + 351232u);
    vstore4((float4)(strided_src[s_base + 602113u], strided_src[s_base + 602117u], strided_src[s_base + 602121u], strided_src[s_base + 602125u]), 0, dst + d_base + 351236u);
    vstore4((float4)(strided_src[s_base + 652289u], strided_src[s_base + 652293u], strided_src[s_base + 652297u], strided_src[s_base + 652301u]), 0, dst + d_base + 351240u);
    vstore4((float4)(strided_src[s_base + 702465u], strided_src[s_base + 702469u], strided_src[s_base + 702473u], strided_src[s_base + 702477u]), 0, dst + d_base + 351244u);
    vstore4((float4)(strided_src[s_base + 752641u], strided_src[s_base + 752645u], strided_src[s_base + 752649u], strided_src[s_base + 752653u]), 0, dst + d_base + 401408u);
    vstore4((float4)(strided_src[s_base + 802817u], strided_src[s_base + 802821u], strided_src[s_base + 802825u], strided_src[s_base + 802829u]), 0, dst + d_base + 401412u);
    vstore4((float4)(strided_src[s_base + 2u], strided_src[s_base + 6u], strided_src[s_base + 10u], strided_src[s_base + 14u]), 0, dst + d_base + 401416u);
    vstore4((float4)(strided_src[s_base + 50178u], strided_src[s_base + 50182u], strided_src[s_base + 50186u], strided_src[s_base + 50190u]), 0, dst + d_base + 401420u);
    vstore4((float4)(strided_src[s_base + 100354u], strided_src[s_base + 100358u], strided_src[s_base + 100362u], strided_src[s_base + 100366u]), 0, dst + d_base + 451584u);
    vstore4((float4)(strided_src[s_base + 150530u], strided_src[s_base + 150534u], strided_src[s_base + 150538u], strided_src[s_base + 150542u]), 0, dst + d_base + 451588u);
    vstore4((float4)(strided_src[s_base + 200706u], strided_src[s_base + 200710u], strided_src[s_base + 200714u], strided_src[s_base + 200718u]), 0, dst + d_base + 451592u);
    vstore4((float4)(strided_src[s_base + 250882u], strided_src[s_base + 250886u], strided_src[s_base + 250890u], strided_src[s_base + 250894u]), 0, dst + d_base + 451596u);
    vstore4((float4)(strided_src[s_base + 301058u], strided_src[s_base + 301062u], strided_src[s_base + 301066u], strided_src[s_base + 301070u]), 0, dst + d_base + 501760u);
    vstore4((float4)(strided_src[s_base + 351234u], strided_src[s_base + 351238u], strided_src[s_base + 351242u], strided_src[s_base + 351246u]), 0, dst + d_base + 501764u);
    vstore4((float4)(strided_src[s_base + 401410u], strided_src[s_base + 401414u], strided_src[s_base + 401418u], strided_src[s_base + 401422u]), 0, dst + d_base + 501768u);
    vstore4((float4)(strided_src[s_base + 451586u], strided_src[s_base + 451590u], strided_src[s_base + 451594u], strided_src[s_base + 451598u]), 0, dst + d_base + 501772u);
    vstore4((float4)(strided_src[s_base + 501762u], strided_src[s_base + 501766u], strided_src[s_base + 501770u], strided_src[s_base + 501774u]), 0, dst + d_base + 551936u);
    vstore4((float4)(strided_src[s_base + 551938u], strided_src[s_base + 551942u], strided_src[s_base + 551946u], strided_src[s_base + 551950u]), 0, dst + d_base + 551940u);
    vstore4((float4)(strided_src[s_base + 602114u], strided_src[s_base + 602118u], strided_src[s_base + 602122u], strided_src[s_base + 602126u]), 0, dst + d_base + 551944u);
    vstore4((float4)(strided_src[s_base + 652290u], strided_src[s_base + 652294u], strided_src[s_base + 652298u], strided_src[s_base + 652302u]), 0, dst + d_base + 551948u);
    vstore4((float4)(strided_src[s_base + 702466u], strided_src[s_base + 702470u], strided_src[s_base + 702474u], strided_src[s_base + 702478u]), 0, dst + d_base + 602112u);
    vstore4((float4)(strided_src[s_base + 752642u], strided_src[s_base + 752646u], strided_src[s_base + 752650u], strided_src[s_base + 752654u]), 0, dst + d_base + 602116u);
    vstore4((float4)(strided_src[s_base + 802818u], strided_src[s_base + 802822u], strided_src[s_base + 802826u], strided_src[s_base + 802830u]), 0, dst + d_base + 602120u);
    vstore4((float4)(strided_src[s_base + 3u], strided_src[s_base + 7u], strided_src[s_base + 11u], strided_src[s_base + 15u]), 0, dst + d_base + 602124u);
    vstore4((float4)(strided_src[s_base + 50179u], strided_src[s_base + 50183u], strided_src[s_base + 50187u], strided_src[s_base + 50191u]), 0, dst + d_base + 652288u);
    vstore4((float4)(strided_src[s_base + 100355u], strided_src[s_base + 100359u], strided_src[s_base + 100363u], strided_src[s_base + 100367u]), 0, dst + d_base + 652292u);
    vstore4((float4)(strided_src[s_base + 150531u], strided_src[s_base + 150535u], strided_src[s_base + 150539u], strided_src[s_base + 150543u]), 0, dst + d_base + 652296u);
    vstore4((float4)(strided_src[s_base + 200707u], strided_src[s_base + 200711u], strided_src[s_base + 200715u], strided_src[s_base + 200719u]), 0, dst + d_base + 652300u);
    vstore4((float4)(strided_src[s_base + 250883u], strided_src[s_base + 250887u], strided_src[s_base + 250891u], strided_src[s_base + 250895u]), 0, dst + d_base + 702464u);
    vstore4((float4)(strided_src[s_base + 301059u], strided_src[s_base + 301063u], strided_src[s_base + 301067u], strided_src[s_base + 301071u]), 0, dst + d_base + 702468u);
    vstore4((float4)(strided_src[s_base + 351235u], strided_src[s_base + 351239u], strided_src[s_base + 351243u], strided_src[s_base + 351247u]), 0, dst + d_base + 702472u);
    vstore4((float4)(strided_src[s_base + 401411u], strided_src[s_base + 401415u], strided_src[s_base + 401419u], strided_src[s_base + 401423u]), 0, dst + d_base + 702476u);
    vstore4((float4)(strided_src[s_base + 451587u], strided_src[s_base + 451591u], strided_src[s_base + 451595u], strided_src[s_base + 451599u]), 0, dst + d_base + 752640u);
    vstore4((float4)(strided_src[s_base + 501763u], strided_src[s_base + 501767u], strided_src[s_base + 501771u], strided_src[s_base + 501775u]), 0, dst + d_base + 752644u);
    vstore4((float4)(strided_src[s_base + 551939u], strided_src[s_base + 551943u], strided_src[s_base + 551947u], strided_src[s_base + 551951u]), 0, dst + d_base + 752648u);
    vstore4((float4)(strided_src[s_base + 602115u], strided_src[s_base + 602119u], strided_src[s_base + 602123u], strided_src[s_base + 602127u]), 0, dst + d_base + 752652u);
    vstore4((float4)(strided_src[s_base + 652291u], strided_src[s_base + 652295u], strided_src[s_base + 652299u], strided_src[s_base + 652303u]), 0, dst + d_base + 802816u);
    vstore4((float4)(strided_src[s_base + 702467u], strided_src[s_base + 702471u], strided_src[s_base + 702475u], strided_src[s_base + 702479u]), 0, dst + d_base + 802820u);
    vstore4((float4)(strided_src[s_base + 752643u], strided_src[s_base + 752647u], strided_src[s_base + 752651u], strided_src[s_base + 752655u]), 0, dst + d_base + 802824u);
    vstore4((float4)(strided_src[s_base + 802819u], strided_src[s_base + 802823u], strided_src[s_base + 802827u], strided_src[s_base + 802831u]), 0, dst + d_base + 802828u);
}
