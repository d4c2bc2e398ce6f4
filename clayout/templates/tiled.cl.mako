## A generated reorder or shuffle kernel for GPUs: each work-group moves
## one box of elements through local memory (gpu/tile.py): it reads the box
## row by row in the source's order, waits at a barrier, and writes it row
## by row in the destination's order, converting on the way. render.py
## supplies the numbers and names from a KernelPlan.
<%namespace file="convert.cl.mako" import="*"/>\
<%def name="walk(phase)">\
## The lane's position r in the phase (its vector's first element), as loop
## indices: skip the padding lanes of a row, and positions past a loop's
## end (the last box's tail).
% if phase.split:
const uint col = r % ${phase.row_pad}u;
%   if phase.padded:
if (col >= ${phase.row_vectors}u)
    continue;  // past the row: this lane idles
%   endif
const uint row = r / ${phase.row_pad}u;
%   if phase.vec > 1:
const uint e = col * ${phase.vec}u;  // the vector's first element in its row
%   endif
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
<%def name="turns(n)">\
## The lane's first element, and the order it moves the others in.
const uint turn = r % ${n}u;
% for m in range(n):
const uint m${m} = ${"turn" if m == 0 else f"(turn + {m}u) % {n}u"};
% endfor
</%def>\
<%def name="turn_vector(x, n, left)">\
## Rotate the vector x (of n = 2 or 4) by turn: left, element m becomes x's
## (m + turn) % n; else back. (By the bits of turn: Oclgrind 21.10 miscomputes
## a chain of turn == k ? ... : ... for some work-items.)
% if n == 2:
${x} = (turn & 1u) ? ${x}.s10 : ${x};
% else:
${x} = (turn & 1u) ? ${x}.s${"1230" if left else "3012"} : ${x};
${x} = (turn & 2u) ? ${x}.s2301 : ${x};
% endif
</%def>\
<%def name="write_value(n, ptr, space, whole, places=None, back=False)">\
## n elements from ptr + t on (the tile, or a vector gathered from it), or
## the vector ``whole`` holding them, converted, to dst + d_off. Types
## decoded by helpers (f16, bf16, 8-bit floats) are gathered element by
## element from their ``places`` in the tile, when given.
% if bit_copy and n == 1:
dst[d_off] = ${ptr}[t];
% elif bit_copy:
const ${src_type}${n} v = ${whole};
${vector_store(dst_dt, "v", "d_off", n)}\
% elif saturate_only and n == 1:
dst[d_off] = convert_${dst_type}_sat(${ptr}[t]);
% elif saturate_only:
${vector_store(dst_dt, f"convert_{dst_type}{n}_sat({whole})", "d_off", n)}\
% elif n > 1 and src_dt in ("f32", "f64", "s32", "s8", "u8"):
${ct}${n} x = ${whole if src_dt in ("f32", "f64") and storage[src_dt] == ct else f"convert_{ct}{n}({whole})"};
${apply_attributes(n, "d_off")}\
${store(dst_dt, "d_off", "x", n)}\
% elif n > 1 and places is not None:
${ct}${n} x = (${ct}${n})(${", ".join(capture(load, src_dt, "tile", place, 1, "__local") for place in places)});
%   if back:
${turn_vector("x", n, False)}\
%   endif
${apply_attributes(n, "d_off")}\
${store(dst_dt, "d_off", "x", n)}\
% else:
${ct if n == 1 else f"{ct}{n}"} x = ${load(src_dt, ptr, "t", n, space)};
${apply_attributes(n, "d_off")}\
${store(dst_dt, "d_off", "x", n)}\
% endif
</%def>\
<%def name="zeros(n)">\
% if n == 1:
dst[d_off] = 0;  // padding
% else:
${vector_store(dst_dt, f"({dst_type}{n})0", "d_off", n)}\
% endif
</%def>\
// clayout ${kind}: ${src_desc} -> ${dst_desc}
// Each work-group moves a box of ${box_text} through local memory:
// it reads rows of ${read.row_len} elements contiguous in the source, ${read.vec} at a
// time, and writes rows of ${write.row_len} contiguous in the destination, ${write.vec} at a time.
// Loops, outermost first: ${loops_comment}
#pragma OPENCL FP_CONTRACT OFF
% if fp64:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
${helper_functions()}

