## One unrolled kernel (gpu/plan_unrolled.py): each work-item moves one
## block of elements at constant offsets from its bases. render_unrolled.py
## supplies the block's offsets, element by element or in runs.
<%namespace file="convert.cl.mako" import="*"/>\
<%namespace file="transpose.cl.mako" import="*"/>\
<%def name="decompose()">\
## The work-item's loop indices from its number, fastest loop first, and
## the block's bases: every division of the kernel is here, once a block.
${idx} rest = item;
% for var, extent in decomposition:
%   if extent is None:
const ${idx} ${var} = rest;
%   else:
const ${idx} ${var} = rest % ${lit(extent)};
rest /= ${lit(extent)};
%   endif
% endfor
% for name, expr in bases:
const ${idx} ${name} = ${expr};
% endfor
</%def>\
<%def name="element(e)">\
## One element of the block: its indices where a value or a padding test
## needs them, then read, convert, write.
{
% for name, expr in e.indices:
    const ${idx} ${name} = ${expr};
% endfor
    const ${idx} s_off = s_base + ${lit(e.src)};
    const ${idx} d_off = d_base + ${lit(e.dst)};
% if e.padding == "always":
    dst[d_off] = 0;  // padding
% elif e.padding:
    if (${e.padding}) {
        dst[d_off] = 0;  // padding
    } else {
${indent(capture(convert_one), 8)}\
    }
% else:
${indent(capture(convert_one), 4)}\
% endif
}
</%def>\
<%def name="convert_one()">\
% if bit_copy:
dst[d_off] = src[s_off];
% elif saturate_only:
dst[d_off] = convert_${dst_type}_sat(src[s_off]);
% else:
${ct} x = ${load(src_dt, "src", "s_off", 1)};
${apply_attributes(1, "d_off")}\
${store(dst_dt, "d_off", "x", 1)}\
% endif
</%def>\
<%def name="pair(p)">\
## Two 4-bit elements into one byte, the first in the low nibble.
% if bit_copy and not any(e.indices or e.padding for e in p.elements):
dst[(d_base + ${lit(p.dst)}) >> 1] = (uchar)(nibble(src, s_base + ${lit(p.elements[0].src)}) | nibble(src, s_base + ${lit(p.elements[1].src)}) << 4);
% else:
{
    uint code0 = 0, code1 = 0;  // padding stays 0
% for n, e in enumerate(p.elements):
    {
%   for name, expr in e.indices:
        const ${idx} ${name} = ${expr};
%   endfor
        const ${idx} s_off = s_base + ${lit(e.src)};
%   if "sum_beta" in args:
        const ${idx} d_off = d_base + ${lit(e.dst)};  // (the sum reads its old nibble)
%   endif
%   if e.padding == "always":
        (void)s_off;  // padding
%   elif e.padding:
        if (!(${e.padding})) {
${indent(capture(nibble_code, n), 12)}\
        }
%   else:
${indent(capture(nibble_code, n), 8)}\
%   endif
    }
% endfor
    dst[(d_base + ${lit(p.dst)}) >> 1] = (uchar)(code0 | code1 << 4);
}
% endif
</%def>\
<%def name="nibble_code(n)">\
% if bit_copy:
code${n} = nibble(src, s_off);
% else:
${ct} x = ${load(src_dt, "src", "s_off", 1)};
${apply_attributes(1, "d_off")}\
code${n} = ${to_code(dst_dt, "x")};
% endif
</%def>\
<%def name="run(r)">\
## ${len(r.src)} consecutive destination elements gathered into one vector:
## one vector load where the source's are consecutive too, else the lanes
## of whole source lines loaded first, or scalar loads (through the
## volatile view where the kernel has one).
<%
    n = len(r.src)
    ptr = "strided_src" if strided_src and not r.consecutive else "src"
    if r.consecutive:
        value = f"vload{n}(0, src + s_base + {lit(r.src[0])})"
    else:
        value = f"({src_type}{n})({', '.join(line_lane.get(o) or f'{ptr}[s_base + {lit(o)}]' for o in r.src)})"
