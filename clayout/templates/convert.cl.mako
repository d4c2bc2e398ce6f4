## Values: loading a data type as the compute type, the attribute formula,
## and storing back, shared by every kernel template. The including
## template's values (ct, args, storage, ...) are in scope.
<%!
    # The C spelling of each storage conversion, by data type.
    INT_TYPES = {"s32": "int", "s8": "char", "u8": "uchar"}
    INT_RANGE = {"s32": (-2147483648, 2147483520), "s8": (-128, 127), "u8": (0, 255)}
%>\
<%def name="vector_load(dt, ptr, off, n)">\
## n elements at ptr + off, as a vector of dt's storage type: a typed access
## where the plan proved them aligned (the compiler then emits one vector
## load; vloadN only promises element alignment).
% if aligned:
*(__global const ${storage[dt]}${n} *)(${ptr} + ${off})\
% else:
vload${n}(0, ${ptr} + ${off})\
% endif
</%def>\
<%def name="vector_store(dt, value, off, n)">\
% if aligned:
*(__global ${storage[dt]}${n} *)(dst + ${off}) = ${value};
% else:
vstore${n}(${value}, 0, dst + ${off});
% endif
</%def>\
<%def name="load(dt, ptr, off, n, space='__global')">\
## Element ``off`` of ``ptr`` (type dt) as the compute type, or n of them as a vector.
% if n == 1 and dt in INT_TYPES:
convert_${ct}(${ptr}[${off}])\
% elif n == 1 and dt == "f16":
${cast()}vload_half(${off}, (${space} const half *)${ptr})\
% elif n == 1 and dt == "bf16":
${cast()}bf16_to_float(${ptr}[${off}])\
% elif n == 1:
${ptr}[${off}]\
% elif dt in INT_TYPES:
convert_${ct}${n}(${vector_load(dt, ptr, off, n)})\
% elif ct == "float" or dt == "f64":
${float_vector(dt, ptr, off, n)}\
% else:
convert_double${n}(${float_vector(dt, ptr, off, n)})\
% endif
</%def>\
<%def name="float_vector(dt, ptr, off, n)">\
% if dt == "f16":
vload${"a" if aligned else ""}_half${n}(0, (__global const half *)(${ptr} + ${off}))\
% elif dt == "bf16":
as_float${n}(convert_uint${n}(${vector_load(dt, ptr, off, n)}) << 16)\
% else:
${vector_load(dt, ptr, off, n)}\
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
vstore${"a" if aligned else ""}_half${n}_rte(${x}, 0, (__global half *)(dst + ${off}));
% elif n == 1:
dst[${off}] = ${to_storage(dt, x, n)};
% else:
${vector_store(dt, capture(to_storage, dt, x, n), off, n)}\
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
<%def name="helper_functions()">\
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
</%def>\