// Where element k of the box lives in local memory: ${pad_by} spare
// element${"s" if pad_by > 1 else ""} after every ${pad_every}, so that neither phase's lanes pile onto
// one memory bank.
<% tile_index = f"{name}_tile_index" %>\
// (Named after the kernel: a program may hold several tiled kernels.)
inline uint ${tile_index}(uint k)
{
    return k + k / ${pad_every}u${f" * {pad_by}u" if pad_by > 1 else ""};
}
__kernel void ${name}(__global const ${src_type} *restrict src,
        __global ${dst_type} *restrict dst${"".join(", " + declaration(a) for a in args.values())})
{
    // The box in ${"destination" if local_order == "dst" else "source"} order (see ${tile_index}).
    __local ${src_type} tile[${local_elements}] __attribute__((aligned(16)));
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

% for stage in staged.values():
    // The box's ${stage.size} values of ${stage.array[:-4]}, staged once for the write phase.
    __local ${stage.c_type} ${stage.array}[${stage.size}];
    for (uint q = lane; q < ${stage.size}u; q += lanes) {
%   for var, expr in stage.digits:
        const uint ${var} = ${expr};
%   endfor
%   for var, expr in stage.absolute:
        const ${idx} ${var} = ${expr};
%   endfor
        const ${idx} i = ${stage.logical};
        ${stage.array}[q] = i < ${stage.extent} ? ${stage.array[:-4]}[i] : 0;  // past the end: padding
    }
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
<%
    if read.typed:  # (proven aligned: one vector load, where vloadN may split)
        loaded = f"*(__global const {src_type}{read.vec} *)(src + s_off)"
    else:
        loaded = f"vload{read.vec}(0, src + s_off)"
%>\
% if read.vec == 1:
        tile[${tile_index}(k)] = src[s_off];
% elif read.contiguous:
        *(__local ${src_type}${read.vec} *)(tile + ${tile_index}(k)) = ${loaded};
% elif read.rotate:
${indent(capture(turns, read.vec), 8)}\
        // Stored from element turn on, so that neighbouring lanes, which
        // start on other elements, spread the warp's stores over the banks.
        ${src_type}${read.vec} u = ${loaded};
${indent(capture(turn_vector, "u", read.vec, True), 8)}\
%   for n in range(read.vec):
        tile[${tile_index}(${read.places[n]})] = u.s${n};
%   endfor
% else:
        const ${src_type}${read.vec} v = ${loaded};
%   for n in range(read.vec):
        tile[${tile_index}(${read.places[n]})] = v.s${"0123456789abcdef"[n]};
%   endfor
% endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // 2. Write the box to the destination, converted.
    for (uint r = lane; r < ${write.count}u; r += lanes) {
${indent(capture(walk, write), 8)}\
        const ${idx} d_off = ${d_off};
% if write.padding:
        if (${write.padding}) {
${indent(capture(zeros, write.vec), 12)}\
            continue;
        }
% endif
% if write.contiguous or write.vec == 1:
        const uint t = ${tile_index}(${write.local});
${indent(capture(write_value, write.vec, "tile", "__local", f"*(__local {src_type}{write.vec} *)(tile + t)"), 8)}\
% else:
        // The vector's elements, gathered from local memory${", from element turn on (see the read phase)" if write.rotate else ""}.
        const uint k = ${write.local};
        const uint t = 0;
%   if write.rotate:
${indent(capture(turns, write.vec), 8)}\
%   endif
        ${src_type} g[${write.vec}];
%   for n in range(write.vec):
        g[${n}] = tile[${tile_index}(${write.places[n]})];
%   endfor
%   if write.rotate and not (bit_copy or saturate_only or src_dt in ("f32", "f64", "s32", "s8", "u8")):
${indent(capture(write_value, write.vec, "g", "__private", None, [f"{tile_index}({p})" for p in write.places], True), 8)}\
%   elif write.rotate:
        ${src_type}${write.vec} gathered = (${src_type}${write.vec})(${", ".join(f"g[{n}]" for n in range(write.vec))});
${indent(capture(turn_vector, "gathered", write.vec, False), 8)}\
${indent(capture(write_value, write.vec, "g", "__private", "gathered"), 8)}\
%   else:
${indent(capture(write_value, write.vec, "g", "__private", f"({src_type}{write.vec})({', '.join(f'g[{n}]' for n in range(write.vec))})", [f"{tile_index}({p})" for p in write.places]), 8)}\
%   endif
% endif
    }
}
