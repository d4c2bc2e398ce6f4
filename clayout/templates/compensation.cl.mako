## The compensation kernel of a reorder into s8 weights with extra (see
## clayout/compensation.py for the formula). One work-item per compensation
## value: it finds its slice's indices over the masked dims (padded sizes),
## loops over the other dims' logical indices reading the s8 weights the
## reorder has just written, and stores -128 * sum (s8s8) or -sum (zp) as an
## s32 after the data. gpu/compensation.py supplies the numbers and the
## offset expressions (from the layout's per-dim offset terms).
<%def name="loops(block, depth, offset)">\
## The nested loops over the unmasked dims, outermost in memory first; the
## innermost adds one weight to the sum.
<% pad = "    " * (depth + 1) %>\
% if depth == len(block.loops):
${pad}sum += w[${offset}];
% else:
<% var, extent, term = block.loops[depth] %>\
${pad}for (${idx} ${var} = 0; ${var} < ${lit(extent)}; ++${var}) {
${pad}    const ${idx} o${depth} = ${offset} + ${term};
${loops(block, depth + 1, f"o{depth}")}\
${pad}}
% endif
</%def>\
<%def name="sum_function(block)">\
/* (named after the kernel: a batch's program holds several)
 * ${block.kind}: mask ${block.mask_text}, one value per slice of ${block.masked_text};
 * sums the ${block.summed} weights of ${block.loops_text} */
static int ${name}_${block.kind}(__global const char *restrict w, ${idx} slice)
{
% for var, extent in block.decomposition:
%   if extent is None:
    const ${idx} ${var} = slice;
%   else:
    const ${idx} ${var} = slice % ${lit(extent)};
    slice /= ${lit(extent)};
%   endif
% endfor
% if block.padding:
    if (${block.padding})
        return 0;  /* a slice of the masked dims' padding holds no weight */
% endif
    const ${idx} base = ${block.base};
    int sum = 0;
${loops(block, 0, "base")}\
    return sum;
}
</%def>\
<%def name="store_value()">\
## The s32 value at byte ${first} + 4 * item of the buffer.
% if aligned:
    ((__global int *)(dst + ${lit(first)}))[item] = value;
% else:
    /* the data's size is not a multiple of 4: store the bytes, little-endian */
    __global uchar *out = (__global uchar *)dst + ${lit(first)} + 4 * item;
    out[0] = (uchar)value;
    out[1] = (uchar)(value >> 8);
    out[2] = (uchar)(value >> 16);
    out[3] = (uchar)(value >> 24);
% endif
</%def>\
// clayout compensation for ${desc}
// ${count} s32 values from byte ${first}: ${", then ".join(f"{b.count} {b.kind}" for b in blocks)}

% for block in blocks:
${sum_function(block)}
% endfor
__kernel void ${name}(__global char *restrict dst)
{
    const ${idx} item = get_global_id(0);
    if (item >= ${lit(count)})
        return;
    int value;
% for n, block in enumerate(blocks):
<% cond = f"item < {lit(block.start + block.count)}" %>\
%   if len(blocks) == 1:
    value = ${block.scale}${name}_${block.kind}(dst, item);
%   elif n == 0:
    if (${cond})
        value = ${block.scale}${name}_${block.kind}(dst, item);
%   else:
    else
        value = ${block.scale}${name}_${block.kind}(dst, item - ${lit(block.start)});
%   endif
% endfor
${store_value()}\
}
