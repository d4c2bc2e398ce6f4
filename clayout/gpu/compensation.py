"""The compensation kernel (templates/compensation.cl.mako): rendered from a
weights descriptor with extra, built once per context and device, launched
after the kernel that writes the s8 data.

What it computes is clayout/compensation.py's: for each slice of a mask
(over the masked dims' padded sizes), -128 (s8s8) or -1 (zp) times the sum
of the s8 weights over the other dims' logical indices, stored as s32 from
``md.compensation_offset`` on. The weights' offsets are sums of the layout's
per-dim offset terms (plan.offset_terms), divisions by constants only.
"""
from __future__ import annotations

import hashlib
import math
from types import SimpleNamespace

from ..compensation import FACTOR
from ..memory_desc import MemoryDesc
from ..tags import LETTERS
from .build import _kernel_key, _LockedKernel, render_template
from .cache import kernel_cache
from .plan_types import describe, offset_terms

#: Offsets beyond this take 64-bit arithmetic.
_WIDE = 2**31


def _literal(wide: bool):
    suffix = "UL" if wide else "u"
    return lambda n: f"{n}{suffix}"


def _offset(md: MemoryDesc, d: int, var: str, lit) -> str | None:
    """C expression of the offset dim ``d`` adds at logical index ``var``
    (None when it always adds 0)."""
    p = var if not md.padded_offsets[d] else f"({var} + {lit(md.padded_offsets[d])})"
    parts = []
    for t in offset_terms(md, d):
        q = p if t.divisor == 1 else f"{p} / {lit(t.divisor)}"
        if t.modulus is not None:
            q = f"({q}) % {lit(t.modulus)}" if t.divisor != 1 else f"{p} % {lit(t.modulus)}"
        if t.stride != 1:
            q = f"({q}) * {lit(t.stride)}" if q != p else f"{p} * {lit(t.stride)}"
        parts.append(q)
    return " + ".join(parts) or None


def _block(md: MemoryDesc, kind: str, mask: int, start: int, count: int, lit) -> SimpleNamespace:
    """What the template needs of one compensation (s8s8 or zp)."""
    masked = [d for d in range(md.ndims) if mask >> d & 1]
    others = [d for d in range(md.ndims) if not mask >> d & 1]
    # The slice's indices, the last masked dim fastest (C order).
    decomposition = [(f"i{d}", None if n == 0 else md.padded_dims[d])
                     for n, d in reversed(list(enumerate(masked)))]
    padding = " || ".join(f"i{d} >= {lit(md.dims[d])}" for d in masked
                          if md.dims[d] != md.padded_dims[d])
    base_terms = [_offset(md, d, f"i{d}", lit) for d in masked]
    constant = md.offset0
    loops = []
    # Loops over the other dims, the one of the largest step outermost.
    for d in sorted(others, key=lambda d: -int(md.dim_offsets(d, 1) - md.dim_offsets(d, 0))
                    if md.dims[d] > 1 else 0):
        if md.dims[d] == 1:
            constant += int(md.dim_offsets(d, 0))
            continue
        loops.append((f"i{d}", md.dims[d], _offset(md, d, f"i{d}", lit) or lit(0)))
    base = " + ".join([t for t in base_terms if t] + ([lit(constant)] if constant else [])) \
        or lit(0)
    factor = FACTOR[kind]
    return SimpleNamespace(
        kind=kind, mask_text=f"{mask:#b}", start=start, count=count,
        scale="-" if factor == -1 else f"{factor} * ",
        masked_text=" x ".join(f"{LETTERS[d]}:{md.padded_dims[d]}" for d in masked),
        loops_text=" x ".join(f"{LETTERS[d]}:{md.dims[d]}" for d in others) or "the slice",
        summed=math.prod(md.dims[d] for d in others),
        decomposition=decomposition, padding=padding, base=base, loops=loops)


def render_compensation(md: MemoryDesc, kernel_name: str = "compensation") -> str:
    """The OpenCL C source of ``md``'s compensation kernel, named ``kernel_name``.

    Its one argument is the destination buffer (``__global char *``); one
    work-item per compensation value, ``len`` of them in all."""
    first = md.compensation_offset
    wide = md.size >= _WIDE
    lit = _literal(wide)
    blocks, start = [], 0
    for kind, mask, count in md.extra.counts(md.padded_dims):
        blocks.append(_block(md, kind, mask, start, count, lit))
        start += count
    return render_template(
        "compensation.cl.mako", name=kernel_name, desc=describe(md.without_extra()),
        idx="ulong" if wide else "uint", lit=lit, blocks=blocks, count=start,
        first=first, aligned=first % 4 == 0)


class CompensationKernel(_LockedKernel):
    """The compensation kernel of one weights descriptor on one context."""

    def __init__(self, engine, md: MemoryDesc):
        self.count = sum(count for _, _, count in md.extra.counts(md.padded_dims))
        # A stable name of its own, so a batch's program can hold several and
        # PoCL's disk cache still finds it in the next run.
        key = ("compensation", md.without_extra(), md.extra.masks(), md.compensation_offset)
        name = f"compensation_{hashlib.sha1(repr(key).encode()).hexdigest()[:10]}"
        super().__init__(engine, lambda: render_compensation(md, name), name, key)

    def launch(self, queue, dst, wait_for=None):
        """Enqueue the kernel on the buffer ``dst`` after ``wait_for``; returns its Event."""
        return self._enqueue(queue, (self.count,), None, (dst,), wait_for)


def get_compensation_kernel(engine, md: MemoryDesc) -> CompensationKernel | None:
    """The compensation kernel for ``md`` on ``engine``'s context, built on
    first use; None when ``md`` holds no compensation (scale_adjust alone)."""
    if md.compensation_offset is None:
        return None
    # scale_adjust does not shape the kernel: key on the layout and masks.
    key = ("compensation", md.without_extra(), md.extra.masks(), md.compensation_offset)
    return kernel_cache.get(engine.backend.kernel_scope, _kernel_key(engine, key),
                            lambda: CompensationKernel(engine, md))
