"""Render a RuntimePlan into OpenCL C (templates/runtime.cl.mako); no device needed.

Each dim, extent and stride the pattern fixes is a literal; a runtime one is
the kernel argument of its name: ``n<d>`` a dim, ``ss<d>``/``ds<d>`` a source
or destination stride, ``e<d>`` (computed once) a destination outer extent.
"""
from __future__ import annotations

from ..errors import UnimplementedError
from ..memory_desc import RUNTIME_DIM
from .render import STORAGE, _Expressions, _slice_index, _values, render_template
from .runtime_plan import RuntimePlan, describe_levels


def _times(a: str, b: str, c: _Expressions) -> str | None:
    """a * b, where b is a literal or a name; None when b is the literal 0.
    Two literals, or a name times a literal times a literal, fold."""
    if b == c.lit(0):
        return None
    if b == c.lit(1):
        return a
    if b.endswith(c.suffix) and b[:-len(c.suffix)].isdigit():
        factor = int(b[:-len(c.suffix)])
        head, _, tail = a.rpartition(" * ")
        if a.endswith(c.suffix) and a[:-len(c.suffix)].isdigit():
            return c.lit(int(a[:-len(c.suffix)]) * factor)
        if head and " " not in head and tail.endswith(c.suffix) and tail[:-len(c.suffix)].isdigit():
            return f"{head} * {c.lit(int(tail[:-len(c.suffix)]) * factor)}"
    return f"({a}) * {b}" if " " in a else f"{a} * {b}"


def _runtime_slice_index(c: _Expressions, arg, dims, dim) -> str:
    """As render._slice_index, where a masked dim may be a runtime one: its
    count of values (``dim(d)``, over its group) is then an expression."""
    if not any(arg.mask >> d & 1 and n == RUNTIME_DIM for d, n in enumerate(dims)):
        return _slice_index(c, arg, dims)
    terms, stride = [], c.lit(1)
    for d in reversed(range(len(dims))):
        if arg.mask >> d & 1:
            g = arg.group(d, len(dims))
            index = f"i{d}" if g == 1 else f"(i{d} / {c.lit(g)})"
            terms.append(_times(index, stride, c))
            count = dim(d) if g == 1 else f"({dim(d)} / {c.lit(g)})"
            stride = count if stride == c.lit(1) else f"{stride} * {count}"
    return c.sum(reversed(terms))


def _work(plan: RuntimePlan) -> str:
    if plan.block:
        return (f"transposes a {plan.block}x{plan.block} block in registers (element "
                f"by element where a runtime extent cuts it short)")
    if plan.vec == 1:
        return "writes one element; neighbouring work-items write neighbouring addresses"
    return f"writes a run of up to {plan.vec} consecutive elements one by one"


