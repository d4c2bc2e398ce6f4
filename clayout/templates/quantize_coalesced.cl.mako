## Dynamic quantization on the GPU strategy (gpu/render_quantize.py): a
## work-group of ${lanes} work-items takes ${passes} passes of ${4 * lanes}
## consecutive elements, each work-item 4 of them per pass, so a warp reads
## 512 consecutive bytes per load (256 of an f16 or bf16 source, widened to
## f32 as loaded). A group of L = ${group} elements is
## ${group // 4} neighbouring work-items of one pass: their statistics meet
## in local memory (a butterfly, every work-item ends with its group's),
## each quantizes its 4 elements, and the codes, scales and zero points are
## staged in local memory and stored by neighbouring work-items at the end.
<%namespace file="convert.cl.mako" import="*"/>\
<%namespace file="quantize.cl.mako" import="scale_function, vt"/>\
<%
    seg = group // 4                      # work-items a group
    per_pass = 4 * lanes                  # elements a pass
    groups_wg = passes * per_pass // group  # groups a work-group
    code_bytes = 2 if packed else 4       # a work-item's codes, per pass
    staged_bytes = passes * lanes * code_bytes
    buf = 0  # the butterfly's buffer, alternating across passes too
%>\
<%def name="codes()">\
## x (float4) quantized with s and zp (m = 2^-k for MX): the work-item's
## 4 codes, as `c` (a uint of two bytes for 4-bit types, else four).
% if scheme == "mx":
        float4 v = x * m;  // exact: a power of two
% else:
        float4 v = x / s;
% endif
% if dst_dt in int_range:
        v = select(clamp(v, -512.0f, 512.0f), (float4)(0.0f), isnan(v));
        // 1.5 * 2^23 added rounds to nearest even, the integer in the low
        // bits. (Vector bounds: Oclgrind reads past scalar ones.)
        const int4 q = clamp(as_int4(v + 12582912.0f) - 0x4b400000 + zp, (int4)(${qmin}), (int4)(${qmax}));
%   if packed:
        const uint4 u = as_uint4(q) & 15u;
        const uint c = u.s0 | u.s1 << 4 | u.s2 << 8 | u.s3 << 12;
%   else:
        const uint4 u = as_uint4(q) & 255u;
        const uint c = u.s0 | u.s1 << 8 | u.s2 << 16 | u.s3 << 24;
%   endif
% elif dst_dt == "f4_e2m1":
        // |v| to e2m1 to nearest even, saturated at 6: below 1 the grid of
        // 0.5 (2^22 added rounds to it), from 1 one mantissa bit kept
        // (rounded to even at bit 22), as the CPU strategy's vector kernel;
        // the sign kept (-0 too); NaN: +0. (No sum of comparisons: Oclgrind
        // widens vector booleans wrongly.)
        const float4 a = min(fabs(v), 6.0f);
        const uint4 w = as_uint4(a);
        const int4 n = select(as_int4(a + 0x1p22f) - 0x4a800000,
                              as_int4((w + 0x1fffffu + (w >> 22 & 1u)) >> 22) - 252, a >= 1.0f);
        const uint4 u = as_uint4((n | as_int4(as_uint4(v) >> 28 & 8u)) & ~isnan(v));
        const uint c = u.s0 | u.s1 << 4 | u.s2 << 8 | u.s3 << 12;
% else:
        v = select(clamp(v, ${float_literal(-top)}, ${float_literal(top)}), v, isnan(v));
        const uint c = as_uint(float_to_${dst_dt}_x4(v));
% endif
</%def>\
${helper_functions()}\

${scale_function()}

