## Values: loading a data type as the compute type, the attribute formula,
## and storing back, shared by every kernel template. The including
## template's values (ct, args, storage, ...) are in scope.
<%!
    from types import SimpleNamespace

    # The C spelling of each storage conversion, by data type.
    INT_TYPES = {"s32": "int", "s8": "char", "u8": "uchar", "s4": "char", "u4": "uchar"}
    INT_RANGE = {"s32": (-2147483648, 2147483520), "s8": (-128, 127), "u8": (0, 255),
                 "s4": (-8, 7), "u4": (0, 15)}
    # Types decoded and encoded by the helper functions below.
    SMALL_FLOATS = ("f8_e5m2", "f8_e4m3", "f4_e2m1", "e8m0")
    # Two elements to a byte, the first in the low nibble.
    PACKED = ("s4", "u4", "f4_e2m1")
    # The 8-bit floats' fields: exponent bits, mantissa bits, bias.
    F8 = {"f8_e5m2": (5, 2, 15), "f8_e4m3": (4, 3, 7)}
%>\
<%def name="vector_load(dt, ptr, off, n)">\
## n elements at ptr + off, as a vector of dt's storage type: a typed access
## where the plan proved them aligned (the compiler then emits one vector
## load; vloadN only promises element alignment). n 4-bit elements (n even,
## off even) are the n / 2 bytes holding them.
% if dt in PACKED and n == 2:
${ptr}[${off} >> 1]\
% elif dt in PACKED and aligned:
*(__global const uchar${n // 2} *)(${ptr} + (${off} >> 1))\
% elif dt in PACKED:
vload${n // 2}(0, ${ptr} + (${off} >> 1))\
% elif aligned:
*(__global const ${storage[dt]}${n} *)(${ptr} + ${off})\
% else:
vload${n}(0, ${ptr} + ${off})\
% endif
</%def>\
<%def name="vector_store(dt, value, off, n)">\
## n elements at dst + off (4-bit ones: value holds their n / 2 bytes), by
## a typed store where the plan proved the destination's vectors aligned.
% if dt in PACKED and n == 2:
dst[${off} >> 1] = ${value};
% elif dt in PACKED and (aligned or typed_store):
*(__global uchar${n // 2} *)(dst + (${off} >> 1)) = ${value};
% elif dt in PACKED:
vstore${n // 2}(${value}, 0, dst + (${off} >> 1));
% elif aligned or typed_store:
*(__global ${storage[dt]}${n} *)(dst + ${off}) = ${value};
% else:
vstore${n}(${value}, 0, dst + ${off});
% endif
</%def>\
<%def name="load(dt, ptr, off, n, space='__global')">\
## Element ``off`` of ``ptr`` (type dt) as the compute type, or n of them as a vector.
% if dt == "s4" and n > 1:
## (the code shifted to the top of a char and back: its sign extended)
convert_${ct}${n}(as_char${n}(unpack_nibbles${n}(${vector_load(dt, ptr, off, n)}) << 4) >> 4)\
% elif dt == "u4" and n > 1:
convert_${ct}${n}(unpack_nibbles${n}(${vector_load(dt, ptr, off, n)}))\
% elif dt in F8 and n > 1:
${dt}_to_float_x${n}(${vector_load(dt, ptr, off, n)})\
% elif dt == "e8m0" and n > 1:
## (lane by lane: a power of two is its exponent bits, no vector helper needed)
(${ct}${n})(${", ".join(f"e8m0_to_float({ptr}[{off} + {j}])" for j in range(n))})\
% elif dt == "s4":
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
${float_vector(dt, ptr, off, n, space)}\
% else:
convert_double${n}(${float_vector(dt, ptr, off, n, space)})\
% endif
</%def>\
<%def name="float_vector(dt, ptr, off, n, space)">\
% if dt == "f16":
vload${"a" if aligned and space == "__global" else ""}_half${n}(0, (${space} const half *)(${ptr} + ${off}))\
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
% if dt == "e8m0" and n > 1:
(uchar${n})(${", ".join(f"float_to_e8m0(({x}).s{'0123456789abcdef'[j]})" for j in range(n))})\
% elif dt in SMALL_FLOATS and n > 1:
float_to_${dt}_x${n}(${x})\
% elif dt in SMALL_FLOATS:
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
<%def name="codes(dt, x, n)">\
## Compute-type values x (a vector of n) as 4-bit codes of dt, in the low
## nibbles of a uint vector: rounded to nearest even and saturated as
## to_storage does, the two's complement kept for s4.
<% low, high = INT_RANGE[dt] %>\
(as_uint${n}(as_int${n}(clamp(select(${x}, (${ct}${n})0, isnan(${x})), ${low}.0f, ${high}.0f) + 12582912.0f) - 0x4b400000) & 15u)\
</%def>\
<%def name="store(dt, off, x, n)">\
## Store compute-type value(s) x as dt at dst[off].
% if dt in ("s4", "u4") and n > 1:
${vector_store(dt, f"pack_nibbles{n}({capture(codes, dt, x, n)})", off, n)}\
% elif dt == "f16" and n > 1 and (aligned or typed_store) and f"float_to_f16_x{n}" in helpers:
${vector_store(dt, f"float_to_f16_x{n}({x})", off, n)}\
% elif dt == "f16" and n == 1:
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
vload${lane_args[arg.name]}(0, ${arg.name} + ${slice_index[arg.name]})\
% elif arg.name in lane_args:
convert_${ct}${lane_args[arg.name]}(vload${lane_args[arg.name]}(0, ${arg.name} + ${slice_index[arg.name]}))\
% elif arg.name in staged and staged[arg.name].lanes:
(${ct}${len(staged[arg.name].lanes)})(${", ".join(f"{staged[arg.name].array}[{lane}]" for lane in staged[arg.name].lanes)})\
% elif arg.name in staged:
(${ct})${staged[arg.name].array}[${slice_index[arg.name]}]\
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
% if "src_zero_points" in args:
x = x - ${attr_value(args["src_zero_points"])};
% endif
% if "src_scales" in args:
x = ${attr_value(args["src_scales"])} * x;
% endif
% if "sum_beta" in args:
${cv} old = ${load(dst_dt, "dst", dst_off, n)};
%   if "dst_zero_points" in args:
old = old - ${attr_value(args["dst_zero_points"])};
%   endif
x = x + (${ct})beta * old;
% endif
% if "dst_scales" in args:
x = x / ${attr_value(args["dst_scales"])};
% endif
% if "dst_zero_points" in args:
x = x + ${attr_value(args["dst_zero_points"])};
% endif
</%def>\
<%def name="f8_fields(dt, n)">\
## The numbers of an 8-bit float's codec (see f8_decoder, f8_encoder).
<%
    e, m, b = F8[dt]
    return SimpleNamespace(
        m=m, b=b, v="" if n == 1 else str(n), x="" if n == 1 else f"_x{n}",
        drop=23 - m,                      # f32 mantissa bits the format lacks
        rebias=127 - b,                   # added to the format's exponent field
        min_normal=(128 - b) << 23,       # 2^(1 - b) as f32 bits
        step=1 - b - m,                   # log2 of the subnormals' step
        magic=(1 - b - m + 23 + 127) << 23,  # 2^(step + 23): its f32 step is 2^step
        top=(1 << (e + m)) - (1 << m))    # exponent field all ones, mantissa 0
%>\
</%def>\
<%def name="f8_decoder(dt, n)">\
## An 8-bit float's codes as floats, one (n == 1) or a vector of n at a
## time: bit operations and selects, no branches, so that it vectorises.
## Exact: every code's value is an f32.
<% f = f8_fields(dt, n); v, x = f.v, f.x %>\
#ifndef CLAYOUT_${dt.upper()}_TO_FLOAT${x.upper()}
#define CLAYOUT_${dt.upper()}_TO_FLOAT${x.upper()}

inline float${v} ${dt}_to_float${x}(uchar${v} code)
{
    const uint${v} c = convert_uint${v}(code), a = c & 0x7fu;
    // Normal: the fields moved into place, the exponent rebiased; exponent
    // field 0: the mantissa times the subnormals' step.
    float${v} f = select(as_float${v}((a << ${f.drop}) + ${hex(f.rebias << 23)}u),
                     convert_float${v}(a) * 0x1p${f.step}f, a < ${1 << f.m}u);
% if dt == "f8_e5m2":
    f = select(f, as_float${v}((uint${v})0x7f800000u), a == ${hex(f.top)}u);  // inf
    f = select(f, as_float${v}((uint${v})0x7fc00000u), a > ${hex(f.top)}u);   // NaN
% else:
    f = select(f, as_float${v}((uint${v})0x7fc00000u), a == 0x7fu);  // the only NaN; no inf
% endif
    return as_float${v}(as_uint${v}(f) | (c & 0x80u) << 24);
}
#endif
</%def>\
<%def name="f8_encoder(dt, n)">\
## Floats as an 8-bit float's codes, one or n at a time, without branches:
## rounded once, to nearest even, with the format's overflow and NaN rules.
<% f = f8_fields(dt, n); v, x = f.v, f.x %>\
#ifndef CLAYOUT_FLOAT_TO_${dt.upper()}${x.upper()}
#define CLAYOUT_FLOAT_TO_${dt.upper()}${x.upper()}

inline uchar${v} float_to_${dt}${x}(float${v} x)
{
    const uint${v} u = as_uint${v}(x), a = u & 0x7fffffffu;
    // Normal: the mantissa rounded to ${f.m} bits, to nearest even, in the
    // integer bits (a carry moves into the exponent, as it should), then
    // the exponent rebiased.
    uint${v} code = ((a + ${hex((1 << (f.drop - 1)) - 1)}u + (a >> ${f.drop} & 1u)) >> ${f.drop}) - ${hex(f.rebias << f.m)}u;
    // Below 2^${1 - f.b}: adding 2^${f.step + 23}, whose step is the subnormals'
    // (2^${f.step}), rounds |x| to nearest even and leaves its code in the
    // low bits (an f32 subnormal flushed to zero rounds to 0 all the same).
    code = select(code, as_uint${v}(as_float${v}(a) + 0x1p${f.step + 23}f) - ${hex(f.magic)}u, a < ${hex(f.min_normal)}u);
% if dt == "f8_e5m2":
    code = select(code, (uint${v})${hex(f.top)}u, a >= 0x47700000u);  // 61440 and above round past 57344: inf
    code = select(code, (uint${v})${hex(f.top | 1 << (f.m - 1))}u, a > 0x7f800000u);  // NaN stays NaN
% else:
    code = select(code, (uint${v})0x7fu, a > 0x43e80000u);  // NaN, inf, and above 464 (past 448): NaN
% endif
    return convert_uchar${v}(code | (u >> 24 & 0x80u));
}
#endif
</%def>\
<%def name="f16_encoder(n)">\
## n floats as f16 codes in integer operations, for the GPU strategy's typed
## vector stores: NVIDIA's OpenCL stores vstore_halfN_rte's vectors element
## by element (on an H200 f32->f16 went from 0.52 of a copy's rate to 0.93
## this way). Rounded once, to nearest even; overflow to infinity; NaN
## stays NaN (quiet, the top of its payload kept).
<% v = str(n); x = f"_x{n}" %>\
#ifndef CLAYOUT_FLOAT_TO_F16${x.upper()}
#define CLAYOUT_FLOAT_TO_F16${x.upper()}

inline ushort${v} float_to_f16${x}(float${v} x)
{
    const uint${v} u = as_uint${v}(x), a = u & 0x7fffffffu;
    // Normal: the mantissa rounded to 10 bits, to nearest even, in the
    // integer bits (a carry moves into the exponent), the exponent rebiased.
    uint${v} code = ((a + 0xfffu + (a >> 13 & 1u)) >> 13) - 0x1c000u;
    // Below 2^-14: 0.5 + |x| rounds |x| to a multiple of 2^-24 (the
    // subnormals' step, and the f32 ulp of 0.5), leaving its code in the
    // low bits.
    code = select(code, as_uint${v}(as_float${v}(a) + 0.5f) - 0x3f000000u, a < 0x38800000u);
    code = select(code, (uint${v})0x7c00u, a >= 0x477ff000u);              // from 65520: inf
    code = select(code, 0x7e00u | (a >> 13 & 0x1ffu), a > 0x7f800000u);   // NaN
    return convert_ushort${v}(code | (u >> 16 & 0x8000u));
}
#endif
</%def>\
<%def name="helper_functions()">\
% if "nibble" in helpers:
#ifndef CLAYOUT_NIBBLE
#define CLAYOUT_NIBBLE

// Element i of a 4-bit tensor: two to a byte, the first in the low nibble.
inline uint nibble(__global const uchar *p, ulong i) { return (p[i >> 1] >> ((i & 1) << 2)) & 15u; }
#endif
% endif
% if "f4_e2m1" in helpers:
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
## The 8-bit floats' codecs: both directions for one value (helper "f8_e4m3"),
## vector ones by their function names ("float_to_f8_e4m3_x16").
% for dt in F8:
%   if dt in helpers:
${f8_decoder(dt, 1)}\
${f8_encoder(dt, 1)}\
%   endif
%   for h in sorted(helpers, key=str):
%     if h.startswith(f"{dt}_to_float_x"):
${f8_decoder(dt, int(h.rsplit("_x", 1)[1]))}\
%     elif h.startswith(f"float_to_{dt}_x"):
${f8_encoder(dt, int(h.rsplit("_x", 1)[1]))}\
%     endif
%   endfor
% endfor
% for h in sorted(h for h in helpers if h.startswith("float_to_f16_x")):
${f16_encoder(int(h.rsplit("_x", 1)[1]))}\
% endfor
% for n in sorted(int(h[len("unpack_nibbles"):]) for h in helpers if h.startswith("unpack_nibbles")):
#ifndef CLAYOUT_UNPACK_NIBBLES${n}
#define CLAYOUT_UNPACK_NIBBLES${n}

// The ${n} 4-bit codes held by ${n // 2} bytes, one per lane, the low nibble first.
inline uchar${n} unpack_nibbles${n}(uchar${n // 2 if n > 2 else ""} b)
{
    const uchar${n // 2 if n > 2 else ""} lo = b & (uchar)15, hi = b >> 4;
%   if n == 2:
    return (uchar2)(lo, hi);
%   else:
    return (uchar${n})(${", ".join(f"lo.s{'0123456789abcdef'[j]}, hi.s{'0123456789abcdef'[j]}" for j in range(n // 2))});
%   endif
}
#endif
% endfor
% for n in sorted(int(h[len("pack_nibbles"):]) for h in helpers if h.startswith("pack_nibbles")):
#ifndef CLAYOUT_PACK_NIBBLES${n}
#define CLAYOUT_PACK_NIBBLES${n}

// ${n} 4-bit codes (the low nibbles of c) as ${n // 2} bytes, the first in the low nibble.
inline uchar${n // 2 if n > 2 else ""} pack_nibbles${n}(uint${n} c) { return convert_uchar${n // 2 if n > 2 else ""}(c.even | c.odd << 4); }
#endif
% endfor
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
% if "e8m0" in helpers:
#ifndef CLAYOUT_E8M0
#define CLAYOUT_E8M0

// e8m0 (the OCP MX scale): 2^(c - 127), no sign, no zero; 0xff is NaN.
inline float e8m0_to_float(uint c)
{
    return c == 255u ? as_float(0x7fc00000u)
         : c == 0u ? as_float(0x00400000u)          // 2^-127, an f32 subnormal
         : as_float(c << 23);
}

// x as e8m0: the nearest power of two, a tie (1.5 * 2^k) going up; NaN,
// infinities, zeros and negatives give NaN; at most 2^-127 gives 2^-127,
// and what rounds past 2^127 gives NaN (as ml_dtypes' float8_e8m0fnu).
inline uchar float_to_e8m0(float x)
{
    const uint b = as_uint(x);
    if (!(x > 0.0f) || b >= 0x7f800000u)
        return 255;
    if (b < 0x00800000u)                           // subnormal: below 2^-126
        return b <= 0x00400000u ? 0 : 1;
    const uint c = (b >> 23) + ((b & 0x7fffffu) >= 0x400000u);
    return c > 254u ? 255 : (uchar)c;
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