%>\
% if r.padding:
${vector_store(dst_dt, f"({dst_type}{n})0", f"d_base + {lit(r.dst)}", n)}\
% elif bit_copy:
${vector_store(dst_dt, value, f"d_base + {lit(r.dst)}", n)}\
% elif saturate_only:
${vector_store(dst_dt, f"convert_{dst_type}{n}_sat({value})", f"d_base + {lit(r.dst)}", n)}\
% else:
{
    ${ct}${n} x = (${ct}${n})(${", ".join(capture(load, src_dt, ptr, f"s_base + {lit(o)}", 1) for o in r.src)});
${indent(capture(apply_attributes, n, None), 4)}\
${indent(capture(store, dst_dt, f"d_base + {lit(r.dst)}", "x", n), 4)}\
}
% endif
</%def>\
<%def name="tile(t)">\
## B rows of the destination's run, each B consecutive source elements at
## a constant offset, stored transposed: B columns, each B consecutive
## destination elements.
<% b = len(t.src) %>\
{
    ${dst_type}${b} ${", ".join(f"r{k}" for k in range(b))};
% for k, offset in enumerate(t.src):
    {
        const ${idx} s_off = s_base + ${lit(offset)};
%   if t.pieces[k][0][1] < b:
        // (cut short: only the kept columns, no load past the block)
        r${k} = (${dst_type}${b})(${short_row(t.pieces[k], b)});
%   else:
%     if not bit_copy and not saturate_only:
        ${ct}${b} x = ${load(src_dt, "src", "s_off", b)};
${indent(capture(apply_attributes, b, None), 8)}\
%     endif
        r${k} = ${row_value(b)};
%   endif
    }
% endfor
${indent(capture(transpose_rows, f"{dst_type}{b}", [f"d_base + {lit(o)}" for o in t.dst]), 4)}\
}
</%def>\
<%def name="short_row(pieces, b)">\
## A row's kept elements in pieces of powers of two, the rest zeros.
${", ".join([f"vload{n}(0, src + s_off + {lit(o)})" if n > 1 else f"src[s_off + {lit(o)}]" for o, n in pieces] + ["0"] * (b - sum(n for _, n in pieces)))}\
</%def>\
<%def name="block()">\
${decompose()}\
% for t in tiles:
${tile(t)}\
% endfor
% for n, offset in lines:
const ${src_type}${line_width} line${n} = vload${line_width}(0, src + s_base + ${lit(offset)});
% endfor
% for part in parts:
%   if part.kind == "run":
${run(part)}\
%   elif part.kind == "pair":
${pair(part)}\
%   else:
${element(part)}\
%   endif
% endfor
</%def>\
// clayout ${kind}: ${src_desc} -> ${dst_desc}
// Each work-item ${work}.
// Loops, outermost first: ${loops_comment}; in the block: ${block_comment}
% if cpu_only:
// A CPU kernel: ${cpu_only}, which a CPU keeps in its registers and L1 cache
// (a GPU thread would spill them to scratch memory).
% endif
#pragma OPENCL FP_CONTRACT OFF
${helper_functions()}
__kernel ${hint}void ${name}(__global const ${src_type} *restrict src,
        __global ${dst_type} *restrict dst${"".join(", " + declaration(a) for a in args.values())})
{
% if strided_src:
    // Strided loads stay scalar: PoCL's LLVM would make each run a gather
    // (vgatherqps), 1.3-1.6x slower on an AMD EPYC.
    __global const volatile ${src_type} *strided_src = src;
% endif
% if chunks > 1:
    if (get_global_id(0) >= ${lit(launch)})
        return;  // (the launch is rounded up to whole work-groups)
    for (int chunk = 0; chunk < ${chunks}; ++chunk) {
        const ${idx} item = get_global_id(0) + chunk * ${lit(launch)};
%   if launch * chunks != items:
        if (item >= ${lit(items)})
            return;
%   endif
${indent(capture(block), 8)}\
    }
% else:
    const ${idx} item = get_global_id(0);
    if (item >= ${lit(items)})
        return;
${indent(capture(block), 4)}\
% endif
}
