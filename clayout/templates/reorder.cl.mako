## One generated reorder or shuffle kernel. The kernel's structure lives
## here, one <%def> per part; render.py supplies the numbers and names
## (loop extents, strides, offset terms) from a KernelPlan.
<%namespace file="convert.cl.mako" import="*"/>\
<%namespace file="transpose.cl.mako" import="*"/>\
<%def name="convert(n)">\
## Read the element(s) at s_off, write them converted at d_off.
% if bit_copy and n == 1:
dst[d_off] = src[s_off];  // same type: a bit copy
% elif bit_copy:
${vector_store(dst_dt, capture(vector_load, src_dt, "src", "s_off", n), "d_off", n)}\
% elif saturate_only and n == 1:
dst[d_off] = convert_${dst_type}_sat(src[s_off]);
% elif saturate_only:
${vector_store(dst_dt, f"convert_{dst_type}{n}_sat({capture(vector_load, src_dt, 'src', 's_off', n)})", "d_off", n)}\
% else:
${ct if n == 1 else f"{ct}{n}"} x = ${load(src_dt, "src", "s_off", n)};
${apply_attributes(n, "d_off")}\
${store(dst_dt, "d_off", "x", n)}\
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
<%def name="nibble_elements()">\
## Element by element into a 4-bit destination, never storing a byte that
## holds a nibble this work-item does not own (plan_common.py, nibble_mode).
% if nibbles == "pairs":
uint low = 0;  // the run's even element, stored with the odd one
% endif
for (int k = 0; k < ${vec}; ++k) {
${indent(capture(element_offsets, True), 4)}\
% if nibbles == "passes":
    if ((d_off & 1) != parity)
        continue;  // the other pass's nibble
% endif
    uint code = 0;  // padding stays 0
% if padding:
    if (!(${padding})) {
${indent(capture(nibble_code), 8)}\
    }
% else:
${indent(capture(nibble_code), 4)}\
% endif
% if nibbles == "pairs":
    if (k & 1)
        dst[d_off >> 1] = (uchar)(low | code << 4);
    else
        low = code;
% else:
    const uint shift = parity << 2;
    dst[d_off >> 1] = (uchar)((dst[d_off >> 1] & ~(15u << shift)) | code << shift);
% endif
}
</%def>\
<%def name="nibble_code()">\
% if bit_copy:
code = nibble(src, s_off);  // same type: a bit copy
% else:
${ct} x = ${load(src_dt, "src", "s_off", 1)};
${apply_attributes(1, "d_off")}\
code = ${to_code(dst_dt, "x")};
% endif
</%def>\
<%def name="vectors()">\
## ${vec} elements contiguous on both sides, as one vector (4-bit ones:
## ${vec // 2} whole bytes, the plan's "pairs").
const int k = 0;
${element_offsets(True)}\
% if padding:
if (${padding}) {
    ${vector_store(dst_dt, f"({dst_type}{vec // 2 if vec > 2 else ''})0" if nibbles else f"({dst_type}{vec})0", "d_off", vec)}\
} else {
${indent(capture(convert, vec), 4)}\
}
% else:
${convert(vec)}\
% endif
</%def>\
<%def name="nibble_transpose()">\
## 4-bit elements in ${block} rows of ${block} nibbles, each one word along
## the source's contiguous loop (the plan proved a 4-bit side's rows start
## on a word, on a little-endian device: the element at the even offset is
## the low nibble of the lowest byte). A 4-bit source's words are loaded,
## a 4-bit destination's packed from converted vectors; after the
## transpose, a 4-bit destination's words are stored, a 4-bit source's
## unpacked, converted and stored as vectors.
<%
    word = "uint" if block == 8 else "ulong"
    suffix = "u" if block == 8 else "UL"
    packed_src, packed_dst = src_dt in ("s4", "u4", "f4_e2m1"), dst_dt in ("s4", "u4", "f4_e2m1")