def render_runtime_kernel(plan: RuntimePlan, kernel_name: str | None = None) -> str:
    """The OpenCL C source of ``plan``'s kernel, named ``kernel_name`` (else
    ``plan.name``). Its arguments are src, dst, ``plan.args``, then what
    ``runtime_values`` computes. Raises UnimplementedError for a data type
    the kernels do not serve."""
    src, dst = plan.src_md, plan.dst_md
    for md in (src, dst):
        if md.data_type not in STORAGE or md is dst and md.dtype.packed:
            raise UnimplementedError(
                f"{md!r}: runtime-dims kernels for {md.data_type} are not generated")
    c = _Expressions(plan.wide_index)
    levels, vec = plan.levels, plan.vec
    last = len(levels) - 1
    inner = levels[last]

    def dim(d):
        return f"n{d}" if dst.dims[d] == RUNTIME_DIM else c.lit(dst.dims[d])

    tiled = levels[plan.tiled] if plan.block else None

    def extent(level):
        if level is tiled:  # counted in tiles of B steps
            return "tiles" if "tiles" in plan.divisors else c.lit(level.extent // plan.block)
        if level.extent is not None:
            return c.lit(level.extent)
        return "runs" if level is inner else f"e{level.dim}"

    def step(j):  # what one count of loop j is in its own steps
        return plan.block if levels[j] is tiled else 1

    def dst_stride(level):
        return f"ds{level.dim}" if level.stride is None else c.lit(level.stride)

    def src_stride(d):
        return f"ss{d}" if src.strides[d] == RUNTIME_DIM else c.lit(src.strides[d])

    runs = c.lit(inner.extent // vec) if inner.extent is not None else "runs"
    # The outermost loop takes what is left of the item number.
    decomposition = [("r", runs if last else None)] + \
        [(f"l{j}", extent(levels[j]) if j else None) for j in reversed(range(last))]
    # A loop of one step (a run covering the whole innermost loop) counts
    # nothing; a runtime extent divides by its magic multiplier (32-bit).
    decomposition = [(var, "0" if n == c.lit(1) else n,
                      n in plan.divisors and not plan.wide_index) for var, n in decomposition]

    # Logical indices: loop counters times their steps.
    bases = []
    for d in range(dst.ndims):
        parts = [_times(f"l{j}", c.lit(levels[j].mult * step(j)), c) for j in range(last)
                 if levels[j].dim == d]
        if inner.dim == d:
            parts.append(_times("r", c.lit(vec * inner.mult), c))
        bases.append((f"i{d}" if d != inner.dim else f"i{d}_base", c.sum(parts)))
    d_parts = [_times(_times(f"l{j}", c.lit(step(j)), c), dst_stride(levels[j]), c)
               for j in range(last)]
    d_parts.append(_times(_times("r", c.lit(vec), c), dst_stride(inner), c))
    bases.append(("d_base", c.sum(["dst_first"] + d_parts)))

    def source_terms(d):
        """The source offset dim d adds, from its logical index i<d>."""
        p = f"i{d}"
        if plan.shuffle and plan.shuffle[0] == d:
            rows = src.dims[d] // plan.shuffle[1]
            p = f"((i{d} % {c.lit(rows)}) * {c.lit(plan.shuffle[1])} + i{d} / {c.lit(rows)})"
        block = src.blocks[d]
        terms = [_times(p if block == 1 else f"{p} / {c.lit(block)}", src_stride(d), c)]
        inner_stride, divisor = 1, 1
        for size, idx in reversed(tuple(zip(src.inner_blks, src.inner_idxs))):
            if idx == d:
                q = f"{p} % {c.lit(size)}" if divisor == 1 else \
                    f"({p} / {c.lit(divisor)}) % {c.lit(size)}"
                terms.append(_times(q, c.lit(inner_stride), c))
                divisor *= size
            inner_stride *= size
        return [t for t in terms if t]

    outer_terms = [t for d in range(src.ndims) if d != inner.dim for t in source_terms(d)]
    bases.append(("s_base", c.sum(["src_first"] + outer_terms)))
    element_names = [(f"i{inner.dim}", c.sum([f"i{inner.dim}_base",
                                              _times("k", c.lit(inner.mult), c)]))]
    padded = [d for d in range(dst.ndims) if dst.blocks[d] > 1 and
              (dst.dims[d] == RUNTIME_DIM or dst.dims[d] % dst.blocks[d])]
    tail = None
    if inner.extent is None and vec > 1:
        tail = f"r * {c.lit(vec)} + k >= {dim(inner.dim)}"
    slice_index = {a.name: _runtime_slice_index(c, a, dst.dims, dim)
                   for a in plan.args if a.per_slice}
    values = _values(plan, kernel_name, c)
    values.update(loops_comment=describe_levels(plan))
    s_off = c.sum(["s_base"] + source_terms(inner.dim))
    d_off = c.sum(["d_base", _times("k", dst_stride(inner), c)])
    full = tail_s_off = tail_d_off = tiled_n = None
    if tiled is not None:
        tiled_n = dim(tiled.dim)
        short = []  # the loops a runtime extent may cut short
        if tiled.extent is None or tiled.extent % plan.block:
            short.append(f"i{tiled.dim} + {c.lit(plan.block)} <= {tiled_n}")
        if inner.extent is None:
            short.append(f"i{inner.dim}_base + {c.lit(plan.block)} <= {dim(inner.dim)}")
        full = " && ".join(short) or None
        tail_s_off = f"{s_off} + b"  # the tiled loop steps the source by one
        tail_d_off = c.sum([d_off, _times("b", dst_stride(tiled), c)])
    return render_template(
        "runtime.cl.mako", **values, work=_work(plan), vec=vec, full=full,
        tiled_dim=None if tiled is None else tiled.dim, tiled_n=tiled_n, tail_s_off=tail_s_off,
        tail_d_off=tail_d_off, element=element_names,
        transpose_offsets=[c.sum(["d_base", _times(c.lit(j), dst_stride(tiled), c)
                                  if j else None]) for j in range(plan.block)],
        decomposition=decomposition, bases=bases, tail=tail,
        s_off=s_off, d_off=d_off,
        padding=" || ".join(f"i{d} >= {dim(d)}" for d in padded),
        slice_index=slice_index, lane_args=set(), block=plan.block,
        runtime_args=plan.runtime_args)
