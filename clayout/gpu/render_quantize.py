"""The quantize kernel's plan and source (templates/quantize.cl.mako), with
no device: which problems it serves, how the work is split, and the
rendering. Building and launching are clayout/quantize.py's.

The kernel serves f32 data in plain C order into a plain C-order
destination, when every group of the spec is one run of consecutive
elements (groups along the last dim, whole rows, the whole tensor); a
4-bit destination needs groups of even length (two elements a byte).
Other layouts and groups get device reorders around it
(clayout/quantize_route.py); what those cannot serve runs on the host path.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..host.quantize import FLOAT_MAX, INT_RANGE, MX_EMAX, SYMMETRIC_QMAX, QuantizeSpec
from ..memory_desc import MemoryDesc
from .render import indent, render_template

#: A group longer than this, when there are too few groups to keep the
#: device busy, is split into chunks (two launches: partials, then values).
SPLIT_ABOVE = 4096
#: The work-items a split aims at, and the fewest elements of a chunk.
TARGET_ITEMS = 1024
MIN_CHUNK = 1024
#: The most partials one work-item combines.
MAX_PARTS = 512
#: Elements one work-item of small groups takes (in whole groups).
ITEM_ELEMENTS = 256
#: The vector kernel (groups of a multiple of 16 elements into integers or
#: f4_e2m1): the most elements and vectors of 16 a work-item takes, and the
#: work-items it keeps at least when the groups allow.
BATCH_ELEMENTS = 4096
BATCH_VECTORS = 128
BATCH_ITEMS = 256
#: How far ahead the vector kernel fetches the source into the cache, in
#: bytes at least (whole work-items): while a work-item quantizes, the
#: groups of a later one are fetched. 4 KiB: MXFP4's 2 KiB work-items were
#: 5-10% faster fetching two ahead than one on PoCL and Intel's runtime.
PREFETCH_AHEAD_BYTES = 4096
#: With clang's builtin, the same lines are also fetched into the L2 cache
#: only (locality 1) from this many times as far ahead as the first fetch:
#: more lines in flight. MXFP4's 2 KiB work-items (8 KiB ahead; session 48,
#: a Xeon): 0.76-0.77 -> 0.84-0.86 of copy on Intel's runtime, 0.76-0.85 ->
#: 0.77-0.89 on PoCL. u4 groups of 128 (8 KiB work-items, 16 KiB ahead;
#: session 49, an AMD EPYC): 0.78-0.80 -> 0.93-0.96 on PoCL, 0.67-0.78 ->
#: 0.82-0.92 on Intel's runtime (where the Xeon's PoCL had lost 5%).
L2_AHEAD_TIMES = 2
#: The bytes one prefetch brings in: a CPU's cache line.
CACHE_LINE = 64
#: Source types besides f32 that the vector and coalesced kernels read
#: themselves, widened to f32 (exactly) as they load them; the loop and split
#: kernels take them through a reorder into an f32 copy (quantize_route.py),
#: 4x the bytes.
HALF_SOURCES = ("f16", "bf16")
#: The GPU strategy's coalesced kernel (groups of L elements, L / 4 a power
#: of two up to the work-group): work-items a work-group, 4 elements each
#: per pass, and passes (so that the staged codes, scales and zero points
#: of a work-group leave in whole sectors).
COALESCED_LANES = 256
COALESCED_PASSES = 4


@dataclass(frozen=True)
class QuantizePlan:
    """What shapes one quantize kernel (its cache key)."""

    scheme: str
    dst_dt: str
    scale_dt: str
    zp_dt: str | None
    group: int     # L: elements of a group
    groups: int    # how many groups
    chunk: int     # C: elements a work-item quantizes in one go (divides L)
    parts: int     # L / C
    gpi: int       # groups per work-item (parts == 1)
    vec: int       # lanes of a load
    wide: bool     # 64-bit indices
    strategy: str
    batch: int = 0  # groups per work-item of the vector kernel (0: the loop kernel)
    lanes: int = 0  # work-group size of the coalesced kernel (0: another kernel)
    passes: int = 0  # its passes of 4 * lanes elements per work-group
    prefetch: str = ""  # the vector kernel's cache-line fetch: "builtin" or "opencl"
    src_dt: str = "f32"  # f16 and bf16 in the vector and coalesced kernels only

    @property
    def elements(self) -> int:
        return self.group * self.groups

    @property
    def items(self) -> int:
        """Work-items of each launch."""
        if self.parts > 1:
            return self.groups * self.parts
        if self.lanes:
            per_work_group = 4 * self.lanes * self.passes
            return -(-self.elements // per_work_group) * self.lanes
        if self.batch:
            return self.groups // self.batch
        return -(-self.groups // self.gpi)

    @property
    def name(self) -> str:
        return "quantize_" + hashlib.sha1(repr(self).encode()).hexdigest()[:10]


def c_order(md: MemoryDesc) -> bool:
    """Plain C order over the whole buffer (no blocks, padding, gaps or offset)."""
    if md.inner_blks or md.offset0 or md.is_submemory or md.padded_dims != md.dims:
        return False
    step, strides = 1, []
    for n in reversed(md.dims):
        strides.append(step)
        step *= n
    return all(n == 1 or s == w for n, s, w in zip(md.dims, md.strides, reversed(strides)))


def why_not(spec: QuantizeSpec, strategy: str, max_work_group: int = COALESCED_LANES,
            little_endian: bool = True) -> str | None:
    """Why the kernel of ``strategy`` ("cpu" or "gpu") does not serve
    ``spec`` on a device of that ``max_work_group`` and byte order (None:
    it does). Sources are f32, or f16 and bf16 where the CPU strategy's
    vector kernel or the GPU strategy's coalesced kernel takes the spec."""
    src = spec.src_md.data_type
    if src != "f32" and not (src in HALF_SOURCES and (
            (strategy == "cpu" and _vector_kernel(spec))
            or _coalesced(spec, strategy, max_work_group, little_endian))):
        return (f"src {src}: the kernel reads f32" + (
            " (f16 and bf16 only in the CPU strategy's vector kernel and the GPU "
            "strategy's coalesced one)" if src in HALF_SOURCES else ""))
    if not c_order(spec.src_md) or not c_order(spec.dst_md):
        return "src and dst must be plain C order (no blocks, padding, gaps or offset)"
    if not spec.contiguous_groups():
        return f"groups of extents {spec.extents} are not runs of consecutive elements"
    if spec.dst_md.dtype.packed and spec.group_length % 2:
        return f"groups of odd length {spec.group_length} into a 4-bit dst"
    if spec.src_md.nelems() >= 2**40:
        return "more than 2^40 elements"
    return None


