## One generated reorder or shuffle kernel. The kernel's structure lives
## here, one <%def> per part; render.py supplies the numbers and names
## (loop extents, strides, offset terms) from a KernelPlan.
<%!
    # The C spelling of each storage conversion, by data type.
    INT_TYPES = {"s32": "int", "s8": "char", "u8": "uchar"}
    INT_RANGE = {"s32": (-2147483648, 2147483520), "s8": (-128, 127), "u8": (0, 255)}
%>\
<%def name="load(dt, ptr, off, n)">\
## Element ``off`` of ``ptr`` (type dt) as the compute type, or n of them as a vector.
% if n == 1 and dt in INT_TYPES:
convert_${ct}(${ptr}[${off}])\
% elif n == 1 and dt == "f16":
${cast()}vload_half(${off}, (__global const half *)${ptr})\
% elif n == 1 and dt == "bf16":
${cast()}bf16_to_float(${ptr}[${off}])\
% elif n == 1:
${ptr}[${off}]\
% elif dt in INT_TYPES:
convert_${ct}${n}(vload${n}(0, ${ptr} + ${off}))\
% elif ct == "float" or dt == "f64":
${float_vector(dt, ptr, off, n)}\
% else:
convert_double${n}(${float_vector(dt, ptr, off, n)})\
% endif
</%def>\
<%def name="float_vector(dt, ptr, off, n)">\
% if dt == "f16":
vload_half${n}(0, (__global const half *)(${ptr} + ${off}))\
% elif dt == "bf16":
as_float${n}(convert_uint${n}(vload${n}(0, ${ptr} + ${off})) << 16)\
% else:
vload${n}(0, ${ptr} + ${off})\
% endif
</%def>\
<%def name="cast()">${"(double)" if ct == "double" else ""}</%def>\
<%def name="to_storage(dt, x, n)">\
## Compute-type value(s) x as dt's storage: rounded to nearest even,
## integers saturated with NaN -> 0 (spelled out, not convert_*_sat_rte:
## the built-ins vectorise poorly on PoCL).
<% vec = "" if n == 1 else str(n); f = "f" if ct == "float" else "" %>\
% if dt in ("f32", "f64") and storage[dt] == ct:
${x}\
% elif dt in ("f32", "f64"):
convert_float${vec}(${x})\
% elif dt == "bf16" and n == 1:
${"float_to_bf16" if ct == "float" else "double_to_bf16"}(${x})\
% elif dt == "bf16":
convert_ushort${n}(select((as_uint${n}(${x}) + 0x7fffu + ((as_uint${n}(${x}) >> 16) & 1u)) >> 16, (as_uint${n}(${x}) >> 16) | 0x40u, as_uint${n}(isnan(${x}))))\
% else:
<%
    low, high = INT_RANGE[dt]
    if dt == "s32" and ct == "double":
        high = 2147483647
    t = INT_TYPES[dt]
    if n == 1:
        clamped = f"clamp(isnan({x}) ? 0.0{f} : {x}, {low}.0{f}, {high}.0{f})"
    else:
        clamped = f"clamp(select({x}, ({ct}{n})0, isnan({x})), {low}.0{f}, {high}.0{f})"