%>\
${word} ${", ".join(f"r{k}" for k in range(block))};
% for k in range(block):
{
    const int k = ${k};
${indent(capture(element_offsets, False), 4)}\
%   if packed_src and padding:
    r${k} = (${padding}) ? 0 : *(__global const ${word} *)(src + (s_off >> 1));  // 0: a padding row
%   elif packed_src:
    r${k} = *(__global const ${word} *)(src + (s_off >> 1));
%   else:
    ${ct}${block} x = ${load(src_dt, "src", "s_off", block)};
${indent(capture(apply_attributes, block, None), 4)}\
    r${k} = as_${word}(pack_nibbles${block}(${capture(codes, dst_dt, "x", block)}));
%   endif
}
% endfor
## Round s swaps, in rows i and i + s (bit s of i clear), the nibbles at
## columns with bit s set in row i with those at columns s lower in row
## i + s: each round swaps one bit of the row and the column numbers.
<% s = block // 2 %>\
% while s >= 1:
<%
    mask = sum(((1 << 4 * s) - 1) << (8 * s * m) for m in range(block // (2 * s)))
    pairs = [i for i in range(block) if not i & s]
%>\
// Round ${s}: rows i and i + ${s}, ${4 * s}-bit units.
%   for i in pairs:
{
    const ${word} t = ((r${i} >> ${4 * s}) ^ r${i + s}) & 0x${f"{mask:0{block}x}"}${suffix};
    r${i} ^= t << ${4 * s};
    r${i + s} ^= t;
}
%   endfor
<% s //= 2 %>\
% endwhile
// Row j now holds column j: ${block} destination elements from d_base + j * step.
% for j in range(block):
%   if packed_dst:
*(__global ${word} *)(dst + ((${transpose_offsets[j]}) >> 1)) = r${j};
%   else:
{
%     for name, expr in store_rows[j]:
    const ${idx} ${name} = ${expr};
%     endfor
    const ${idx} d_off = ${transpose_offsets[j]};
%     if src_dt == "s4":
    ${ct}${block} x = convert_${ct}${block}(as_char${block}(unpack_nibbles${block}(as_uchar${block // 2}(r${j})) << 4) >> 4);
%     else:
    ${ct}${block} x = convert_${ct}${block}(unpack_nibbles${block}(as_uchar${block // 2}(r${j})));
%     endif
${indent(capture(apply_attributes, block, "d_off"), 4)}\
${indent(capture(store, dst_dt, "d_off", "x", block), 4)}\
}
%   endif
% endfor
</%def>\
<%def name="nibble_tile()">\
## A tile of ${vec} source rows of ${block} 4-bit elements, moved bit for
## bit: each row is one ulong${tile_lanes} of ${tile_lanes} words of 16 nibbles (the plan
## proved every row starts on a word, on a little-endian device). The rows
## come in ${tile_sets} sets of 16; the rounds of nibble_transpose() transpose
## each set as ${tile_lanes} independent 16x16 blocks, one per lane. Row j of set
## b then holds, in lane L, 16 elements of destination row 16 L + j; for
## each j, every ${tile_lanes} sets' ${tile_lanes}x${tile_lanes} matrix of words (set x lane) is
## transposed by shuffles, so that each destination row goes out as
## ${tile_sets // tile_lanes} ulong${tile_lanes}, one after another.
<% rows = [f"r{k}" for k in range(16)] %>\
// A CPU kernel: the sets below are a private array of ${vec * block // 2} bytes, which a
// CPU keeps in its L1 cache (a GPU would keep it in scratch memory).
ulong${tile_lanes} sets[16][${tile_sets}];  // [j][b]: row j of set b, after the rounds
for (int b = 0; b < ${tile_sets}; ++b) {
    ulong${tile_lanes} ${", ".join(rows)};
% for k in range(16):
    r${k} = vload${tile_lanes}(0, (__global const ulong *)(src + ((s_base + (${idx})(b * 16 + ${k}) * ${lit(row_step)}) >> 1)));
% endfor
<% s = 8 %>\
% while s >= 1:
<% mask = sum(((1 << 4 * s) - 1) << (8 * s * m) for m in range(16 // (2 * s))) %>\
    // Round ${s}: rows i and i + ${s}, ${4 * s}-bit units.
%   for i in (i for i in range(16) if not i & s):
    {
        const ulong${tile_lanes} t = ((r${i} >> ${4 * s}) ^ r${i + s}) & 0x${f"{mask:016x}"}UL;
        r${i} ^= t << ${4 * s};
        r${i + s} ^= t;
    }
%   endfor
<% s //= 2 %>\
% endwhile
% for j in range(16):
    sets[${j}][b] = r${j};
% endfor
}
for (int j = 0; j < 16; ++j) {
    for (int g = 0; g < ${tile_sets // tile_lanes}; ++g) {
        ulong${tile_lanes} ${", ".join(f"w{b} = sets[j][g * {tile_lanes} + {b}]" for b in range(tile_lanes))};
% for unit, pairs, lo, hi in swaps:
        // Words ${unit} apart: swap ${unit}-word units between w_i and w_(i + ${unit}).
%   for x, y in pairs:
        {
            const ulong${tile_lanes} t = shuffle2(w${x}, w${y}, (ulong${tile_lanes})(${lo}));
            w${y} = shuffle2(w${x}, w${y}, (ulong${tile_lanes})(${hi}));
            w${x} = t;
        }
%   endfor
% endfor
        // w_L: destination row 16 L + j, the tile's rows from the g-th ${block}.
% for lane in range(tile_lanes):
        vstore${tile_lanes}(w${lane}, g, (__global ulong *)(dst + ((d_base + (${idx})(${16 * lane} + j) * ${lit(col_step)}) >> 1)));
% endfor
    }
}
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
${transpose_rows(vector, transpose_offsets)}\
</%def>\
<%def name="item_body()">\
${decompose()}\
% if vector:
${vectors()}\
% elif tile_lanes:
${nibble_tile()}\
% elif block and nibble_words:
${nibble_transpose()}\
% elif block:
${register_transpose()}\
% elif nibbles:
${nibble_elements()}\
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
${helper_functions()}
__kernel ${hint}void ${name}(__global const ${src_type} *restrict src,
        __global ${dst_type} *restrict dst${"".join(", " + declaration(a) for a in args.values())}${", const uint parity" if nibbles == "passes" else ""})
{
% if chunks > 1:
    // The launch is rounded up to whole work-groups: a work-item past it
    // would move the next chunk's first items a second time (a sum would
    // add twice).
    if (get_global_id(0) >= ${lit(launch)})
        return;
    for (int chunk = 0; chunk < ${chunks}; ++chunk) {
        // Spaced by the whole launch, not get_global_size(): a launch split
        // in parts (past 2^32 work-items) keeps the same items; the chunks
        // divide the items, so the last one ends on the last item.
        const ${idx} item = get_global_id(0) + chunk * ${lit(launch)};
%   if launch * chunks != items:
        if (item >= ${lit(items)})
            return;
%   endif
${indent(capture(item_body), 8)}\
    }
% else:
    const ${idx} item = get_global_id(0);
    if (item >= ${lit(items)})
        return;
${indent(capture(item_body), 4)}\
% endif
}
