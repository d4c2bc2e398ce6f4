## Dynamic quantization (clayout/host/quantize.py holds the formulas): the
## scales, zero points and values of f32 data (the vector kernel's: f32, f16
## or bf16, widened as loaded), one scale per group of L
## consecutive elements (C order). gpu/render_quantize.py supplies the
## numbers. One work-item quantizes `gpi` whole groups (parts == 1), or one
## chunk of C elements of a group split in `parts` chunks: then a first
## kernel (${name}_partials) writes each chunk's statistics and the main
## kernel combines its group's before quantizing its chunk.
<%namespace file="convert.cl.mako" import="*"/>\
<%def name="vt(base, n)">${base}${"" if n == 1 else n}</%def>\
<%def name="load(off)">\
% if vec == 1:
src[${off}]\
% else:
vload${vec}(0, src + ${off})\
% endif
</%def>\
<%def name="reduce(op, var, out)">\
## The lanes of float vector `var` combined with `op` into float `out`.
% if vec == 1:
const float ${out} = ${var};
% else:
<% n = vec %>\
%   while n > 1:
<% n //= 2 %>\
const ${vt("float", n)} ${out}${n} = ${op}(${var if n * 2 == vec else f"{out}{n * 2}"}.lo, ${var if n * 2 == vec else f"{out}{n * 2}"}.hi);
%   endwhile
const float ${out} = ${out}1;
% endif
</%def>\
<%def name="stats_function()">\
// The statistics of C elements from `first`: (min(min x, 0), max(max x, 0))
// or (0, max |x|); NaN skipped (fmin / fmax).
static void ${name}_stats(__global const float *restrict src, ${idx} first, float *lo, float *hi)
{
    ${vt("float", vec)} l = (${vt("float", vec)})(0.0f), h = (${vt("float", vec)})(0.0f);
    for (${idx} i = 0; i < ${chunk}u; i += ${vec}u) {
        const ${vt("float", vec)} x = ${load("first + i")};
% if scheme == "asymmetric":
        l = fmin(l, x);
        h = fmax(h, x);
% else:
        h = fmax(h, fabs(x));
% endif
    }
${reduce("fmin", "l", "lr")}\
${reduce("fmax", "h", "hr")}\
    *lo = lr;
    *hi = hr;
}
</%def>\
<%def name="scale_function()">\
// The group's stored scale (rounded up to ${scale_dt} first) and zero point;
// MX: the multiplier 2^-k and the exponent k of the e8m0 scale 2^k.
static float ${name}_scale(float lo, float hi, int *zp)
{
% if scheme == "mx":
    const int k = clamp((int)(as_uint(hi) >> 23 & 0xffu) - 127 - ${emax}, -127, 127);
    *zp = k;
    return as_float((uint)(127 - k) << 23);
% else:
%   if scheme == "asymmetric":
    const float s = (hi - lo) / ${float_literal(qmax - qmin)};
%   else:
    const float s = hi / ${float_literal(top)};
%   endif
%   if scale_dt == "f16":
    ushort h;  // (a half variable needs cl_khr_fp16; its bits do not)
    vstore_half_rtp(s, 0, (half *)&h);  // rounded up: the range still fits
    float r = vload_half(0, (const half *)&h);
    if (isinf(r) && !isinf(s))
        r = copysign(65504.0f, s);
%   elif scale_dt == "bf16":
    ushort b = float_to_bf16(s);
    if (bf16_to_float(b) < s)
        b += 1;  // rounded up: the range still fits
    float r = bf16_to_float(b);
    if (isinf(r) && !isinf(s))
        r = copysign(0x1.fep127f, s);
%   else:
    float r = s;
%   endif
    if (r == 0.0f)
        r = 1.0f;
%   if scheme == "asymmetric":
    *zp = (int)clamp(rint(${float_literal(qmin)} - lo / r), ${float_literal(qmin)}, ${float_literal(qmax)});
%   else:
    *zp = 0;
%   endif
    return r;
% endif
}

