"""Render a KernelPlan into OpenCL C with the Mako templates (no device needed).

The template (templates/reorder.cl.mako) holds the kernel's structure: index
decomposition, offsets, load, convert, store, register transpose. This module
only turns the plan's numbers into the names and expressions it fills in.
"""
from __future__ import annotations

from types import SimpleNamespace

from ..errors import UnimplementedError
from ..tags import LETTERS
from .plan_types import (KernelArg, KernelPlan, constant_offsets, conversion, describe,
                         indexed_dims, item_loops, offset_terms, padded_dims, slice_strides,
                         striped_vector_values, tile_values)
from .render_unrolled import unrolled_values
from .templates import LOOKUP
from .tile import crosses

#: OpenCL storage type of each data type the kernels serve.
STORAGE = {"f32": "float", "f64": "double", "f16": "ushort", "bf16": "ushort",
           "s32": "int", "s8": "char", "u8": "uchar", "f8_e5m2": "uchar", "f8_e4m3": "uchar",
           "s4": "uchar", "u4": "uchar", "f4_e2m1": "uchar",
           "e8m0": "uchar"}


def _template(name: str):
    return LOOKUP.get_template(name)


def render_template(template: str, **values) -> str:
    """Render a template; an error names the template and shows the values it got."""
    try:
        return _template(template).render(**values)
    except Exception as exc:
        from mako.exceptions import text_error_template  # pygments: only when needed

        shown = "\n".join(f"  {k} = {v!r}" for k, v in sorted(values.items()))
        raise RuntimeError(f"rendering {template} failed: {exc}\nwith values:\n{shown}\n"
                           f"{text_error_template().render()}") from exc


def indent(text: str, spaces: int) -> str:
    """Every non-empty line of ``text`` indented by ``spaces``."""
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(True))


def declaration(arg: KernelArg) -> str:
    """The C parameter of a kernel argument."""
    if arg.per_slice:
        return f"__global const {arg.c_type} *restrict {arg.name}"
    return f"const {arg.c_type} {arg.name}"


class _Expressions:
    """C expressions over unsigned indices of one width: literals suffixed
    alike, zero terms dropped, factors of one left out."""

    def __init__(self, wide: bool):
        self.suffix = "UL" if wide else "u"

    def lit(self, n: int) -> str:
        return f"{n}{self.suffix}"

    def times(self, name: str, factor: int) -> str | None:
        if factor == 0:
            return None
        return name if factor == 1 else f"{name} * {self.lit(factor)}"

    def sum(self, terms, const: int = 0) -> str:
        kept = [t for t in terms if t]
        if const:
            kept.insert(0, self.lit(const))
        return " + ".join(kept) if kept else self.lit(0)

    def term(self, p: str, term) -> str:
        """One offset term of the padded index named ``p``."""
        q = p if term.divisor == 1 else f"{p} / {self.lit(term.divisor)}"
        if term.modulus is not None:
            q = f"({q}) % {self.lit(term.modulus)}" if term.divisor != 1 else \
                f"{p} % {self.lit(term.modulus)}"
        if term.stride == 1:
            return q
        return f"({q}) * {self.lit(term.stride)}" if q != p else f"{p} * {self.lit(term.stride)}"


def _work(plan: KernelPlan) -> str:
    if plan.shape == "nibble_tile":
        text = (f"transposes a tile of {plan.vec} rows of {plan.block} nibbles, "
                f"{plan.block // 16} words of 16 a row")
    elif plan.block:
        text = f"transposes a {plan.block}x{plan.block} block in registers"
    elif plan.vector:
        text = f"moves {plan.vec} consecutive elements as one vector"
    else:
        text = f"writes {plan.vec} consecutive elements one by one"
    if plan.chunks > 1:
        text += f", for each of {plan.chunks} items spaced by the global size"
    return text