__kernel __attribute__((reqd_work_group_size(${lanes}, 1, 1)))
void ${name}(__global const ${src_type} *restrict src, __global uchar *restrict dst,
             __global uchar *restrict scales${", __global uchar *restrict zps" if zp_dt else ""})
{
    // Two buffers of statistics, read in one step of the butterfly and
    // written in the next: one barrier a step.
    __local float lo_part[2][${lanes}], hi_part[2][${lanes}];
    __local uint staged[${staged_bytes // 4}];  // the codes, ${code_bytes} bytes a work-item a pass
    __local float scale_of[${groups_wg}];
    __local int zp_of[${groups_wg}];
    const uint lane = get_local_id(0);
    const ${idx} base = (${idx})get_group_id(0) * ${passes * per_pass}u;
% for p in range(passes):
    {
        // Pass ${p}: whole groups, so a group's work-items agree on `in`.
        const ${idx} e = base + ${p * per_pass}u + 4u * lane;
        const bool in = e < ${elements}u;
% if src_dt == "f16":
        // One 8-byte load, widened in registers (vloada_half4 from global
        // memory is four 2-byte loads in clang's NVPTX code).
        const ushort4 h = in ? *(__global const ushort4 *)(src + e) : (ushort4)(0);
        const float4 x = vload_half4(0, (const half *)&h);
% elif src_dt == "bf16":
        const float4 x = in ? as_float4(convert_uint4(*(__global const ushort4 *)(src + e)) << 16)
                            : (float4)(0.0f);
% else:
        const float4 x = in ? *(__global const float4 *)(src + e) : (float4)(0.0f);
% endif
%   if scheme == "asymmetric":
        float lo = fmin(fmin(fmin(x.s0, x.s1), fmin(x.s2, x.s3)), 0.0f);
        float hi = fmax(fmax(fmax(x.s0, x.s1), fmax(x.s2, x.s3)), 0.0f);
%   else:
        const float4 ax = fabs(x);
        float lo = 0.0f;
        float hi = fmax(fmax(fmax(ax.s0, ax.s1), fmax(ax.s2, ax.s3)), 0.0f);
%   endif
<% step = 1 %>\
%   while step < seg:
        lo_part[${buf}][lane] = lo;
        hi_part[${buf}][lane] = hi;
        barrier(CLK_LOCAL_MEM_FENCE);
        lo = fmin(lo, lo_part[${buf}][lane ^ ${step}u]);
        hi = fmax(hi, hi_part[${buf}][lane ^ ${step}u]);
<% step, buf = step * 2, 1 - buf %>\
%   endwhile
        int zp;
        const float s = ${name}_scale(lo, hi, &zp);
%   if scheme == "mx":
        const float m = s;  // 2^-k; zp holds k
        const int k = zp;
        zp = 0;
%   endif
${codes()}\
%   if packed:
        ((__local ushort *)staged)[${p * lanes}u + lane] = (ushort)c;
%   else:
        staged[${p * lanes}u + lane] = c;
%   endif
        if (lane % ${seg}u == 0) {
            scale_of[${p * per_pass // group}u + lane / ${seg}u] = s;
            zp_of[${p * per_pass // group}u + lane / ${seg}u] = ${"k" if scheme == "mx" else "zp"};
        }
    }
% endfor
    barrier(CLK_LOCAL_MEM_FENCE);
    // The staged codes: 16 bytes a work-item, neighbours on neighbouring bytes.
    const ${idx} dst_base = base${" / 2" if packed else ""};
    const ${idx} dst_end = ${elements // 2 if packed else elements}u;
    for (uint i = lane; i < ${staged_bytes // 16}u; i += ${lanes}u) {
        const ${idx} at = dst_base + 16u * i;
        const uint4 w = vload4(i, staged);
        if (at + 16u <= dst_end) {
            *(__global uint4 *)(dst + at) = w;
        } else {
            for (uint b = 0; b < 16u && at + b < dst_end; ++b)
                dst[at + b] = ((__local const uchar *)staged)[16u * i + b];
        }
    }
    // Scales and zero points of the work-group's groups, neighbours on
    // neighbouring groups.
    const ${idx} g0 = base / ${group}u;
    for (uint i = lane; i < ${groups_wg}u && g0 + i < ${groups}u; i += ${lanes}u) {
        const float s = scale_of[i];
        const int z = zp_of[i];
        ${name}_store_scale(scales, g0 + i, s, z);
% if zp_dt == "s32":
        ((__global int *)zps)[g0 + i] = z;
% elif zp_dt in ("s8", "u8"):
        zps[g0 + i] = (uchar)z;
% elif zp_dt in ("s4", "u4"):
        // Two a byte: the even group's work-item writes both (g0 is even).
        if ((i & 1) == 0)
            zps[(g0 + i) / 2] = (uchar)((z & 15) | (g0 + i + 1 < ${groups}u ? (zp_of[i + 1] & 15) << 4 : 0));
% endif
    }
}
