// clayout ${kind}: ${src_desc} -> ${dst_desc}
// Each work-item writes ${vec} consecutive destination elements of the
// innermost loop${" (times %d rows)" % vec if block and not vector else ""}; loops, outermost first: ${loops_comment}
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
        __global ${dst_type} *restrict dst${"".join(", " + p for p in params)})
{
    const ${idx} item = get_global_id(0);
    if (item >= ${items})
        return;
% for line in setup:
    ${line}
% endfor

% if block:
    // ${"%d elements as vectors." % vec if vector else "A %dx%d block, transposed in registers." % (vec, vec)}
% for line in block:
    ${line}
% endfor
% else:
    for (int k = 0; k < ${vec}; ++k) {
% for line in per_element:
        ${line}
% endfor
% if padding:
        if (${padding}) {
            dst[d_off] = 0;
            continue;
        }
% endif
% for line in convert:
        ${line}
% endfor
    }
% endif
}