static void ${name}_store_scale(__global uchar *restrict scales, ${idx} g, float s, int k)
{
% if scale_dt == "f32":
    ((__global float *)scales)[g] = s;
% elif scale_dt == "f16":
    vstore_half_rte(s, g, (__global half *)scales);
% elif scale_dt == "bf16":
    ((__global ushort *)scales)[g] = float_to_bf16(s);
% else:
    scales[g] = (uchar)(k + 127);
% endif
}
</%def>\
<%def name="quantize_vector()">\
## x (vec lanes) quantized with s (and zp) and stored at element o of dst.
% if scheme == "mx":
        ${vt("float", vec)} v = x * s;  // exact: s is a power of two
% else:
        ${vt("float", vec)} v = x / s;
% endif
% if dst_dt in int_range:
        v = select(clamp(v, -512.0f, 512.0f), (${vt("float", vec)})(0.0f), isnan(v));
        // 1.5 * 2^23 added rounds to nearest even, the integer in the low bits
        const ${vt("int", vec)} q = clamp(as_${vt("int", vec)}(v + 12582912.0f) - 0x4b400000 + zp, (${vt("int", vec)})(${qmin}), (${vt("int", vec)})(${qmax}));
%   if dst_dt in ("s4", "u4"):
%     if vec == 2:
        dst[o >> 1] = pack_nibbles2(as_uint2(q) & 15u);
%     else:
        vstore${vec // 2}(pack_nibbles${vec}(as_${vt("uint", vec)}(q) & 15u), 0, dst + (o >> 1));
%     endif
%   elif vec == 1:
        ((__global ${int_type} *)dst)[o] = (${int_type})q;
%   else:
        vstore${vec}(convert_${vt(int_type, vec)}(q), 0, (__global ${int_type} *)dst + o);
%   endif
% elif dst_dt == "f4_e2m1":
        // Rounded to nearest even by counting the midpoints |v| passes
        // (ties go to the even code): 0, 0.5, 1, 1.5, 2, 3, 4, 6; above 6
        // saturated; NaN fails every comparison (+0); the sign kept (-0 too).
        const ${vt("float", vec)} a = fabs(v);
        const ${vt("int", vec)} n = -((a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f)
                                 + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f));
        const ${vt("uint", vec)} c = as_${vt("uint", vec)}(n) | (as_${vt("uint", vec)}(v) >> 28 & 8u & ~as_${vt("uint", vec)}(isnan(v)));
%   if vec == 2:
        dst[o >> 1] = pack_nibbles2(c);
