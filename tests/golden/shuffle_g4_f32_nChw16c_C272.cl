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
    vstore4((float4)(src[s_base + 0u], src[s_base + 4u], src[s_base + 8u], src[s_base + 12u]), 0, dst + d_base + 0u);
    vstore4((float4)(src[s_base + 50176u], src[s_base + 50180u], src[s_base + 50184u], src[s_base + 50188u]), 0, dst + d_base + 4u);
    vstore4((float4)(src[s_base + 100352u], src[s_base + 100356u], src[s_base + 100360u], src[s_base + 100364u]), 0, dst + d_base + 8u);
    vstore4((float4)(src[s_base + 150528u], src[s_base + 150532u], src[s_base + 150536u], src[s_base + 150540u]), 0, dst + d_base + 12u);
    vstore4((float4)(src[s_base + 200704u], src[s_base + 200708u], src[s_base + 200712u], src[s_base + 200716u]), 0, dst + d_base + 50176u);
    vstore4((float4)(src[s_base + 250880u], src[s_base + 250884u], src[s_base + 250888u], src[s_base + 250892u]), 0, dst + d_base + 50180u);
    vstore4((float4)(src[s_base + 301056u], src[s_base + 301060u], src[s_base + 301064u], src[s_base + 301068u]), 0, dst + d_base + 50184u);
    vstore4((float4)(src[s_base + 351232u], src[s_base + 351236u], src[s_base + 351240u], src[s_base + 351244u]), 0, dst + d_base + 50188u);
    vstore4((float4)(src[s_base + 401408u], src[s_base + 401412u], src[s_base + 401416u], src[s_base + 401420u]), 0, dst + d_base + 100352u);
    vstore4((float4)(src[s_base + 451584u], src[s_base + 451588u], src[s_base + 451592u], src[s_base + 451596u]), 0, dst + d_base + 100356u);
    vstore4((float4)(src[s_base + 501760u], src[s_base + 501764u], src[s_base + 501768u], src[s_base + 501772u]), 0, dst + d_base + 100360u);
    vstore4((float4)(src[s_base + 551936u], src[s_base + 551940u], src[s_base + 551944u], src[s_base + 551948u]), 0, dst + d_base + 100364u);
    vstore4((float4)(src[s_base + 602112u], src[s_base + 602116u], src[s_base + 602120u], src[s_base + 602124u]), 0, dst + d_base + 150528u);
    vstore4((float4)(src[s_base + 652288u], src[s_base + 652292u], src[s_base + 652296u], src[s_base + 652300u]), 0, dst + d_base + 150532u);
    vstore4((float4)(src[s_base + 702464u], src[s_base + 702468u], src[s_base + 702472u], src[s_base + 702476u]), 0, dst + d_base + 150536u);
    vstore4((float4)(src[s_base + 752640u], src[s_base + 752644u], src[s_base + 752648u], src[s_base + 752652u]), 0, dst + d_base + 150540u);
    vstore4((float4)(src[s_base + 802816u], src[s_base + 802820u], src[s_base + 802824u], src[s_base + 802828u]), 0, dst + d_base + 200704u);
    vstore4((float4)(src[s_base + 1u], src[s_base + 5u], src[s_base + 9u], src[s_base + 13u]), 0, dst + d_base + 200708u);
    vstore4((float4)(src[s_base + 50177u], src[s_base + 50181u], src[s_base + 50185u], src[s_base + 50189u]), 0, dst + d_base + 200712u);
    vstore4((float4)(src[s_base + 100353u], src[s_base + 100357u], src[s_base + 100361u], src[s_base + 100365u]), 0, dst + d_base + 200716u);
    vstore4((float4)(src[s_base + 150529u], src[s_base + 150533u], src[s_base + 150537u], src[s_base + 150541u]), 0, dst + d_base + 250880u);
    vstore4((float4)(src[s_base + 200705u], src[s_base + 200709u], src[s_base + 200713u], src[s_base + 200717u]), 0, dst + d_base + 250884u);
    vstore4((float4)(src[s_base + 250881u], src[s_base + 250885u], src[s_base + 250889u], src[s_base + 250893u]), 0, dst + d_base + 250888u);
    vstore4((float4)(src[s_base + 301057u], src[s_base + 301061u], src[s_base + 301065u], src[s_base + 301069u]), 0, dst + d_base + 250892u);
    vstore4((float4)(src[s_base + 351233u], src[s_base + 351237u], src[s_base + 351241u], src[s_base + 351245u]), 0, dst + d_base + 301056u);
    vstore4((float4)(src[s_base + 401409u], src[s_base + 401413u], src[s_base + 401417u], src[s_base + 401421u]), 0, dst + d_base + 301060u);
    vstore4((float4)(src[s_base + 451585u], src[s_base + 451589u], src[s_base + 451593u], src[s_base + 451597u]), 0, dst + d_base + 301064u);
    vstore4((float4)(src[s_base + 501761u], src[s_base + 501765u], src[s_base + 501769u], src[s_base + 501773u]), 0, dst + d_base + 301068u);
    vstore4((float4)(src[s_base + 551937u], src[s_base + 551941u], src[s_base + 551945u], src[s_base + 551949u]), 0, dst + d_base + 351232u);
    vstore4((float4)(src[s_base + 602113u], src[s_base + 602117u], src[s_base + 602121u], src[s_base + 602125u]), 0, dst + d_base + 351236u);
    vstore4((float4)(src[s_base + 652289u], src[s_base + 652293u], src[s_base + 652297u], src[s_base + 652301u]), 0, dst + d_base + 351240u);
    vstore4((float4)(src[s_base + 702465u], src[s_base + 702469u], src[s_base + 702473u], src[s_base + 702477u]), 0, dst + d_base + 351244u);
    vstore4((float4)(src[s_base + 752641u], src[s_base + 752645u], src[s_base + 752649u], src[s_base + 752653u]), 0, dst + d_base + 401408u);
    vstore4((float4)(src[s_base + 802817u], src[s_base + 802821u], src[s_base + 802825u], src[s_base + 802829u]), 0, dst + d_base + 401412u);
    vstore4((float4)(src[s_base + 2u], src[s_base + 6u], src[s_base + 10u], src[s_base + 14u]), 0, dst + d_base + 401416u);
    vstore4((float4)(src[s_base + 50178u], src[s_base + 50182u], src[s_base + 50186u], src[s_base + 50190u]), 0, dst + d_base + 401420u);
    vstore4((float4)(src[s_base + 100354u], src[s_base + 100358u], src[s_base + 100362u], src[s_base + 100366u]), 0, dst + d_base + 451584u);
    vstore4((float4)(src[s_base + 150530u], src[s_base + 150534u], src[s_base + 150538u], src[s_base + 150542u]), 0, dst + d_base + 451588u);
    vstore4((float4)(src[s_base + 200706u], src[s_base + 200710u], src[s_base + 200714u], src[s_base + 200718u]), 0, dst + d_base + 451592u);
    vstore4((float4)(src[s_base + 250882u], src[s_base + 250886u], src[s_base + 250890u], src[s_base + 250894u]), 0, dst + d_base + 451596u);
    vstore4((float4)(src[s_base + 301058u], src[s_base + 301062u], src[s_base + 301066u], src[s_base + 301070u]), 0, dst + d_base + 501760u);
    vstore4((float4)(src[s_base + 351234u], src[s_base + 351238u], src[s_base + 351242u], src[s_base + 351246u]), 0, dst + d_base + 501764u);
    vstore4((float4)(src[s_base + 401410u], src[s_base + 401414u], src[s_base + 401418u], src[s_base + 401422u]), 0, dst + d_base + 501768u);
    vstore4((float4)(src[s_base + 451586u], src[s_base + 451590u], src[s_base + 451594u], src[s_base + 451598u]), 0, dst + d_base + 501772u);
    vstore4((float4)(src[s_base + 501762u], src[s_base + 501766u], src[s_base + 501770u], src[s_base + 501774u]), 0, dst + d_base + 551936u);
    vstore4((float4)(src[s_base + 551938u], src[s_base + 551942u], src[s_base + 551946u], src[s_base + 551950u]), 0, dst + d_base + 551940u);
    vstore4((float4)(src[s_base + 602114u], src[s_base + 602118u], src[s_base + 602122u], src[s_base + 602126u]), 0, dst + d_base + 551944u);
    vstore4((float4)(src[s_base + 652290u], src[s_base + 652294u], src[s_base + 652298u], src[s_base + 652302u]), 0, dst + d_base + 551948u);
    vstore4((float4)(src[s_base + 702466u], src[s_base + 702470u], src[s_base + 702474u], src[s_base + 702478u]), 0, dst + d_base + 602112u);
    vstore4((float4)(src[s_base + 752642u], src[s_base + 752646u], src[s_base + 752650u], src[s_base + 752654u]), 0, dst + d_base + 602116u);
    vstore4((float4)(src[s_base + 802818u], src[s_base + 802822u], src[s_base + 802826u], src[s_base + 802830u]), 0, dst + d_base + 602120u);
    vstore4((float4)(src[s_base + 3u], src[s_base + 7u], src[s_base + 11u], src[s_base + 15u]), 0, dst + d_base + 602124u);
    vstore4((float4)(src[s_base + 50179u], src[s_base + 50183u], src[s_base + 50187u], src[s_base + 50191u]), 0, dst + d_base + 652288u);
    vstore4((float4)(src[s_base + 100355u], src[s_base + 100359u], src[s_base + 100363u], src[s_base + 100367u]), 0, dst + d_base + 652292u);
    vstore4((float4)(src[s_base + 150531u], src[s_base + 150535u], src[s_base + 150539u], src[s_base + 150543u]), 0, dst + d_base + 652296u);
    vstore4((float4)(src[s_base + 200707u], src[s_base + 200711u], src[s_base + 200715u], src[s_base + 200719u]), 0, dst + d_base + 652300u);
    vstore4((float4)(src[s_base + 250883u], src[s_base + 250887u], src[s_base + 250891u], src[s_base + 250895u]), 0, dst + d_base + 702464u);
    vstore4((float4)(src[s_base + 301059u], src[s_base + 301063u], src[s_base + 301067u], src[s_base + 301071u]), 0, dst + d_base + 702468u);
    vstore4((float4)(src[s_base + 351235u], src[s_base + 351239u], src[s_base + 351243u], src[s_base + 351247u]), 0, dst + d_base + 702472u);
    vstore4((float4)(src[s_base + 401411u], src[s_base + 401415u], src[s_base + 401419u], src[s_base + 401423u]), 0, dst + d_base + 702476u);
    vstore4((float4)(src[s_base + 451587u], src[s_base + 451591u], src[s_base + 451595u], src[s_base + 451599u]), 0, dst + d_base + 752640u);
    vstore4((float4)(src[s_base + 501763u], src[s_base + 501767u], src[s_base + 501771u], src[s_base + 501775u]), 0, dst + d_base + 752644u);
    vstore4((float4)(src[s_base + 551939u], src[s_base + 551943u], src[s_base + 551947u], src[s_base + 551951u]), 0, dst + d_base + 752648u);
    vstore4((float4)(src[s_base + 602115u], src[s_base + 602119u], src[s_base + 602123u], src[s_base + 602127u]), 0, dst + d_base + 752652u);
    vstore4((float4)(src[s_base + 652291u], src[s_base + 652295u], src[s_base + 652299u], src[s_base + 652303u]), 0, dst + d_base + 802816u);
    vstore4((float4)(src[s_base + 702467u], src[s_base + 702471u], src[s_base + 702475u], src[s_base + 702479u]), 0, dst + d_base + 802820u);
    vstore4((float4)(src[s_base + 752643u], src[s_base + 752647u], src[s_base + 752651u], src[s_base + 752655u]), 0, dst + d_base + 802824u);
    vstore4((float4)(src[s_base + 802819u], src[s_base + 802823u], src[s_base + 802827u], src[s_base + 802831u]), 0, dst + d_base + 802828u);
}