%>\
%   if dt != "s32" and ct == "float" and n == 1:
## Adding 1.5 * 2^23 rounds a small float to nearest even and leaves the
## integer in the low mantissa bits (2x faster than rint on PoCL).
(${t})(as_int(${clamped} + 12582912.0f) - 0x4b400000)\
%   elif dt != "s32" and ct == "float":
convert_${t}${n}(as_int${n}(${clamped} + 12582912.0f) - 0x4b400000)\
%   elif n == 1:
(${t})rint(${clamped})\
%   else:
convert_${t}${n}(rint(${clamped}))\
%   endif
% endif
</%def>\
<%def name="store(dt, off, x, n)">\
## Store compute-type value(s) x as dt at dst[off].
% if dt == "f16" and n == 1:
vstore_half_rte(${x}, ${off}, (__global half *)dst);
% elif dt == "f16":
vstore_half${n}_rte(${x}, 0, (__global half *)(dst + ${off}));
% elif n == 1:
dst[${off}] = ${to_storage(dt, x, n)};
% else:
vstore${n}(${to_storage(dt, x, n)}, 0, dst + ${off});
% endif
</%def>\
<%def name="attr_value(arg)">\
## An attribute's value for the current element, in the compute type (a
## vector of one value per lane when it varies along the loaded vector).
% if arg.name in lane_args and arg.c_type == ct:
vload${block}(0, ${arg.name} + ${slice_index[arg.name]})\
% elif arg.name in lane_args:
convert_${ct}${block}(vload${block}(0, ${arg.name} + ${slice_index[arg.name]}))\
% elif arg.per_slice:
(${ct})${arg.name}[${slice_index[arg.name]}]\
% else:
(${ct})${arg.name}\
% endif
</%def>\
<%def name="apply_attributes(n, dst_off)">\
## DESIGN.md's formula, in its order: dst = (s_src (src - zp_src)
##   + beta (dst - zp_dst)) / s_dst + zp_dst.
<% cv = ct if n == 1 else f"{ct}{n}" %>\
% if "src_zero_point" in args:
x = x - ${attr_value(args["src_zero_point"])};
% endif
% if "src_scales" in args:
x = ${attr_value(args["src_scales"])} * x;
% endif
% if "sum_beta" in args:
${cv} old = ${load(dst_dt, "dst", dst_off, n)};
%   if "dst_zero_point" in args:
old = old - ${attr_value(args["dst_zero_point"])};
%   endif
x = x + (${ct})beta * old;
% endif
% if "dst_scales" in args:
x = x / ${attr_value(args["dst_scales"])};
% endif
% if "dst_zero_point" in args:
x = x + ${attr_value(args["dst_zero_point"])};
% endif
</%def>\
<%def name="convert(n)">\
## Read the element(s) at s_off, write them converted at d_off.
% if bit_copy and n == 1:
dst[d_off] = src[s_off];  // same type: a bit copy
% elif bit_copy:
vstore${n}(vload${n}(0, src + s_off), 0, dst + d_off);  // a bit copy
% elif saturate_only and n == 1:
dst[d_off] = convert_${dst_type}_sat(src[s_off]);
% elif saturate_only:
vstore${n}(convert_${dst_type}${n}_sat(vload${n}(0, src + s_off)), 0, dst + d_off);
% else:
${ct if n == 1 else f"{ct}{n}"} x = ${load(src_dt, "src", "s_off", n)};
${apply_attributes(n, "d_off")}\
${store(dst_dt, "d_off", "x", n)}\
% endif
</%def>\
<%def name="row_value(n)">\
## n source elements at s_off (a row of the register block), converted to
## the destination's storage.
% if bit_copy:
vload${n}(0, src + s_off)\
% elif saturate_only:
convert_${dst_type}${n}_sat(vload${n}(0, src + s_off))\
% else:
${to_storage(dst_dt, "x", n)}\
% endif
</%def>\
<%def name="decompose()">\
## The work-item's loop indices from its number, fastest loop first.
${idx} rest = item;
% for var, extent in decomposition:
%   if extent is None:
const ${idx} ${var} = rest;
%   elif extent == 1:
const ${idx} ${var} = 0;
%   else:
const ${idx} ${var} = rest % ${lit(extent)};
rest /= ${lit(extent)};
%   endif
% endfor
% for name, expr in bases:
const ${idx} ${name} = ${expr};
% endfor
</%def>\
<%def name="element_offsets(with_dst)">\
## Logical indices the element needs, then its offsets on both sides.
% for name, expr in element:
const ${idx} ${name} = ${expr};
% endfor
const ${idx} s_off = ${s_off};
% if with_dst:
const ${idx} d_off = ${d_off};
% endif
</%def>\
<%def name="elements()">\
## Element by element over the work-item's run of the destination.
for (int k = 0; k < ${vec}; ++k) {
${indent(capture(element_offsets, True), 4)}\
% if padding:
    if (${padding}) {
        dst[d_off] = 0;  // padding
        continue;
    }
% endif
${indent(capture(convert, 1), 4)}\
}
</%def>\
<%def name="vectors()">\
## ${vec} elements contiguous on both sides, as one vector.
const int k = 0;
${element_offsets(True)}\
% if padding:
if (${padding}) {
    vstore${vec}((${dst_type}${vec})0, 0, dst + d_off);  // padding
} else {
${indent(capture(convert, vec), 4)}\
}
% else:
${convert(vec)}\
% endif
</%def>\
<%def name="register_transpose()">\
## Load ${block} vectors along the source's contiguous loop (one per step k
## of the destination's innermost loop), convert them, store their transpose.
<% vector = f"{dst_type}{block}" %>\
${vector} ${", ".join(f"r{k}" for k in range(block))};
% for k in range(block):
{
    const int k = ${k};
${indent(capture(element_offsets, False), 4)}\
%   if padding:
    if (${padding}) {
        r${k} = (${vector})0;  // a padding row
    } else {
%   endif
%   if not bit_copy and not saturate_only:
    ${ct}${block} x = ${load(src_dt, "src", "s_off", block)};
${indent(capture(apply_attributes, block, None), 4)}\
%   endif
    r${k} = ${row_value(block)};
%   if padding:
    }
%   endif
}
% endfor
% for j in range(block):
vstore${block}((${vector})(${", ".join(f"r{k}.s{'0123456789abcdef'[j]}" for k in range(block))}), 0, dst + ${transpose_offsets[j]});
% endfor
</%def>\
<%def name="item_body()">\
${decompose()}\
% if block:
${register_transpose()}\
% elif vector:
${vectors()}\
% else:
${elements()}\
% endif
</%def>\
// clayout ${kind}: ${src_desc} -> ${dst_desc}
// Each work-item ${work}.
// Loops, outermost first: ${loops_comment}
#pragma OPENCL FP_CONTRACT OFF
% if fp64:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
% if "bf16" in helpers:
## Guards: several generated kernels may share one program (batch_builds).
#ifndef CLAYOUT_BF16_HELPERS
#define CLAYOUT_BF16_HELPERS