def render_kernel(plan: KernelPlan, kernel_name: str | None = None) -> str:
    """The OpenCL C source of ``plan``'s kernel, named ``kernel_name`` (else ``plan.name``).

    Its arguments are src, dst, then ``plan.args`` in order. Raises
    UnimplementedError for a data type the kernels do not serve.
    """
    src, dst = plan.src_md, plan.dst_md
    for md in (src, dst):
        if md.data_type not in STORAGE:
            raise UnimplementedError(
                f"{md!r}: OpenCL kernels for {md.data_type} are not generated yet")
    c = _Expressions(plan.wide_index)
    if plan.tile is not None:
        return _render_tiled(plan, kernel_name, c)
    if plan.unrolled:
        values = _values(plan, kernel_name, c)
        return render_template(
            "unrolled.cl.mako", **{**values, **unrolled_values(plan, c, values["dst_type"])},
            block_comment=" ".join(_level_text(plan.levels[j]) for j in plan.unrolled),
            slice_index={arg.name: _slice_index(c, arg, dst.dims) for arg in plan.args
                         if arg.per_slice}, lane_args={})
    levels, vec = plan.levels, plan.vec
    last = len(levels) - 1
    inner = levels[last]

    def var(j):
        return f"l{j}c" if j == last else f"l{j}"

    # The item number, split into one index per loop, fastest first; a loop
    # of one step gets no index.
    loops = item_loops(plan)
    decomposition = [(var(j), steps) for j, steps in loops]
    indexed = [j for j, _ in loops]
    outer = [j for j in indexed if j != last]
    vec_index = var(last) if last in indexed else None

    needed = indexed_dims(plan)
    bases = []
    for d in needed:
        parts = [c.times(var(j), levels[j].mult) for j in outer if levels[j].dims == (d,)]
        if inner.dims == (d,) and not inner.merged and vec_index:
            parts.append(c.times(vec_index, inner.mult * vec))
        bases.append((f"i{d}_base", c.sum(parts)))
    src_const, dst_const = constant_offsets(src, dst, plan.linear)
    d_parts = [c.times(var(j), levels[j].dst_stride) for j in outer]
    if vec_index:
        d_parts.append(c.times(vec_index, vec * inner.dst_stride))
    s_parts = [c.times(var(j), levels[j].src_stride) for j in outer if levels[j].merged]
    if inner.merged and vec_index:
        s_parts.append(c.times(vec_index, vec * inner.src_stride))
    bases += [("d_base", c.sum(d_parts, dst_const)), ("s_base", c.sum(s_parts, src_const))]

    # Per element: logical indices, source indices named once, the offsets.
    element = []
    for d in needed:
        steps = [f"i{d}_base"]
        if inner.dims == (d,) and not inner.merged:
            steps.append(c.times("k", inner.mult))
        element.append((f"i{d}", c.sum(steps)))
    names, s_terms = _source_offset(plan, c, needed, shuffled=True)
    element += names
    s_terms.insert(0, c.times("k", inner.src_stride) if inner.merged else None)
    d_terms = [c.times("k", inner.dst_stride)]
    padding = " || ".join(f"i{d} >= {c.lit(dst.dims[d])}" for d in padded_dims(plan))

    # Per-slice values that vary along the loaded vectors, one per lane:
    # loaded as vectors too (name -> lanes). The plan made sure they are
    # consecutive in their arrays; values of a group holding the whole run
    # are one scalar load.
    slice_index = {arg.name: _slice_index(c, arg, dst.dims) for arg in plan.args
                   if arg.per_slice}
    vectors, lanes = striped_vector_values(plan)
    lane_args = {arg.name: lanes for arg in vectors}

    values = _values(plan, kernel_name, c)
    values["typed_store"] = plan.typed_store
    if plan.vector:
        values["helpers"] = _vector_helpers(plan, values["helpers"],
                                            typed=plan.aligned or plan.typed_store)
    nibble_words = plan.nibble_words
    if nibble_words:
        lane_args = {}  # one value per converted row (plan_nibble_transpose)
    store_rows = []
    if nibble_words and not dst.dtype.packed:
        # A 4-bit source's transposed row j: the destination's elements
        # from the block's first along its innermost loop, at step j of
        # the source's contiguous loop (their indices, for per-slice values).
        part = levels[last - 1]
        values["helpers"] = values["helpers"] | {f"unpack_nibbles{plan.block}"}
        store_rows = [[(f"i{d}", c.sum([f"i{d}_base"] + (
            [c.lit(j * part.mult)] if part.dims == (d,) and not part.merged else [])))
            for d in needed] for j in range(plan.block)]
    elif nibble_words and not src.dtype.packed:
        values["helpers"] = values["helpers"] | {f"pack_nibbles{plan.block}"}
    step = levels[last - 1].dst_stride if plan.block else 0
    tile = _nibble_tile_values(plan)
    return render_template(
        "reorder.cl.mako", **values, **tile,
        work=_work(plan), slice_index=slice_index, lane_args=lane_args, items=plan.items,
        chunks=plan.chunks, launch=plan.launch_items, vec=vec, block=plan.block,
        vector=plan.vector, nibble_words=nibble_words, store_rows=store_rows,
        decomposition=decomposition, bases=bases, element=element,
        s_off=c.sum(["s_base"] + s_terms), d_off=c.sum(["d_base"] + d_terms), padding=padding,
        transpose_offsets=[c.sum(["d_base", c.lit(j * step) if j else None])
                           for j in range(plan.block)])


