"""Render a KernelPlan into OpenCL C with the Mako templates (no device needed)."""
from __future__ import annotations

import functools
import pathlib

from mako.exceptions import text_error_template
from mako.template import Template

from ..errors import UnimplementedError
from ..tags import LETTERS
from .plan import KernelPlan, describe, dim_offset_expr, scale_index_expr

TEMPLATES = pathlib.Path(__file__).resolve().parents[1] / "templates"

# OpenCL storage type of each data type the kernels serve.
STORAGE = {"f32": "float", "f64": "double", "f16": "ushort", "bf16": "ushort",
           "s32": "int", "s8": "char", "u8": "uchar"}
INT_CL = {"s32": "int", "s8": "char", "u8": "uchar"}


@functools.lru_cache(maxsize=None)
def _template(name: str) -> Template:
    return Template(filename=str(TEMPLATES / name), strict_undefined=True)


def render_template(template: str, **values) -> str:
    """Render a template; an error names the template and shows the values it got."""
    try:
        return _template(template).render(**values)
    except Exception as exc:
        shown = "\n".join(f"  {k} = {v!r}" for k, v in sorted(values.items()))
        raise RuntimeError(f"rendering {template} failed: {exc}\nwith values:\n{shown}\n"
                           f"{text_error_template().render()}") from exc


def _load(dt: str, ptr: str, off: str, ct: str, n: int = 1) -> str:
    """C expression: element ``off`` of ``ptr`` (type dt) as compute type ``ct``,
    or the ``n`` elements from there as a ct vector."""
    if n == 1:
        if dt in INT_CL:
            return f"convert_{ct}({ptr}[{off}])"
        value = {"f32": f"{ptr}[{off}]", "f64": f"{ptr}[{off}]",
                 "f16": f"vload_half({off}, (__global const half *){ptr})",
                 "bf16": f"bf16_to_float({ptr}[{off}])"}[dt]
        return value if ct == "float" or dt == "f64" else f"(double){value}"
    raw = f"vload{n}(0, {ptr} + {off})"
    if dt in INT_CL:
        return f"convert_{ct}{n}({raw})"
    value = {"f32": raw, "f64": raw,
             "f16": f"vload_half{n}(0, (__global const half *)({ptr} + {off}))",
             "bf16": f"as_float{n}(convert_uint{n}({raw}) << 16)"}[dt]
    return value if ct == "float" or dt == "f64" else f"convert_double{n}({value})"


def _store(dt: str, off: str, x: str, ct: str, n: int = 1) -> str:
    """C statement: store compute-type value ``x`` (a vector of ``n`` when n > 1)
    as dt at dst[off]."""
    if dt == "f16":
        if n > 1:
            return f"vstore_half{n}_rte({x}, 0, (__global half *)(dst + {off}));"
        return f"vstore_half_rte({x}, {off}, (__global half *)dst);"
    if dt == "bf16" and n > 1:  # float_to_bf16, lane by lane
        u = f"as_uint{n}({x})"
        return (f"vstore{n}(convert_ushort{n}(select(({u} + 0x7fffu + (({u} >> 16) & 1u)) >> 16, "
                f"({u} >> 16) | 0x40u, as_uint{n}(isnan({x})))), 0, dst + {off});")
    if dt == "bf16":
        return f"dst[{off}] = {'float_to_bf16' if ct == 'float' else 'double_to_bf16'}({x});"
    vec = "" if n == 1 else str(n)
    if dt in ("f32", "f64"):
        value = x if STORAGE[dt] == ct else f"convert_float{vec}({x})"
    else:
        # Saturate, round to nearest even, NaN -> 0; spelled out (not
        # convert_*_sat_rte) because the built-ins vectorise poorly on PoCL.
        low, high = {"s32": (-2147483648, 2147483520 if ct == "float" else 2147483647),
                     "s8": (-128, 127), "u8": (0, 255)}[dt]
        f = "f" if ct == "float" else ""
        t = INT_CL[dt]
        if n == 1:
            clamped = f"clamp(isnan({x}) ? 0.0{f} : {x}, {low}.0{f}, {high}.0{f})"
        else:
            clamped = f"clamp(select({x}, ({ct}{n})0, isnan({x})), {low}.0{f}, {high}.0{f})"
        if dt != "s32" and ct == "float":
            # Adding 1.5 * 2^23 rounds a small float to nearest even and leaves
            # the integer in the low mantissa bits (2x faster than rint on PoCL).
            value = (f"({t})(as_int({clamped} + 12582912.0f) - 0x4b400000)" if n == 1 else
                     f"convert_{t}{n}(as_int{n}({clamped} + 12582912.0f) - 0x4b400000)")
        else:
            value = f"({t})rint({clamped})" if n == 1 else f"convert_{t}{n}(rint({clamped}))"
    return f"dst[{off}] = {value};" if n == 1 else f"vstore{n}({value}, 0, dst + {off});"