inline float bf16_to_float(ushort b) { return as_float((uint)b << 16); }

inline ushort float_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u);  // NaN stays NaN (quiet)
    u += 0x7fffu + ((u >> 16) & 1u);          // round to nearest even
    return (ushort)(u >> 16);
}
#endif
% endif
% if "bf16_from_double" in helpers:
#ifndef CLAYOUT_BF16_FROM_DOUBLE
#define CLAYOUT_BF16_FROM_DOUBLE

// Round once: to f32 rounded to odd (cannot double-round), then to bf16.
inline ushort double_to_bf16(double d)
{
    float f = convert_float_rtz(d);
    if (!isnan(d) && (double)f != d)
        f = as_float(as_uint(f) | 1u);
    return float_to_bf16(f);
}
#endif
% endif

__kernel void ${name}(__global const ${src_type} *restrict src,
        __global ${dst_type} *restrict dst${"".join(", " + declaration(a) for a in args.values())})
{
% if chunks > 1:
    for (int chunk = 0; chunk < ${chunks}; ++chunk) {
        const ${idx} item = get_global_id(0) + chunk * (${idx})get_global_size(0);
        if (item >= ${lit(items)})
            return;
${indent(capture(item_body), 8)}\
    }
% else:
    const ${idx} item = get_global_id(0);
    if (item >= ${lit(items)})
        return;
${indent(capture(item_body), 4)}\
% endif
}