def _nibble_tile_values(plan: KernelPlan) -> dict:
    """A nibble tile's numbers (gpu/plan_nibble_tile.py): its words a row
    (``tile_lanes``, 0 for every other plan), the source's step between its
    rows and the destination's, the shuffles of the words' transpose, and
    the vector type hint that keeps Intel's CPU compiler from re-packing the
    ulongN code across work-items."""
    if plan.shape != "nibble_tile":
        return dict(tile_lanes=0, tile_sets=0, hint="")
    lanes, swaps, unit = plan.block // 16, [], 1
    while unit < lanes:
        # Each 2-unit run of the result: a unit of x, then the matching
        # unit of y (shuffle2's second vector counts from ``lanes``).
        lo = [k + (lanes - unit if k % (2 * unit) >= unit else 0) for k in range(lanes)]
        pairs = [(x, x + unit) for x in range(lanes) if not x // unit % 2]
        swaps.append((unit, pairs, ", ".join(map(str, lo)),
                      ", ".join(str(k + unit) for k in lo)))
        unit *= 2
    return dict(tile_lanes=lanes, tile_sets=plan.vec // 16,
                hint=f"__attribute__((vec_type_hint(ulong{lanes}))) ",
                swaps=swaps, row_step=plan.levels[-1].src_stride,
                col_step=plan.levels[-2].dst_stride)


def _vector_helpers(plan: KernelPlan, helpers: set, n: int | None = None,
                    gathered: bool = False, typed: bool = False) -> set:
    """The helper functions of a vector plan: the narrow types' ones at its
    width (8-bit float decoders and encoders, nibble unpacking for a 4-bit
    source or a 4-bit destination read for a sum, packing) instead of the
    one-value ones, which it never calls. ``gathered``: the source's
    elements are decoded one by one (a tiled write that gathers its vector
    from local memory), so the source keeps its one-value decoder. ``typed``:
    the kernel stores its vectors by typed stores (aligned)."""
    f8 = ("f8_e5m2", "f8_e4m3")
    sdt, ddt, n = plan.src_md.data_type, plan.dst_md.data_type, n or plan.vec
    out = {h for h in helpers if h not in f8 + ("nibble",)}
    if conversion(plan)[0]:
        return out  # a bit copy converts nothing
    if ddt == "f16" and typed and plan.strategy == "gpu" and plan.compute == "float":
        # NVIDIA's OpenCL stores vstore_half's vectors element by element:
        # encoded in integer operations, they are stored as typed vectors.
        out.add(f"float_to_f16_x{n}")
    if gathered and sdt in f8:
        out.add(sdt)
    reads = ([] if gathered else [sdt]) + ([ddt] if plan.attr_kinds[4] else [])  # a sum reads dst
    out |= {f"{dt}_to_float_x{n}" for dt in reads if dt in f8}
    if ddt in f8:
        out.add(f"float_to_{ddt}_x{n}")
    if any(dt in ("s4", "u4") for dt in reads):
        out.add(f"unpack_nibbles{n}")
    if ddt in ("s4", "u4"):
        out.add(f"pack_nibbles{n}")
    return out


def _values(plan: KernelPlan, kernel_name: str | None, c: _Expressions) -> dict:
    """What every kernel template needs: names, types, and the conversion."""
    src, dst = plan.src_md, plan.dst_md
    sdt, ddt = src.data_type, dst.data_type
    bit_copy, saturate_only = conversion(plan)
    helpers = set()
    if "bf16" in (sdt, ddt) and not bit_copy:
        helpers.add("bf16")
    if ddt == "bf16" and plan.compute == "double":
        helpers.add("bf16_from_double")
    for dt in (sdt, ddt):
        if dt in ("f8_e5m2", "f8_e4m3", "f4_e2m1", "e8m0") and not bit_copy:
            helpers.add(dt)
        if dt in ("s4", "u4", "f4_e2m1"):
            helpers.add("nibble")
    return dict(
        kind="shuffle" if plan.name.startswith("shuffle") else "reorder",
        name=kernel_name or plan.name, src_desc=describe(src), dst_desc=describe(dst),
        loops_comment=" ".join(_level_text(lv) for lv in plan.levels),
        fp64=plan.compute == "double", helpers=helpers, idx="ulong" if plan.wide_index else "uint",
        lit=c.lit, indent=indent, declaration=declaration, storage=STORAGE,
        src_type=STORAGE[sdt], dst_type=STORAGE[ddt], src_dt=sdt, dst_dt=ddt, ct=plan.compute,
        args={a.field: a for a in plan.args}, aligned=plan.aligned, typed_store=False, staged={},
        nibbles=plan.nibbles,
        bit_copy=bit_copy, saturate_only=saturate_only)


def _level_text(level, extent=None) -> str:
    return "".join(LETTERS[d] for d in level.dims) + f":{level.extent if extent is None else extent}"


def _source_offset(plan: KernelPlan, c: _Expressions, needed, shuffled: bool):
    """The source offset's per-dim part, from logical indices named i<d>:
    (declarations of the indices it names, its terms). With ``shuffled``
    the shuffle axis is read at its shuffled position."""
    src = plan.src_md
    names, terms = [], []
    for d in needed:
        p = f"i{d}"
        if shuffled and plan.shuffle and plan.shuffle[0] == d:
            rows = src.dims[d] // plan.shuffle[1]
            names.append((f"c{d}", f"(i{d} % {c.lit(rows)}) * {c.lit(plan.shuffle[1])} + "
                                   f"i{d} / {c.lit(rows)}"))
            p = f"c{d}"
        dim_terms = offset_terms(src, d)
        if src.padded_offsets[d] and dim_terms:
            names.append((f"p{d}", f"{p} + {c.lit(src.padded_offsets[d])}"))
            p = f"p{d}"
        terms += [c.term(p, t) for t in dim_terms]
    return names, terms


def _render_tiled(plan: KernelPlan, kernel_name: str | None, c: _Expressions) -> str:
    """The source of a tiled plan (templates/tiled.cl.mako)."""
    tile, levels = plan.tile, plan.levels
    src, dst = plan.src_md, plan.dst_md
    needed = indexed_dims(plan)
    src_const, dst_const = constant_offsets(src, dst, plan.linear)
    # Where the box starts along each loop, from the work-group's number,
    # the innermost loop first (neighbouring groups, neighbouring memory).
    starts = []
    for j, count in tile.numbering():
        step = "box" if count is None else f"(box % {c.lit(count)})"
        starts.append((f"a{j}" if tile.box[j] == 1 else f"a{j}_0", count,
                       c.times(step, tile.box[j])))
    axis = plan.shuffle[0] if plan.shuffle else None
    u = _Expressions(False)  # positions in the box are 32-bit whatever the offsets

    def phase_values(phase, reading):
        indices = []
        vec = phase.vec

        def digits(var, seq):
            div = 1
            for n, j in enumerate(seq):
                q = var if div == 1 else f"{var} / {div}u"
                if n < len(seq) - 1:
                    q = f"{q} % {tile.box[j]}u" if div == 1 else f"({q}) % {tile.box[j]}u"
                indices.append((f"j{j}", q))
                div *= tile.box[j]

        padded = phase.row_pad != phase.row_vectors
        if padded or vec > 1:
            digits("col" if vec == 1 else "e", phase.order[:phase.row])
            digits("row", phase.order[phase.row:])
        else:
            digits("r", phase.order)
        absolute = [(f"a{j}", f"a{j}_0 + j{j}" if tile.counts[j] > 1 else f"j{j}")
                    for j in sorted(phase.order)]
        tails = " || ".join(f"a{j} >= {c.lit(levels[j].extent)}" for j in sorted(phase.order)
                            if levels[j].extent % tile.box[j])
        logical = [(f"i{d}", c.sum([c.times(f"a{j}", lv.mult) for j, lv in enumerate(levels)
                                    if lv.dims == (d,)])) for d in needed]
        padding = " || ".join(f"i{d} >= {c.lit(dst.dims[d])}" for d in padded_dims(plan))
        local = {}
        for j in phase.order:
            index = f"j{j}"
            if reading and levels[j].dims == (axis,):
                # The source position read goes where the destination wants it.
                index = f"c{axis}" if levels[j].mult == 1 else f"c{axis} / {levels[j].mult}u"
                index = f"({index} % {levels[j].extent}u)"
            local[j] = u.times(index, tile.local_stride(j))
        step = tile.local_stride(phase.order[0]) if phase.order else 0
        crossing = crosses(tile, phase)

        def element_local(n: str) -> str:
            """Where the vector's element n (a C expression) lies in the box:
            n steps along the first loop, or, for a vector across the row's
            loops, at its own digits of e + n along the loops it spans (the
            plan kept the shuffled axis out of those) and at the vector's
            own place along the others (a shuffled axis there read where
            the destination wants it)."""
            if not crossing:
                return f"k + {n} * {step}u" if step != 1 else f"k + {n}"
            x, terms, div = f"(e + {n})", [], 1
            for j in phase.order:
                if div % vec == 0 or j not in phase.order[:phase.row]:
                    terms.append(local[j])  # the same for every element of the vector
                    continue
                q = x if div == 1 else f"{x} / {div}u"
                q = f"{q} % {tile.box[j]}u"
                stride = tile.local_stride(j)
                terms.append(q if stride == 1 else f"{q} * {stride}u")
                div *= tile.box[j]
            return " + ".join(terms)

        if reading and axis is not None:
            rows = src.dims[axis] // plan.shuffle[1]
            logical.append((f"c{axis}", f"(i{axis} % {c.lit(plan.shuffle[1])}) * {c.lit(rows)}"
                                        f" + i{axis} / {c.lit(plan.shuffle[1])}"))
        # The turn-th element first where the phase rotates (Tile.rotates);
        # element n of the lane's vector in the order it is moved.
        rotate = tile.rotates(phase)
        order = ([f"m{n}" for n in range(vec)] if rotate else
                 ["0"] + [f"{n}u" for n in range(1, vec)])
        places = ["k"] + [element_local(n) for n in order[1:]] if not rotate else \
            [element_local(n) for n in order]
        return SimpleNamespace(
            padded=padded, split=padded or vec > 1, row_pad=phase.row_pad,
            row_vectors=phase.row_vectors, row_len=phase.row_len, count=phase.count,
            vec=vec, contiguous=tile.contiguous(phase), typed=phase.typed, rotate=rotate,
            places=places, indices=indices, absolute=absolute,
            tails=tails, logical=logical, padding=padding,
            local=" + ".join(local.values()) or "0u")

    names, s_terms = _source_offset(plan, c, needed, shuffled=False)
    read = phase_values(tile.read, True)
    read.logical += names
    s_parts = [c.times(f"a{j}", lv.src_stride) for j, lv in enumerate(levels) if lv.merged]
    d_parts = [c.times(f"a{j}", lv.dst_stride) for j, lv in enumerate(levels)]
    slice_index = {arg.name: _slice_index(c, arg, dst.dims)
                   for arg in plan.args if arg.per_slice}
    # Per-slice values that vary along the write phase's vectors are loaded
    # as vectors too, or staged in local memory (plan.tile_values).
    write = tile.write
    vectors, stages = tile_values(plan)
    lane_args = {arg.name: write.vec for arg in vectors}
    values = _values(plan, kernel_name, c)
    # (a vector gathered element by element is stored by vstoreN: Oclgrind
    # mis-measures typed stores of vectors assembled from scalars)
    values["typed_store"] = write.typed and tile.contiguous(write)
    if write.vec > 1:
        values["helpers"] = _vector_helpers(plan, values["helpers"], write.vec,
                                            gathered=not tile.contiguous(write),
                                            typed=plan.aligned or values["typed_store"])
    staged = _staged_values(plan, c, stages)
    for arg_name, stage in staged.items():
        slice_index[arg_name] = stage.index
    values["staged"] = staged
    box_text = " x ".join(_level_text(levels[j], tile.box[j])
                          for j in range(len(levels)) if tile.box[j] > 1)
    return render_template(
        "tiled.cl.mako", **values,
        box_text=box_text, pad_every=tile.pad_every, pad_by=tile.pad_by,
        local_order=tile.local_order,
        local_elements=tile.local_elements, starts=starts,
        read=read, write=phase_values(write, False),
        s_off=c.sum(s_parts + s_terms, src_const), d_off=c.sum(d_parts, dst_const),
        slice_index=slice_index, lane_args=lane_args, block=0,
        layers=tile.grid[1], boxes=c.lit(tile.boxes))


def _staged_values(plan: KernelPlan, c: _Expressions, stages) -> dict:
    """What the template needs to stage the per-slice values ``stages``
    (plan.tile_values) in local memory once per box, in the read phase,
    and to index them in the write phase: name -> namespace."""
    tile, levels, dst = plan.tile, plan.levels, plan.dst_md
    staged = {}
    for arg, d, own in stages:
        digits, index, stride = [], [], 1
        for j in reversed(own):  # innermost level first: its digit varies fastest
            q = "q" if stride == 1 else f"q / {stride}u"
            digits.append((f"j{j}", q if j == own[0] else f"{q} % {tile.box[j]}u"))
            index.insert(0, f"j{j}" if stride == 1 else f"j{j} * {stride}u")
            stride *= tile.box[j]
        absolute = [(f"a{j}", f"a{j}_0 + j{j}" if tile.counts[j] > 1 else f"j{j}") for j in own]
        logical = c.sum([c.times(f"a{j}", levels[j].mult) for j in own]
                        + [c.times(f"a{j}", lv.mult) for j, lv in enumerate(levels)
                           if lv.dims == (d,) and tile.box[j] == 1])
        staged[arg.name] = SimpleNamespace(
            array=f"{arg.name}_box", size=stride, digits=digits, absolute=absolute,
            logical=logical, extent=c.lit(dst.dims[d]), index=" + ".join(index),
            c_type=arg.c_type, lanes=_staged_lanes(tile, own))
    return staged


def _staged_lanes(tile, own) -> list[str]:
    """Where each element of a write vector that spans the row's levels
    finds its staged value: from its own digits of e + n along the row (its
    place on the masked dim changes inside the vector). Empty otherwise."""
    write = tile.write
    if not crosses(tile, write):
        return []
    row = write.order[:write.row]
    lanes = []
    for n in range(write.vec):
        x, div, digit = f"(e + {n}u)" if n else "e", 1, {}
        for m, j in enumerate(row):
            q = x if div == 1 else f"{x} / {div}u"
            digit[j] = q if m == len(row) - 1 else f"{q} % {tile.box[j]}u"
            div *= tile.box[j]
        terms, stride = [], 1
        for j in reversed(own):
            value = f"({digit[j]})" if j in digit else f"j{j}"
            terms.insert(0, value if stride == 1 else f"{value} * {stride}u")
            stride *= tile.box[j]
        lanes.append(" + ".join(terms))
    return lanes


def _slice_index(c: _Expressions, arg: KernelArg, dims: tuple[int, ...]) -> str:
    """C expression: the position of an element's value in a per-slice array
    (of one value per group, for grouped scales and zero points)."""
    terms = [c.times(f"i{d}" if g == 1 else f"(i{d} / {c.lit(g)})", stride)
             for d, g, stride in slice_strides(arg, dims)]
    return c.sum(reversed(terms))