def _parts(spec: QuantizeSpec) -> int:
    """Chunks a group is split in (two launches), 1 for whole groups."""
    length = spec.group_length
    groups = spec.src_md.nelems() // length
    if length <= SPLIT_ABOVE or groups >= TARGET_ITEMS:
        return 1
    packed = spec.dst_md.dtype.packed
    fits = [p for p in range(2, min(MAX_PARTS, length // MIN_CHUNK) + 1)
            if length % p == 0 and (not packed or (length // p) % 2 == 0)]
    enough = [p for p in fits if groups * p >= TARGET_ITEMS]
    return enough[0] if enough else (fits[-1] if fits else 1)


def _coalesced(spec: QuantizeSpec, strategy: str, max_work_group: int,
               little_endian: bool) -> bool:
    """Whether the GPU strategy takes its coalesced kernel for ``spec``:
    groups of L elements, L / 4 a power of two up to the work-group; it
    stages codes as words in local memory, so a little-endian device."""
    length = spec.group_length
    return (strategy == "gpu" and little_endian and max_work_group >= COALESCED_LANES
            and length > 0 and length % 4 == 0 and (4 * COALESCED_LANES) % length == 0)


def _vector_kernel(spec: QuantizeSpec) -> bool:
    """Whether the CPU strategy takes the vector kernel for ``spec``."""
    length = spec.group_length
    if length == 0 or spec.src_md.nelems() == 0:
        return False
    return _batch(spec, length, spec.src_md.nelems() // length, _parts(spec)) > 0


def _vec(chunk: int) -> int:
    for v in (8, 4, 2, 1):
        if chunk % v == 0:
            return v
    return 1  # pragma: no cover - 1 divides everything


def plan_quantize(spec: QuantizeSpec, strategy: str, max_work_group: int = COALESCED_LANES,
                  little_endian: bool = True, prefetch: str = "opencl") -> QuantizePlan:
    """The plan of ``spec`` (which ``why_not`` accepts) on a device of
    ``strategy`` whose work-groups hold up to ``max_work_group`` work-items;
    the GPU strategy's coalesced kernel stages codes as words in local
    memory, so it needs a ``little_endian`` device. ``prefetch``: how the
    device's kernels fetch a cache line ahead (DeviceProfile.prefetch).
    Raises ValueError where ``why_not`` refuses ``spec`` on ``strategy``."""
    why = why_not(spec, strategy, max_work_group, little_endian)
    if why is not None:
        raise ValueError(f"no quantize kernel of the {strategy} strategy serves this: {why}")
    length = spec.group_length
    if _coalesced(spec, strategy, max_work_group, little_endian):
        groups = spec.src_md.nelems() // length
        return QuantizePlan(spec.scheme, spec.dst_md.data_type, spec.scale_data_type,
                            spec.zero_point_data_type, length, groups, length, 1, 1, 4,
                            spec.src_md.nelems() + 4 * COALESCED_LANES * COALESCED_PASSES
                            >= 2**31, strategy, lanes=COALESCED_LANES,
                            passes=COALESCED_PASSES, src_dt=spec.src_md.data_type)
    groups = spec.src_md.nelems() // length
    parts = _parts(spec)
    chunk = length // parts
    gpi = 1 if parts > 1 else max(1, ITEM_ELEMENTS // length)
    if spec.zero_point_data_type in ("s4", "u4") and parts == 1:
        gpi = max(2, gpi + gpi % 2)  # whole zero-point bytes per work-item
    batch = _batch(spec, length, groups, parts) if strategy == "cpu" else 0
    return QuantizePlan(spec.scheme, spec.dst_md.data_type, spec.scale_data_type,
                        spec.zero_point_data_type, length, groups, chunk, parts, gpi,
                        _vec(chunk), spec.src_md.nelems() + length >= 2**31, strategy,
                        batch, prefetch=prefetch if batch else "",
                        src_dt=spec.src_md.data_type)


def _batch(spec: QuantizeSpec, length: int, groups: int, parts: int) -> int:
    """Groups per work-item of the vector kernel (the CPU strategy's: on a
    GPU its 8 KiB runs a work-item would not coalesce), 0 where it does not
    serve: whole groups of a multiple of 16 elements into an integer or f4_e2m1
    destination; 16, 8, 4 or 2 of them (dividing the groups), the most that
    keep BATCH_ITEMS work-items (or the fewest otherwise)."""
    dst = spec.dst_md.data_type
    if parts > 1 or length % 16 or not (dst in INT_RANGE or dst == "f4_e2m1"):
        return 0
    fits = [b for b in (16, 8, 4, 2) if groups % b == 0 and b * length <= BATCH_ELEMENTS
            and b * length // 16 <= BATCH_VECTORS]
    if not fits:
        return 0
    busy = [b for b in fits if groups // b >= BATCH_ITEMS]
    return busy[0] if busy else fits[-1]


def _float(value) -> str:
    return f"{float(value)!r}f".replace("inf", "INFINITY")


def render_quantize(plan: QuantizePlan) -> str:
    """The OpenCL C of ``plan``: kernel ``plan.name`` (and ``plan.name +
    '_partials'`` when ``plan.parts > 1``)."""
    dst = plan.dst_dt
    helpers = set()
    if plan.scale_dt == "bf16":
        helpers.add("bf16")
    if dst in ("f8_e4m3", "f8_e5m2"):
        helpers.add(dst if plan.vec == 1 else f"float_to_{dst}_x{plan.vec}")
    if dst in ("s4", "u4", "f4_e2m1") and not plan.lanes:
        helpers.add(f"pack_nibbles{plan.vec}")
    if plan.scheme == "mx" and dst == "s8":
        qmin, qmax = -127, 127
    else:
        qmin, qmax = INT_RANGE.get(dst, (0, 0))
    top = SYMMETRIC_QMAX.get(dst) or FLOAT_MAX.get(dst, 1.0)
    int_type = {"s8": "char", "u8": "uchar", "s4": "char", "u4": "uchar"}.get(dst, "char")
    return render_template(
        "quantize_coalesced.cl.mako" if plan.lanes else "quantize.cl.mako",
        lanes=plan.lanes, passes=plan.passes, elements=plan.elements, name=plan.name,
        scheme=plan.scheme, dst_dt=dst,
        scale_dt=plan.scale_dt, zp_dt=plan.zp_dt, chunk=plan.chunk, parts=plan.parts,
        gpi=plan.gpi, groups=plan.groups, items=plan.items, vec=plan.vec,
        idx="ulong" if plan.wide else "uint", qmin=qmin, qmax=qmax, top=top,
        emax=MX_EMAX.get(dst, 0), int_range=INT_RANGE, int_type=int_type,
        float_literal=_float, indent=indent, helpers=helpers, batch=plan.batch, group=plan.group,
        # the vector kernel's fast integer codes bracket 1 / s with r (1 -+ 2^bracket_exp):
        # wider than 2.5 ulp of r's error and half an ulp of the quotient's: -21 at the least
        bracket_exp=-20,
        nv=plan.group // 16, packed=dst in ("s4", "u4", "f4_e2m1"),
        word=1 if dst in ("s4", "u4", "f4_e2m1") else 2, stores=_stores(plan),
        prefetch=plan.prefetch, ahead=_ahead(plan), l2_ahead=_l2_ahead(plan),
        fetches=_fetches(plan), line=CACHE_LINE,
        src_dt=plan.src_dt, src_type={"f32": "float", "f16": "half", "bf16": "ushort"}[plan.src_dt],
        # what convert.cl.mako's helper functions may read
        ct="float", aligned=False, typed_store=False, storage={})


def _source_bytes(plan: QuantizePlan) -> int:
    return 4 if plan.src_dt == "f32" else 2


def _ahead(plan: QuantizePlan) -> int:
    """Work-items ahead of its own whose groups the vector kernel fetches."""
    if not plan.batch:
        return 0
    item_bytes = _source_bytes(plan) * plan.batch * plan.group
    return max(1, -(-PREFETCH_AHEAD_BYTES // item_bytes))


def _l2_ahead(plan: QuantizePlan) -> int:
    """Work-items ahead whose groups the vector kernel also fetches into the
    L2 cache only; 0 for none (no builtin)."""
    if plan.prefetch != "builtin":
        return 0
    return L2_AHEAD_TIMES * _ahead(plan)


def _fetches(plan: QuantizePlan) -> dict:
    """{group: byte offsets of the cache lines fetched after its stores}:
    each line of a work-item's groups once, after the group it starts in."""
    if not plan.batch:
        return {}
    group_bytes = _source_bytes(plan) * plan.group
    out = {g: [] for g in range(plan.batch)}
    for line in range(0, plan.batch * group_bytes, CACHE_LINE):
        out[line // group_bytes].append(line)
    return out


def _stores(plan: QuantizePlan) -> dict:
    """The vector kernel's stores: {last vector: (first vector, vectors)},
    up to 64 bytes each (8 vectors of 16 four-bit codes, 4 of 8-bit ones)."""
    if not plan.batch:
        return {}
    total = plan.batch * plan.group // 16
    most = 8 if plan.dst_dt in ("s4", "u4", "f4_e2m1") else 4
    stores, pos = {}, 0
    while pos < total:
        k = most
        while k > total - pos:
            k //= 2
        stores[pos + k - 1] = (pos, k)
        pos += k
    return stores


def describe_plan(plan: QuantizePlan) -> str:
    """A short account of the split, for ``impl`` and explain()."""
    if plan.lanes:
        return (f"work-groups of {plan.lanes}, 4 elements a work-item, groups of {plan.group} "
                f"reduced in local memory")
    if plan.parts > 1:
        return (f"{plan.groups} group(s) of {plan.group} in {plan.parts} chunks of "
                f"{plan.chunk}, two launches")
    if plan.batch:
        return f"{plan.batch} groups of {plan.group} per work-item, vectors of 16"

    return f"{plan.gpi} group(s) of {plan.group} per work-item, vectors of {plan.vec}"