%   else:
        vstore${vec // 2}(pack_nibbles${vec}(c), 0, dst + (o >> 1));
%   endif
% else:
        v = select(clamp(v, ${float_literal(-top)}, ${float_literal(top)}), v, isnan(v));
%   if vec == 1:
        dst[o] = float_to_${dst_dt}(v);
%   else:
        vstore${vec}(float_to_${dst_dt}_x${vec}(v), 0, dst + o);
%   endif
% endif
</%def>\
<%def name="chunk_function()">\
// C elements from `first` quantized with the group's s and zp.
static void ${name}_chunk(__global const float *restrict src, __global uchar *restrict dst,
                          ${idx} first, float s, int zp)
{
    for (${idx} i = 0; i < ${chunk}u; i += ${vec}u) {
        const ${idx} o = first + i;
        const ${vt("float", vec)} x = ${load("o")};
${quantize_vector()}\
    }
}
</%def>\
<%def name="store_zp(g, value)">\
% if zp_dt == "s32":
        ((__global int *)zps)[${g}] = ${value};
% elif zp_dt in ("s8", "u8"):
        ((__global ${"char" if zp_dt == "s8" else "uchar"} *)zps)[${g}] = (${"char" if zp_dt == "s8" else "uchar"})${value};
% endif
</%def>\
<%def name="combine(g, lo, hi)">\
## The statistics of group g from its chunks' partials.
        float ${lo} = 0.0f, ${hi} = 0.0f;
        for (${idx} j = ${g} * ${parts}u; j < (${g} + 1) * ${parts}u; ++j) {
            ${lo} = fmin(${lo}, partials[2 * j]);
            ${hi} = fmax(${hi}, partials[2 * j + 1]);
        }
</%def>\
<%def name="load16(j)">\
## Vector j (of 16 elements; an expression) of the work-item's groups, as float16.
% if src_dt == "f16":
vload_half16(${j}, p)\
% elif src_dt == "bf16":
as_float16(convert_uint16(vload16(${j}, p)) << 16)\
% else:
vload16(${j}, p)\
% endif
</%def>\
<%def name="lane(n, b)">${"" if b == 1 else ".s" + "0123456789abcdef"[n]}</%def>\
<%def name="transpose_reduce(op, names, out, ty='float')">\
## ${ty}16 vectors `names` (one a group) combined with `op` into ${vt(ty, batch)} `out`, lane n
## the group of names[n]: each level halves the lanes a group holds and pairs two vectors.
<% level, cur, per = 0, list(names), 16 %>\
%   while per > 1:
<% nxt = [] %>\
%     if len(cur) == 1:
<% w = per // 2 %>\
    const ${vt(ty, w * len(names))} ${out}_${level}_0 = ${op}(${cur[0]}.even, ${cur[0]}.odd);
<% nxt.append(f"{out}_{level}_0") %>\
%     else:
%       for i in range(0, len(cur), 2):
    const ${ty}16 ${out}_${level}_${i // 2} = ${op}((${ty}16)(${cur[i]}.even, ${cur[i + 1]}.even), (${ty}16)(${cur[i]}.odd, ${cur[i + 1]}.odd));
<% nxt.append(f"{out}_{level}_{i // 2}") %>\
%       endfor
%     endif
<% cur, per, level = nxt, per // 2, level + 1 %>\
%   endwhile
    const ${vt(ty, batch)} ${out} = ${cur[0]};
</%def>\
<%def name="vector_codes(j, sfx, careful, store)">\
## Vector j (of 16 elements; an expression) of the work-item: its codes as
## int16 q, packed as c and given to `store`. The group's numbers are s, r,
## zp, ... with suffix sfx (a lane of the kernel's vectors, or "" for the
## careful function's scalars). The fast codes assume what the kernel checks
## (no NaN in an MX group; products away from halves) and redo otherwise.
    {
        const float16 x = ${load16(j)};
%   if dst_dt in int_range and scheme == "mx" and not careful:
        const int16 q = clamp(as_int16(fma(x, (float16)(m${sfx}), (float16)(12582912.0f))) - 0x4b400000, (int16)(${qmin}), (int16)(${qmax}));
%   elif dst_dt in int_range and scheme == "mx":
        float16 v = x * m${sfx};  // exact: a power of two
        v = select(clamp(v, -512.0f, 512.0f), (float16)(0.0f), isnan(v));
        const int16 q = clamp(as_int16(v + 12582912.0f) - 0x4b400000, (int16)(${qmin}), (int16)(${qmax}));
%   elif dst_dt in int_range and not careful:
        const float16 y = fma(x, (float16)(rlo${sfx}), (float16)(mz${sfx}));
        const float16 z = fma(select((float16)(hi${sfx}), x, x < hi${sfx}), (float16)(rhi${sfx}), (float16)(mz${sfx}));
        diff |= as_uint16(y) ^ as_uint16(z);
%     if scheme == "symmetric":
        const int16 q = as_int16(y);
%     else:
        const int16 q = clamp(as_int16(y), (int16)(${0x4b400000 + qmin}), (int16)(${0x4b400000 + qmax}));
%     endif
%   elif dst_dt in int_range:
        const float16 t = x / s${sfx} + 12582912.0f - 12582912.0f;
        const int16 q = convert_int16(min(max(select(t, (float16)(0.0f), isnan(t)), zlo${sfx}), zhi${sfx})) + zp${sfx};
%   else:
%     if scheme == "mx":
        const float16 v = x * m${sfx};  // exact: a power of two
%     else:
        const float16 v = x / s${sfx};
%     endif
        const float16 a = min(fabs(v), 6.0f);
        const float16 e = as_float16(as_uint16(max(a, 1.0f)) & 0xff800000u);
        const uint16 w = as_uint16(fma(e, (float16)(4194307.0f), a));
%     if scheme == "mx" and not careful:
        const int16 q = as_int16(bitselect(w + (w >> 22), as_uint16(v) >> 28, (uint16)(0xfffffff8u)));
%     else:
        const int16 q = as_int16(bitselect(w + (w >> 22), as_uint16(v) >> 28, (uint16)(0xfffffff8u))) & ~isnan(v);
%     endif
%   endif
%   if packed:
        const ulong8 l = as_ulong8(q);
        // 16 codes, two a byte: the low nibble of each even lane, then the odd one's
        const ulong c = as_ulong(convert_uchar8(bitselect(l, l >> 28, (ulong8)(0xf0))));
%   else:
        const ulong2 c = as_ulong2(convert_uchar16(q));
%   endif
        ${store}
    }
</%def>\
<%def name="batch_values(g)">\
## Group g (lane g of the group vectors) quantized, then the stores that end in it.
<% flagged = dst_dt in int_range and scheme != "mx" %>\
% if flagged:
    {
    uint16 diff = (uint16)(unbracketed${capture(lane, g, batch)});
% endif
% for v in range(nv):
${vector_codes(f"{g * nv + v}u", capture(lane, g, batch), False, f"b{g * nv + v} = c;")}\
% endfor
% if flagged:
    redo |= (uint)any(diff != 0u) << ${g};
    }
% endif
% for j in range(g * nv, (g + 1) * nv):
%   if j in stores:
<% first, k = stores[j]; n = k * word %>\
%     if n == 1:
    *(__global ulong *)(dst + (${idx})(g0 * ${group}u + ${first * 16}u)${" / 2" if packed else ""}) = b${first};
%     else:
    vstore${n}((${vt("ulong", n)})(${", ".join(f"b{i}" for i in range(first, first + k))}), 0, (__global ulong *)(dst + (${idx})(g0 * ${group}u + ${first * 16}u)${" / 2" if packed else ""}));
%     endif
%   endif
% endfor
% for offset in fetches[g]:
%   if prefetch == "builtin":
    __builtin_prefetch(next + ${offset}u);
%     if l2_ahead:
    __builtin_prefetch(far + ${offset}u, 0, 1);
%     endif
%   else:
    prefetch(next + ${offset}u, ${line});
%   endif
% endfor
</%def>\
<%def name="codes_comment()">\
% if dst_dt in int_range and scheme == "mx":
// Codes: 1.5 * 2^23 added rounds x * 2^-k (exact; below 2^(emax + 1) in
// magnitude, or infinite) to nearest even, the integer in the low bits.
% elif dst_dt in int_range:
// Codes: x / s rounded to nearest even from two fmas that add 1.5 * 2^23
// plus the zero point to x times each end of a bracket [rlo, rhi] of 1 / s,
// leaving the code in the low bits (y from rlo; z from rhi, x held at most
// the group's largest, so that a NaN gives a finite z). The quotient lies
// between the two products and rounding is monotonic, so where y == z it
// rounds to y's integer too, ties included (a tie lies strictly inside the
// bracket, whose ends then round apart). A group where any y != z, a NaN's
// included, is divided again after the stores.
% else:
// Codes: |v| to e2m1 to nearest even, saturated at 6: (2^22 + 3) e added,
// e = 2^E the binade of |v| (at least 1), rounds |v| to e2m1's grid there
// (e / 2 apart) and leaves its steps n above 2^22 e, plus 6, in the low bits
// of w. The code is n + 2E; w >> 22 is 298 + 2E, and 298 + 6 is 0 modulo 8
// (checked against every f32 below 8). Bit 3: the sign (-0 too); NaN: +0${" (its group redone)" if scheme == "mx" else ""}.
% endif
</%def>\
<%def name="batch_kernel()">\
// ${batch} groups of ${group} a work-item: their statistics as vectors of 16,
// reduced to one lane a group; the scales and zero points as vectors of
// ${batch}; then each group quantized from the values read again (cache),
// while a later work-item's groups are fetched into the cache, a line at a
// time: its statistics then read from the cache, not from memory.
${codes_comment()}\
__kernel void ${name}(__global const ${src_type} *restrict src, __global uchar *restrict dst,
                      __global uchar *restrict scales${", __global uchar *restrict zps" if zp_dt else ""})
{
    const ${idx} item = get_global_id(0);
    if (item >= ${items}u)
        return;
    const ${idx} g0 = item * ${batch}u;
    __global const ${src_type} *p = src + g0 * ${group}u;
    // The bytes of the groups of the work-item ${ahead} ahead (the last one's own:
    // nothing past the source). A select of two pointers here crashed Intel's
    // CPU compiler 2026.2.
    __global const uchar *next = (__global const uchar *)(src + min(g0 + ${ahead * batch}u, (${idx})${(items - 1) * batch}u) * ${group}u);
% if l2_ahead:
    // ... and of the work-item ${l2_ahead} ahead, into the L2 cache only.
    __global const uchar *far = (__global const uchar *)(src + min(g0 + ${l2_ahead * batch}u, (${idx})${(items - 1) * batch}u) * ${group}u);
% endif
% for g in range(batch):
%   if scheme == "mx":
    int16 h${g} = 0;
%   else:
    float16 h${g} = (float16)(0.0f);
%   endif
%   if scheme == "asymmetric":
    float16 l${g} = (float16)(0.0f);
%   endif
%   for v in range(nv):
    {
        const float16 x = ${load16(f"{g * nv + v}u")};
%     if scheme == "asymmetric":
        l${g} = select(l${g}, x, x < l${g});  // NaN skipped
        h${g} = select(h${g}, x, x > h${g});
%     elif scheme == "mx":
        h${g} = max(h${g}, as_int16(x) & 0x7fffffff);  // the bits of |x|: NaN above infinity
%     else:
        const float16 a = fabs(x);
        h${g} = select(h${g}, a, a > h${g});
%     endif
    }
%   endfor
% endfor
<% fv, iv = f"float{batch}", f"int{batch}" %>\
% if scheme == "mx":
${transpose_reduce("max", [f"h{g}" for g in range(batch)], "bits", "int")}\
    // A NaN in a group: the largest |x| again, NaN skipped, and after the
    // stores that group's codes again by the careful function (NaN to +0).
    const int has_nan = any(bits > 0x7f800000);
    const ${iv} hi = has_nan ? as_${iv}(${name}_absmax(p)) : bits;
% else:
${transpose_reduce("fmax", [f"h{g}" for g in range(batch)], "hi")}\
% endif
% if scheme == "asymmetric":
${transpose_reduce("fmin", [f"l{g}" for g in range(batch)], "lo")}\
% endif
% if scheme == "mx":
    // (vector bounds: Oclgrind clamps lanes past the first wrongly against scalar ones)
    const ${iv} k = clamp(convert_${iv}(as_${vt("uint", batch)}(hi) >> 23 & 0xffu) - ${127 + emax}, (${iv})(-127), (${iv})(127));
    const ${fv} m = as_${fv}((127 - k) << 23);  // 2^-k
    vstore${"" if batch == 1 else batch}(convert_${vt("uchar", batch)}(k + 127), 0, scales + g0);
% else:
%   if scale_dt == "f32":
%     if scheme == "asymmetric":
    ${fv} s = (hi - lo) / ${float_literal(qmax - qmin)};
%     else:
    ${fv} s = hi / ${float_literal(top)};
%     endif
    s = select(s, (${fv})(1.0f), s == 0.0f);
%     if scheme == "asymmetric":
    const ${iv} zp = convert_${iv}(clamp(rint(${float_literal(qmin)} - lo / s), ${float_literal(qmin)}, ${float_literal(qmax)}));
%     endif
    vstore${"" if batch == 1 else batch}(s, 0, (__global float *)scales + g0);
%   else:
    ${fv} s;
    ${iv} zp;
%     for n in range(batch):
    {
        int z;
        s${lane(n, batch)} = ${name}_scale(${"lo.s" + "0123456789abcdef"[n] if scheme == "asymmetric" else "0.0f"}, hi${lane(n, batch)}, &z);
        zp${lane(n, batch)} = z;
        ${name}_store_scale(scales, g0 + ${n}u, s${lane(n, batch)}, z);
    }
%     endfor
%   endif
%   if scheme == "symmetric" and scale_dt == "f32":
    const ${iv} zp = 0;
%   endif
%   if zp_dt in ("s4", "u4") and batch == 2:
    zps[g0 / 2] = (uchar)((zp.s0 & 15) | (zp.s1 & 15) << 4);
%   elif zp_dt in ("s4", "u4"):
    vstore${batch // 2}(convert_uchar${batch // 2}((zp.even & 15) | (zp.odd & 15) << 4), 0, zps + g0 / 2);
%   elif zp_dt == "s32":
    vstore${"" if batch == 1 else batch}(zp, 0, (__global int *)zps + g0);
%   elif zp_dt:
    vstore${"" if batch == 1 else batch}(convert_${vt("char" if zp_dt == "s8" else "uchar", batch)}(zp), 0, (__global ${"char" if zp_dt == "s8" else "uchar"} *)zps + g0);
%   endif
%   if dst_dt in int_range:
    // r is within 2.5 ulp of 1 / s (exact where the device divides exactly),
    // so r (1 -+ 2^${bracket_exp}), each rounded, lie below and above 1 / s by more
    // than 2^-24 of it, the rounded quotient's distance from x / s: x * rlo
    // and x * rhi bracket the quotient strictly (x != 0; |x / s| <= qmax -
    // qmin + 1, the stored scale rounding up: symmetric codes need no clamp).
    const ${fv} r = 1.0f / s;
    const ${fv} rlo = r * ${float_literal(1 - 2.0 ** bracket_exp)}, rhi = r * ${float_literal(1 + 2.0 ** bracket_exp)};
    const ${fv} mz = 12582912.0f + convert_${fv}(zp);  // 1.5 * 2^23 plus the zero point
    // 1: every code of the group divided, for scales outside [2^-100, 2^100]
    // (f16 ones past 2^15, which may be stored below the range's: 65504).
    const ${vt("uint", batch)} unbracketed = select((${vt("uint", batch)})(1u), (${vt("uint", batch)})(0u), (${iv})((s >= 0x1p-100f) & (s <= ${"0x1p15f" if scale_dt == "f16" else "0x1p100f"})));
    uint redo = 0;  // bit g: group g again, carefully
%   endif
% endif
    ${"ulong" if packed else "ulong2"} ${", ".join(f"b{j}" for j in range(batch * nv))};
% for g in range(batch):
${batch_values(g)}\
% endfor
% if scheme == "mx":
    if (has_nan) {
        // the groups with a NaN, after the stores: codes again, NaN to +0
        int hv[${batch}];
        float mv[${batch}];
        vstore${batch}(bits, 0, hv);
        vstore${batch}(m, 0, mv);
        for (uint g = 0; g < ${batch}u; ++g)
            if (hv[g] > 0x7f800000)
                ${name}_careful(p, dst + (${idx})(g0 * ${group}u)${" / 2" if packed else ""}, g, mv[g]);
    }
% elif dst_dt in int_range:
    if (redo) {
        // the flagged groups, after the stores: codes again, divided
        float sv[${batch}];
        int zv[${batch}];
        vstore${batch}(s, 0, sv);
        vstore${batch}(zp, 0, zv);
        for (uint g = 0; g < ${batch}u; ++g)
            if (redo >> g & 1u)
                ${name}_careful(p, dst + (${idx})(g0 * ${group}u)${" / 2" if packed else ""}, g, sv[g], zv[g]);
    }
% endif
}
</%def>\
<%def name="careful_function()">\
% if scheme == "mx":
// Group g's codes again, the careful way (rare): NaN to +0, the group
// holding one.
% else:
// Group g's codes again, the careful way (rare): x / s divided, the ends of
// its bracket having rounded apart (a NaN too), or its scale outside the
// range the bracket holds for.
% endif
// (No restrict: inlined, it left a call Oclgrind 21.10 cannot run.)
% if scheme == "mx":
static void ${name}_careful(__global const ${src_type} *p, __global uchar *out, uint g, float m)
% else:
static void ${name}_careful(__global const ${src_type} *p, __global uchar *out, uint g,
                           float s, int zp)
% endif
{
% if scheme != "mx":
    const float zlo = ${float_literal(qmin)} - (float)zp, zhi = ${float_literal(qmax)} - (float)zp;
% endif
    for (uint j = g * ${nv}u; j < (g + 1) * ${nv}u; ++j)
${indent(capture(vector_codes, "j", "", True, "*(__global ulong *)(out + j * 8u) = c;" if packed else "vstore2(c, j, (__global ulong *)out);"), 4)}\
}
</%def>\
<%def name="absmax_function()">\
// The largest |x| of each group of the work-item, NaN skipped (one holds a NaN).
static float${batch} ${name}_absmax(__global const ${src_type} *p)
{
    float h[${batch}];
    for (uint g = 0; g < ${batch}u; ++g) {
        float16 a = (float16)(0.0f);
        for (uint j = g * ${nv}u; j < (g + 1) * ${nv}u; ++j) {
            const float16 x = fabs(${load16("j")});
            a = select(a, x, x > a);  // NaN skipped
        }
        const float8 a8 = fmax(a.lo, a.hi);
        const float4 a4 = fmax(a8.lo, a8.hi);
        const float2 a2 = fmax(a4.lo, a4.hi);
        h[g] = fmax(a2.lo, a2.hi);
    }
    return vload${batch}(0, h);
}
</%def>\
${helper_functions()}\

${stats_function()}
${scale_function()}
% if batch:
%   if scheme == "mx":
${absmax_function()}
%   endif
%   if scheme == "mx" or dst_dt in int_range:
${careful_function()}
%   endif
${batch_kernel()}
% else:
${chunk_function()}
% if parts > 1:
__kernel void ${name}_partials(__global const float *restrict src, __global float *restrict partials)
{
    const ${idx} item = get_global_id(0);
    if (item >= ${items}u)
        return;
    float lo, hi;
    ${name}_stats(src, item * ${chunk}u, &lo, &hi);
    partials[2 * item] = lo;
    partials[2 * item + 1] = hi;
}

% endif
__kernel void ${name}(__global const float *restrict src, __global uchar *restrict dst,
                      __global uchar *restrict scales${", __global uchar *restrict zps" if zp_dt else ""}${", __global const float *restrict partials" if parts > 1 else ""})
{
    const ${idx} item = get_global_id(0);
    if (item >= ${items}u)
        return;
% if parts == 1:
%   if zp_dt in ("s4", "u4"):
    uint zp_byte = 0;
%   endif
    for (${idx} g = item * ${gpi}u; g < min(item * ${gpi}u + ${gpi}u, ${groups}u); ++g) {
        float lo, hi;
        int zp;
        ${name}_stats(src, g * ${chunk}u, &lo, &hi);
        const float s = ${name}_scale(lo, hi, &zp);
        ${name}_store_scale(scales, g, s, zp);
${store_zp("g", "zp")}\
%   if zp_dt in ("s4", "u4"):
        zp_byte |= ((uint)zp & 15u) << ((g & 1) << 2);
        if ((g & 1) || g + 1 == ${groups}u) {
            zps[g >> 1] = (uchar)zp_byte;
            zp_byte = 0;
        }
%   endif
        ${name}_chunk(src, dst, g * ${chunk}u, s, ${"0" if scheme == "mx" else "zp"});
    }
% else:
    const ${idx} g = item / ${parts}u;
${combine("g", "lo", "hi")}\
    int zp;
    const float s = ${name}_scale(lo, hi, &zp);
    if (item % ${parts}u == 0) {
        ${name}_store_scale(scales, g, s, zp);
${store_zp("g", "zp")}\
%   if zp_dt in ("s4", "u4"):
        // The byte of groups g and g + 1 (the even group's owner writes both).
        if ((g & 1) == 0) {
            uint zp_byte = (uint)zp & 15u;
            if (g + 1 < ${groups}u) {
${combine("g + 1", "lo1", "hi1")}\
                int zp1;
                ${name}_scale(lo1, hi1, &zp1);
                zp_byte |= ((uint)zp1 & 15u) << 4;
            }
            zps[g >> 1] = (uchar)zp_byte;
        }
%   endif
    }
    ${name}_chunk(src, dst, item * ${chunk}u, s, ${"0" if scheme == "mx" else "zp"});
% endif
}
% endif
