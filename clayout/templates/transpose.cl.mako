## A register block's parts, shared by the register transposes
## (reorder.cl.mako) and the run transposes (unrolled.cl.mako): a row
## loaded and converted, and B rows stored transposed.
<%namespace file="convert.cl.mako" import="*"/>\
<%def name="row_value(n)">\
## n source elements at s_off (a row of the register block), converted to
## the destination's storage.
% if bit_copy:
vload${n}(0, src + s_off)\
% elif saturate_only:
convert_${dst_type}${n}_sat(vload${n}(0, src + s_off))\
% else:
${to_storage(dst_dt, "x", n)}\
% endif
</%def>\
<%def name="transpose_rows(vector, offsets)">\
## The rows r0..r${block - 1} stored transposed, after log2(${block}) rounds
## that each zip rows 2i and 2i+1 into rows i and i + ${block // 2}, in units
## twice as wide as the round before: one unpack instruction per zip
## (written lane by lane, a transpose becomes many shuffles on PoCL). Row j
## then holds column bitrev(j).
<%
    size = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4, "float": 4}[dst_type]
    hexd = "0123456789abcdef"
    rows, unit, rnd = [f"r{k}" for k in range(block)], size, 0
    bits = block.bit_length() - 1
%>\
// Transposed in ${bits} rounds of zips (one unpack instruction each): row j
// of the last round holds column ${"bitrev(j)" if bits > 1 else "j"}.
% while unit < size * block:
<%
    lanes = size * block // unit
    # Units of up to 8 bytes are the lanes of a vector type; a round of
    # 16-byte units zips the rows' halves.
    view = f"{ {1: 'char', 2: 'short', 4: 'int', 8: 'long'}[unit]}{lanes}" if unit <= 8 else None
    rnd += 1
    out = [f"z{rnd}_{i}" for i in range(block)]
%>\
${vector} ${", ".join(out)};  // zipped in ${unit}-byte units
%   for i in range(block // 2):
%     if view is None and lanes == 2:
${out[i]} = (${vector})(${rows[2 * i]}.lo, ${rows[2 * i + 1]}.lo);
${out[i + block // 2]} = (${vector})(${rows[2 * i]}.hi, ${rows[2 * i + 1]}.hi);
%     elif view is None:
<%
    # Units wider than 8 bytes, more than two a row (f32 16x16: 16-byte
    # units, four a row): each unit is a swizzle of its elements.
    n = unit // size
    def part(x, j):
        return f"{x}.s{hexd[j * n:(j + 1) * n]}"
    def zipped(lanes_of):
        return f"({vector})({', '.join(f'{part(a, j)}, {part(b, j)}' for j in lanes_of)})"
    a, b = rows[2 * i], rows[2 * i + 1]
%>${out[i]} = ${zipped(range(lanes // 2))};
${out[i + block // 2]} = ${zipped(range(lanes // 2, lanes))};
%     else:
<%
    def cast(to, x):  # a reinterpretation, where the types differ
        return x if view == vector else f"as_{to}({x})"
    def zipped(lanes_of):
        return cast(vector, f"({view})({', '.join(f'a.s{hexd[j]}, b.s{hexd[j]}' for j in lanes_of)})")
%>\
{
    const ${view} a = ${cast(view, rows[2 * i])}, b = ${cast(view, rows[2 * i + 1])};
    ${out[i]} = ${zipped(range(lanes // 2))};
    ${out[i + block // 2]} = ${zipped(range(lanes // 2, lanes))};
}
%     endif
%   endfor
<% rows, unit = out, unit * 2 %>\
% endwhile
% for j, offset in enumerate(offsets):
${vector_store(dst_dt, rows[int(format(j, f"0{bits}b")[::-1], 2)], offset, block)}\
% endfor
</%def>\
