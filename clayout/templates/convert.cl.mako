## Values: loading a data type as the compute type, the attribute formula,
## and storing back, shared by every kernel template. The including
## template's values (ct, args, storage, ...) are in scope.
<%!
    # The C spelling of each storage conversion, by data type.
    INT_TYPES = {"s32": "int", "s8": "char", "u8": "uchar", "s4": "char", "u4": "uchar"}
    INT_RANGE = {"s32": (-2147483648, 2147483520), "s8": (-128, 127), "u8": (0, 255),
                 "s4": (-8, 7), "u4": (0, 15)}
    # Types decoded and encoded by the helper functions below.
    SMALL_FLOATS = ("f8_e5m2", "f8_e4m3", "f4_e2m1")
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
% if dt == "s4":
convert_${ct}((int)(nibble(${ptr}, ${off}) << 28) >> 28)\
% elif dt == "u4":
convert_${ct}(nibble(${ptr}, ${off}))\
% elif dt == "f4_e2m1":
f4_e2m1_to_float(nibble(${ptr}, ${off}))\
% elif dt in SMALL_FLOATS:
${dt}_to_float(${ptr}[${off}])\
% elif n == 1 and dt in INT_TYPES:
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
% if dt in SMALL_FLOATS:
float_to_${dt}(${x})\
% elif dt in ("f32", "f64") and storage[dt] == ct:
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
<%def name="to_code(dt, x)">\
## Compute-type value x as the 4-bit code of dt (in the low nibble).
% if dt == "f4_e2m1":
${to_storage(dt, x, 1)}\
% else:
((uint)${to_storage(dt, x, 1)} & 15u)\
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
% if "nibble" in helpers:
#ifndef CLAYOUT_NIBBLE
#define CLAYOUT_NIBBLE

// Element i of a 4-bit tensor: two to a byte, the first in the low nibble.
inline uint nibble(__global const uchar *p, ulong i) { return (p[i >> 1] >> ((i & 1) << 2)) & 15u; }
#endif
% endif
% if helpers & set(SMALL_FLOATS):
#ifndef CLAYOUT_SMALL_FLOATS
#define CLAYOUT_SMALL_FLOATS

// 2^n as a float (n within the normal exponents).
inline float pow2(int n) { return as_float((uint)(n + 127) << 23); }

// A finite code of a small float (e exponent bits, m mantissa bits,
// exponent bias b) as a float: exact, as every such value is an f32.
inline float small_to_float(uint code, uint e, uint m, int b)
{
    const uint sign = (code >> (e + m)) << 31;
    const uint exp = (code >> m) & ((1u << e) - 1u);
    const uint man = code & ((1u << m) - 1u);
    const float v = exp == 0 ? (float)man * pow2(1 - b - (int)m)   // subnormal
                             : as_float((uint)((int)exp - b + 127) << 23 | man << (23 - m));
    return as_float(as_uint(v) | sign);
}

// x rounded once, to nearest even, to a small float's code; x is not NaN
// and its magnitude rounds to at most the format's largest value.
inline uint float_to_small(float x, uint e, uint m, int b)
{
    const uint u = as_uint(x);
    const float a = as_float(u & 0x7fffffffu);
    // The step between neighbouring values at a's exponent (subnormals
    // share the smallest normal's): rint of a / step rounds a to one.
    const int ex = max((int)(u >> 23 & 0xffu) - 127, 1 - b) - (int)m;
    const float r = rint(a * pow2(-ex)) * pow2(ex);
    const uint code = r < pow2(1 - b)
        ? (uint)(r * pow2(b - 1 + (int)m))                              // subnormal
        : ((as_uint(r) >> 23) - 127 + b) << m | (as_uint(r) >> (23 - m) & ((1u << m) - 1u));
    return (u >> 31) << (e + m) | code;
}
#endif
% endif
% if "f8_e5m2" in helpers:
#ifndef CLAYOUT_F8_E5M2
#define CLAYOUT_F8_E5M2

inline float f8_e5m2_to_float(uchar c)
{
    if ((c & 0x7c) == 0x7c)  // the top exponent: inf, or NaN
        return as_float((uint)(c >> 7) << 31 | ((c & 3) ? 0x7fc00000u : 0x7f800000u));
    return small_to_float(c, 5, 2, 15);
}

inline uchar float_to_f8_e5m2(float x)
{
    const uint s = as_uint(x) >> 24 & 0x80u, a = as_uint(x) & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uchar)(s | 0x7eu);  // NaN stays NaN
    if (a >= 0x47700000u)
        return (uchar)(s | 0x7cu);  // 61440 and above round past 57344: inf
    return (uchar)float_to_small(x, 5, 2, 15);
}
#endif
% endif
% if "f8_e4m3" in helpers:
#ifndef CLAYOUT_F8_E4M3
#define CLAYOUT_F8_E4M3

inline float f8_e4m3_to_float(uchar c)
{
    if ((c & 0x7f) == 0x7f)  // the only NaN codes; there is no inf
        return as_float((uint)(c >> 7) << 31 | 0x7fc00000u);
    return small_to_float(c, 4, 3, 7);
}

inline uchar float_to_f8_e4m3(float x)
{
    const uint s = as_uint(x) >> 24 & 0x80u, a = as_uint(x) & 0x7fffffffu;
    if (a > 0x43e80000u)
        return (uchar)(s | 0x7fu);  // NaN, inf, and above 464 (past 448): NaN
    return (uchar)float_to_small(x, 4, 3, 7);
}
#endif
% endif
% if "f4_e2m1" in helpers:
#ifndef CLAYOUT_F4_E2M1
#define CLAYOUT_F4_E2M1

inline float f4_e2m1_to_float(uint c) { return small_to_float(c, 2, 1, 1); }

inline uint float_to_f4_e2m1(float x)
{
    const uint a = as_uint(x) & 0x7fffffffu;
    if (a > 0x7f800000u)
        return 0u;                         // no NaN in the format: +0
    if (a >= 0x40c00000u)
        return as_uint(x) >> 28 & 8u | 7u; // 6 and above, inf too: saturate at 6
    return float_to_small(x, 2, 1, 1);
}
#endif
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
</%def>\
