## One runtime-dims reorder or shuffle kernel: the layout is baked in, the
## runtime dims and strides are arguments (gpu/runtime_plan.py). render_runtime.py
## supplies the names and expressions; the conversion is reorder.cl.mako's.
<%namespace file="convert.cl.mako" import="*"/>\
<%namespace file="reorder.cl.mako" import="convert, register_transpose"/>\
<%def name="decompose()">\
## The work-item's loop indices from its number, fastest loop first.
${idx} rest = item, quotient;
% for var, extent, magic in decomposition:
%   if extent is None:
const ${idx} ${var} = rest;
%   elif extent == "0":
const ${idx} ${var} = 0;
%   elif magic:
quotient = (mul_hi(rest, ${extent}_m) + rest) >> ${extent}_s;  // rest / ${extent}
const ${idx} ${var} = rest - quotient * ${extent};
rest = quotient;
%   else:
const ${idx} ${var} = rest % ${extent};
rest /= ${extent};
%   endif
% endfor
% for name, expr in bases:
const ${idx} ${name} = ${expr};
% endfor
</%def>\
<%def name="one_element(skip, s_off, d_off)">\
## One element of the run: its indices, offsets, padding, conversion.
% if tail:
if (${tail})
    break;  // the run ends with the runtime extent
% endif
% for name, expr in element:
const ${idx} ${name} = ${expr};
% endfor
const ${idx} s_off = ${s_off};
const ${idx} d_off = ${d_off};
% if padding:
if (${padding}) {
    dst[d_off] = 0;  // padding
    ${skip};
}
% endif
${convert(1)}\
</%def>\
// clayout ${kind} with runtime dims: ${src_desc} -> ${dst_desc}
// Dims and strides shown as * are arguments. Each work-item ${work}.
// Loops, outermost first: ${loops_comment}
#pragma OPENCL FP_CONTRACT OFF
% if fp64:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
${helper_functions()}
__kernel void ${name}(__global const ${src_type} *restrict src,
        __global ${dst_type} *restrict dst${"".join(", " + declaration(a) for a in args.values())},
        ${", ".join(f"const {idx} {n}" for n in runtime_args)})
{
    // A launch past the work-item limit goes in parts, each with its global offset.
    const ${idx} item = get_global_id(0);
    if (item >= items)
        return;
${indent(capture(decompose), 4)}\
% if block and full:
    if (${full}) {
${indent(capture(register_transpose), 8)}\
        return;
    }
    for (int b = 0; b < ${block}; ++b) {  // a tile cut short: element by element
        if (i${tiled_dim} + b >= ${tiled_n})
            break;
        for (int k = 0; k < ${vec}; ++k) {
${indent(capture(one_element, "continue", tail_s_off, tail_d_off), 12)}\
        }
    }
% elif block:
${indent(capture(register_transpose), 4)}\
% elif vec == 1:
    const int k = 0;
${indent(capture(one_element, "return", s_off, d_off), 4)}\
% else:
    for (int k = 0; k < ${vec}; ++k) {
${indent(capture(one_element, "continue", s_off, d_off), 8)}\
    }
% endif
}