def _times(name: str, factor: int, u: str) -> str | None:
    """``name * factor`` as C, without the noise: None for 0, ``name`` for 1."""
    if factor == 0:
        return None
    return name if factor == 1 else f"{name} * {factor}{u}"


def _sum(terms, u: str) -> str:
    """The terms joined with +, dropping absent ones and zero constants."""
    kept = [t for t in terms if t is not None and t != f"0{u}"]
    return " + ".join(kept) if kept else f"0{u}"


def render_kernel(plan: KernelPlan, kernel_name: str | None = None) -> tuple[str, str, list[str]]:
    """OpenCL C source, kernel name (``plan.name`` unless ``kernel_name`` is given),
    and the names of the arguments after src and dst.

    An argument named ``src_scale`` (a number) or ``src_scales`` (a buffer of
    per-slice values), likewise ``dst_scale(s)``, ``src_zp(s)``, ``dst_zp(s)``
    and ``beta``.
    """
    src, dst = plan.src_md, plan.dst_md
    for md in (src, dst):
        if md.data_type not in STORAGE:
            raise UnimplementedError(f"{md!r}: OpenCL kernels for {md.data_type} are not generated yet")
    idx = "ulong" if plan.wide_index else "uint"
    u = "UL" if plan.wide_index else "u"
    ct = plan.compute
    levels = plan.levels
    last = len(levels) - 1
    inner = levels[last]
    chunks = inner.extent // plan.vec

    def name(j):
        return f"l{j}" if j != last else f"l{j}c"

    # Split the work-item number into one index per loop, fastest first.
    setup = [f"{idx} rest = item;"]
    in_item = set(plan.fastest)  # a block's source steps are not in the item number
    for n, j in enumerate(plan.fastest):
        extent = chunks if j == last else levels[j].extent
        if n == len(plan.fastest) - 1:
            setup.append(f"const {idx} {name(j)} = rest;")
        elif extent == 1:
            setup.append(f"const {idx} {name(j)} = 0;")
        else:
            setup += [f"const {idx} {name(j)} = rest % {extent}{u};", f"rest /= {extent}{u};"]
    # Logical indices of the dims the kernel needs (the others ride on the loops).
    needed = [d for d in range(dst.ndims) if d not in plan.linear]
    index = {}
    for d in needed:
        parts = [_times(name(j), lv.mult, u) for j, lv in enumerate(levels[:last])
                 if lv.dims == (d,) and j in in_item]
        if inner.dims == (d,) and not inner.merged:
            parts.append(_times(name(last), inner.mult * plan.vec, u))
        setup.append(f"const {idx} i{d}_base = {_sum(parts, u)};")
        index[d] = f"i{d}"

    def src_index(d):
        if plan.shuffle and plan.shuffle[0] == d:
            rows = src.dims[d] // plan.shuffle[1]
            return f"((i{d} % {rows}{u}) * {plan.shuffle[1]}{u} + i{d} / {rows}{u})"
        return f"i{d}"

    dst_const = dst.offset0 + sum((po // b) * s for po, b, s in
                                  zip(dst.padded_offsets, dst.blocks, dst.strides))
    src_const = src.offset0 + sum(src.padded_offsets[d] * src.strides[d] for d in plan.linear)
    d_terms = [f"{dst_const}{u}"] + [_times(name(j), lv.dst_stride, u)
                                     for j, lv in enumerate(levels[:last]) if j in in_item]
    d_terms.append(_times(name(last), plan.vec * inner.dst_stride, u))
    s_terms = [f"{src_const}{u}"] + [_times(name(j), lv.src_stride, u)
                                     for j, lv in enumerate(levels[:last])
                                     if lv.merged and j in in_item]
    if inner.merged:
        s_terms.append(_times(name(last), plan.vec * inner.src_stride, u))
    setup.append(f"const {idx} d_base = {_sum(d_terms, u)};")
    setup.append(f"const {idx} s_base = {_sum(s_terms, u)};")

    per_element = [f"const {idx} i{d} = "
                   + _sum([f"i{d}_base", _times("k", inner.mult, u)
                           if inner.dims == (d,) and not inner.merged else None], u) + ";"
                   for d in needed]
    s_dims = [f"({dim_offset_expr(src, d, src_index(d))})" for d in needed]
    s_step = [_times("k", inner.src_stride, u)] if inner.merged else []
    per_element.append(f"const {idx} s_off = {_sum(['s_base'] + s_step + s_dims, u)};")
    per_element.append(f"const {idx} d_off = {_sum(['d_base', _times('k', inner.dst_stride, u)], u)};")
    padding = " || ".join(f"i{d} >= {dst.dims[d]}{u}" for d in needed
                          if dst.own_padded_dims[d] != dst.dims[d])

    # The conversion, in the order of DESIGN.md's formula.
    src_scale, dst_scale, src_zp, dst_zp, has_sum = plan.attr_kinds
    params, convert = [], []
    sdt, ddt = src.data_type, dst.data_type
    helpers = set()  # the inline functions the conversion below calls
    no_attr = plan.attr_kinds == (None, None, None, None, False)
    names = [index.get(d, "0") for d in range(dst.ndims)]

    def value(kind, pname, ctype):
        if kind == 0:
            params.append(f"const {ctype} {pname}")
            return f"({ct}){pname}"
        params.append(f"__global const {ctype} *restrict {pname}s")
        return f"({ct}){pname}s[{scale_index_expr(kind, dst.dims, names)}]"

    n = plan.vec if plan.vector else 1
    cv = ct if n == 1 else f"{ct}{n}"
    if no_attr and sdt == ddt:
        convert.append("dst[d_off] = src[s_off];  // same type: a bit copy" if n == 1 else
                       f"vstore{n}(vload{n}(0, src + s_off), 0, dst + d_off);  // a bit copy")
    elif no_attr and sdt in INT_CL and ddt in INT_CL:
        convert.append(f"dst[d_off] = convert_{INT_CL[ddt]}_sat(src[s_off]);" if n == 1 else
                       f"vstore{n}(convert_{INT_CL[ddt]}{n}_sat(vload{n}(0, src + s_off)), "
                       f"0, dst + d_off);")
    else:
        if "bf16" in (sdt, ddt) and n == 1:
            helpers.add("bf16")
        if ddt == "bf16" and ct == "double":
            helpers.add("bf16_from_double")
        convert.append(f"{cv} x = {_load(sdt, 'src', 's_off', ct, n)};")
        if src_zp is not None:
            convert.append(f"x = x - {value(src_zp, 'src_zp', 'int')};")
        if src_scale is not None:
            convert.append(f"x = {value(src_scale, 'src_scale', 'float')} * x;")
        zp = value(dst_zp, "dst_zp", "int") if dst_zp is not None else None
        if has_sum:
            params.append("const float beta")
            convert.append(f"{cv} old = {_load(ddt, 'dst', 'd_off', ct, n)};")
            if zp is not None:
                convert.append(f"old = old - {zp};")
            convert.append(f"x = x + ({ct})beta * old;")
        if dst_scale is not None:
            convert.append(f"x = x / {value(dst_scale, 'dst_scale', 'float')};")
        if zp is not None:
            convert.append(f"x = x + {zp};")
        convert.append(_store(ddt, "d_off", "x", ct, n))

    block = []  # lines that replace the per-element loop
    if plan.vector:
        block = ["const int k = 0;"] + per_element
        if padding:
            zero = f"({STORAGE[ddt]}{n})0"
            block += [f"if ({padding}) {{", f"    vstore{n}({zero}, 0, dst + d_off);",
                      "    return;", "}"]
        block += convert
    elif plan.block:
        # Load B vectors along the source's contiguous loop (one per step k of
        # the destination's innermost loop), store their transpose.
        b, vector = plan.block, f"{STORAGE[sdt]}{plan.block}"
        lanes = "0123456789abcdef"
        block.append(f"{vector} " + ", ".join(f"r{k}" for k in range(b)) + ";")
        for k in range(b):
            block.append("{")
            block.append(f"    const int k = {k};")
            block += ["    " + line for line in per_element if " d_off = " not in line]
            block.append(f"    r{k} = vload{b}(0, src + s_off);")
            block.append("}")
        step = levels[last - 1].dst_stride
        for j in range(b):
            lanes_j = ", ".join(f"r{k}.s{lanes[j]}" for k in range(b))
            block.append(f"vstore{b}(({vector})({lanes_j}), 0, dst + "
                         f"{_sum(['d_base', f'{j * step}{u}'], u)});")

    def level_comment(lv):
        letters = "".join(LETTERS[d] for d in lv.dims)
        return f"{letters}:{lv.extent}"

    kernel_name = kernel_name or plan.name
    source = render_template(
        "reorder.cl.mako",
        kind="shuffle" if plan.shuffle else "reorder",
        src_desc=describe(src), dst_desc=describe(dst),
        loops_comment=" ".join(level_comment(lv) for lv in levels),
        fp64=ct == "double", helpers=helpers, name=kernel_name,
        src_type=STORAGE[sdt], dst_type=STORAGE[ddt], params=params, idx=idx,
        items=f"{plan.items}{u}", setup=setup, vec=plan.vec,
        per_element=per_element, padding=padding, convert=convert, block=block,
        vector=plan.vector)
    return source, kernel_name, [p.split()[-1].lstrip("*") for p in params]
