## A generated reorder or shuffle kernel for GPUs: each work-group moves
## one box of elements through local memory (gpu/tile.py): it reads the box
## row by row in the source's order, waits at a barrier, and writes it row
## by row in the destination's order, converting on the way. render.py
## supplies the numbers and names from a KernelPlan.
<%namespace file="convert.cl.mako" import="*"/>\
<%def name="walk(phase)">\
## The lane's position r in the phase, as loop indices: skip the padding
## lanes of a row, and positions past a loop's end (the last box's tail).
% if phase.padded:
const uint col = r % ${phase.row_pad}u;
if (col >= ${phase.row_len}u)
    continue;  // past the row: this lane idles
const uint row = r / ${phase.row_pad}u;
% endif
% for var, expr in phase.indices:
const uint ${var} = ${expr};
% endfor
% for var, expr in phase.absolute:
const ${idx} ${var} = ${expr};
% endfor
% if phase.tails:
if (${phase.tails})
    continue;  // past the end of a loop
% endif
% for var, expr in phase.logical:
const ${idx} ${var} = ${expr};
% endfor
</%def>\
<%def name="write_value()">\
## The tile's element t, converted, to dst[d_off].
% if bit_copy:
dst[d_off] = tile[t];
% elif saturate_only:
dst[d_off] = convert_${dst_type}_sat(tile[t]);
% else:
${ct} x = ${load(src_dt, "tile", "t", 1, "__local")};
${apply_attributes(1, "d_off")}\
${store(dst_dt, "d_off", "x", 1)}\
% endif
</%def>\
// clayout ${kind}: ${src_desc} -> ${dst_desc}
// Each work-group moves a box of ${box_text} through local memory:
// it reads rows of ${read.row_len} elements contiguous in the source, and
// writes rows of ${write.row_len} contiguous in the destination.
// Loops, outermost first: ${loops_comment}
#pragma OPENCL FP_CONTRACT OFF
% if fp64:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
${helper_functions()}
__kernel void ${name}(__global const ${src_type} *restrict src,
        __global ${dst_type} *restrict dst${"".join(", " + declaration(a) for a in args.values())})
{
    // The box in destination order, one spare element after every ${banks}
    // (the read phase then strides across the memory banks).
    __local ${src_type} tile[${local_elements}];
    const uint lane = get_local_id(0);
    const uint lanes = get_local_size(0);

    // This work-group's box: where it starts along each loop.
% if layers > 1:
    // The boxes lie in rows over NDRange dimensions 1 and 2 (each holds at
    // most 65,535 work-groups on some devices); a spare work-group returns.
    ${idx} box = (${idx})(get_global_id(2) * get_global_size(1) + get_global_id(1));
    if (box >= ${boxes})
        return;
% else:
    ${idx} box = get_global_id(1);
% endif
% for start, count, value in starts:
    const ${idx} ${start} = ${value};
%   if count is not None:
    box /= ${lit(count)};
%   endif
% endfor

    // 1. Read the box from the source into local memory.
    for (uint r = lane; r < ${read.count}u; r += lanes) {
${indent(capture(walk, read), 8)}\
% if read.padding:
        if (${read.padding})
            continue;  // destination padding: no source element
% endif
        const ${idx} s_off = ${s_off};
        const uint k = ${read.local};
        tile[k + k / ${banks}u] = src[s_off];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < ${write.count}u; r += lanes) {
${indent(capture(walk, write), 8)}\
        const ${idx} d_off = ${d_off};
% if write.padding:
        if (${write.padding}) {
            dst[d_off] = 0;  // padding
            continue;
        }
% endif
        const uint k = ${write.local};
        const uint t = k + k / ${banks}u;
${indent(capture(write_value), 8)}\
    }
}
