"""The randomized sweep's problems (tests/test_sweep.py): seeded, so that a
failure names (seed, index) and those two numbers make the same problem again.

A problem is a reorder or a shuffle of 1-6 dims between two layouts, each a
format tag with zero to three inner blocks (sizes 2-16, 3 and 5 among them,
so blocks need not divide the dims), plain strides with gaps, a blocked tag
with outer strides with gaps, or a submemory (window) of a bigger parent of
any of those; any pair of twelve types; src / dst scales (per tensor or
masked on any dims, stored as f32, bf16 or f16), zero points on the integer
sides, a sum (beta); shuffles along any axis and group, forward or backward,
into another layout.

Half the reorders pair layouts that the kernels treat apart (the same
layout, transposes, plain and blocked, weights), with dims in whole blocks
half the time; two fifths of the reorders keep to the six common types; a
few problems are big (rows for tiles) or huge (launches in chunks).

`make_case(seed, index)` draws one problem from np.random.default_rng((seed,
index)) alone; `Case.code()` writes it as Python that builds its descriptors
and primitive. Nothing here imports clayout: the runner (tests/sweep_run.py)
makes the descriptors from these plain values.
"""
import dataclasses
import math

import numpy as np

from reference import parse_tag

LETTERS = "abcdef"
TYPES = ("f32", "f16", "bf16", "s32", "s8", "u8", "f64", "f8_e5m2", "f8_e4m3",
         "s4", "u4", "f4_e2m1")
NIBBLES = ("s4", "u4", "f4_e2m1")
CORE = ("f32", "f16", "bf16", "s32", "s8", "u8")
VALUE_FIELDS = ("src_scales", "dst_scales", "src_zero_points", "dst_zero_points")
INTS = ("s32", "s8", "u8", "s4", "u4")
#: block sizes drawn for inner blocks, with 3 and 5 (which divide few dims) often
BLOCKS = (2, 3, 4, 5, 8, 16, 3, 5, 16, 6, 7, 12)
#: the most elements (padding and parent included) one tensor of a problem holds
BUDGET, BIG_BUDGET, HUGE_BUDGET, NIBBLE_BUDGET, TILE_BUDGET = 6000, 40000, 400000, 4000, 40000


@dataclasses.dataclass(frozen=True)
class Layout:
    """One side's layout, for dims ``dims``: a tag, outer strides (in
    elements; with a tag the tag's blocks stay inner), or both; for a
    submemory, ``parent`` dims and the window's ``offsets`` in them (the
    tag and strides are then the parent's)."""
    tag: str | None
    strides: tuple | None = None
    parent: tuple | None = None
    offsets: tuple | None = None

    def code(self, dims, dt):
        """Python that makes this MemoryDesc (`cly` is clayout)."""
        full = self.parent or dims
        args = [repr(tuple(full)), repr(dt)]
        if self.tag is not None:
            args.append(f"tag={self.tag!r}")
        if self.strides is not None:
            args.append(f"strides={tuple(self.strides)!r}")
        text = f"cly.MemoryDesc({', '.join(args)})"
        if self.parent is not None:
            text += f".submemory({tuple(dims)!r}, {tuple(self.offsets)!r})"
        return text


@dataclasses.dataclass(frozen=True)
class Values:
    """Scales or zero points: ``mask`` (0: per tensor), ``values`` (C order
    over the masked dims), ``data_type`` as stored (None: f32 / s32),
    ``groups`` on the last two dims (None: none; tests/test_onednn.py)."""
    mask: int
    values: tuple
    data_type: str | None = None
    groups: tuple | None = None

    def brief(self, cls):
        dt = f", {self.data_type}" if self.data_type else ""
        dt += f", groups={self.groups}" if self.groups else ""
        if len(self.values) == 1:
            return f"{cls}({self.values[0]!r}, mask={self.mask:#b}{dt})"
        return f"{cls}([{len(self.values)} values], mask={self.mask:#b}{dt})"

    def code(self, cls):
        extra = f", data_type={self.data_type!r}" if self.data_type else ""
        extra += f", groups={self.groups!r}" if self.groups else ""
        return f"cly.{cls}({_listed(self.values, cls)}, mask={self.mask:#b}{extra})"


#: The most values a reproduction lists (the rerun command makes them all).
LISTED = 64


def _listed(values, cls):
    """Python for a list of scales (f32) or zero points (s32)."""
    kind = np.float32 if cls == "Scales" else np.int32
    shown = [kind(v).item() for v in values[:LISTED]]
    if len(values) <= LISTED:
        return repr(shown)
    return f"{repr(shown)[:-1]}, ...]"  # (code() says where the rest are)


@dataclasses.dataclass(frozen=True)
class Case:
    seed: int
    index: int
    kind: str                 # "reorder" or "shuffle"
    dims: tuple
    sdt: str
    ddt: str
    src: Layout
    dst: Layout | None        # None: a shuffle's dst_md=None (the source's layout)
    src_scales: Values | None = None
    dst_scales: Values | None = None
    src_zero_points: Values | None = None
    dst_zero_points: Values | None = None
    sum_beta: float | None = None
    shuffle: tuple | None = None  # (axis, group, backward)
    at_execute: bool = False  # scales and zero points given to execute, not to Attr

    @property
    def has_attr(self):
        return any(v is not None for v in (self.src_scales, self.dst_scales, self.src_zero_points,
                                           self.dst_zero_points, self.sum_beta))

    @property
    def refusal(self):
        """Why clayout must refuse this problem (an InvalidArgumentError), or
        None: DESIGN.md and docs/limits.md, zero points apply to integer
        types only."""
        if self.src_zero_points is not None and self.sdt not in INTS:
            return f"src zero point on {self.sdt}"
        if self.dst_zero_points is not None and self.ddt not in INTS:
            return f"dst zero point on {self.ddt}"
        return None

    @property
    def dst_layout(self):
        return self.dst if self.dst is not None else self.src

    def attr_code(self, brief=False):
        parts = []
        for name, cls in (("src_scales", "Scales"), ("dst_scales", "Scales"),
                          ("src_zero_points", "ZeroPoints"), ("dst_zero_points", "ZeroPoints")):
            value = getattr(self, name)
            if value is None:
                continue
            if self.at_execute:
                dt = f", data_type={value.data_type!r}" if value.data_type else ""
                parts.append(f"{name}=cly.{cls}(mask={value.mask:#b}{dt})")
            else:
                parts.append(f"{name}={value.brief(cls) if brief else value.code(cls)}")
        if self.sum_beta is not None:
            parts.append(f"sum_beta={self.sum_beta!r}")
        return f"cly.Attr({', '.join(parts)})" if parts else "None"

    def code(self, engine="cly.Engine('opencl')"):
        """Python that makes the descriptors and the primitive."""
        lines = ["import clayout as cly",
                 f"src_md = {self.src.code(self.dims, self.sdt)}"]
        if self.kind == "shuffle":
            axis, group, backward = self.shuffle
            dst = "None" if self.dst is None else self.dst.code(self.dims, self.ddt)
            lines += [f"dst_md = {dst}",
                      f"p = cly.Shuffle(src_md, axis={axis}, group_size={group}, "
                      f"backward={backward}, engine={engine}, dst_md=dst_md)"]
        else:
            lines += [f"dst_md = {self.dst.code(self.dims, self.ddt)}",
                      f"attr = {self.attr_code()}",
                      f"p = cly.Reorder(src_md, dst_md, engine={engine}, attr=attr)"]
            values = self.execute_values()
            if values:
                shown = ", ".join(f"{k}={_listed(v, 'Scales' if 'scales' in k else '')}"
                                  for k, v in values.items())
                lines.append(f"# p.execute(stream, src, dst, {shown})")
        if any(len(getattr(self, name).values) > LISTED for name in VALUE_FIELDS
               if getattr(self, name) is not None):
            lines.append(f"# (value lists cut at {LISTED}: the rerun command makes them all)")
        return "\n".join(lines)

    def execute_values(self):
        """{execute keyword: values} of the values given at execute."""
        if not self.at_execute:
            return {}
        out = {}
        for name, keyword, kind in (("src_scales", "src_scales", np.float32),
                                    ("dst_scales", "dst_scales", np.float32),
                                    ("src_zero_points", "src_zero_points", np.int32),
                                    ("dst_zero_points", "dst_zero_points", np.int32)):
            value = getattr(self, name)
            if value is not None:
                out[keyword] = np.array(value.values, dtype=kind)
        return out

    def short(self):
        """One line: the problem in brief."""
        text = (f"#{self.index} {self.kind} {'x'.join(map(str, self.dims))} "
                f"{self.sdt}:{_layout_text(self.src)} -> {self.ddt}:"
                f"{_layout_text(self.dst_layout)}")
        if self.shuffle:
            text += " axis {} group {}{}".format(*self.shuffle[:2],
                                                 " backward" if self.shuffle[2] else "")
        if self.has_attr:
            text += f" attr {self.attr_code(brief=True)}"
            if self.execute_values():
                text += " (values at execute)"
        return text


def _layout_text(layout):
    text = layout.tag or "strided"
    if layout.strides is not None:
        text += f"/strides{tuple(layout.strides)}"
    if layout.parent is not None:
        text += f"/sub of {tuple(layout.parent)} at {tuple(layout.offsets)}"
    return text


# =============================================================================
# Drawing
# =============================================================================

def _dims(rng, ndims, big):
    """dims: mostly small, with sizes of 1; `big`: two dims of 24-140 (rows
    for the GPU strategy's tiles); "huge": 100k-300k elements (launches past
    what one pass of the work-items covers, so a work-item runs chunks)."""
    if big == "huge":
        dims = [int(rng.integers(1, 5)) for _ in range(ndims)]
        target = int(rng.integers(100_000, 300_000))
        while math.prod(dims) < target:
            d = int(rng.integers(ndims))
            dims[d] = dims[d] * 2 + int(rng.integers(0, 3))
        return tuple(dims)
    if rng.random() < 0.01:  # a zero-size dim: a no-op that must touch nothing
        dims = [int(rng.integers(1, 6)) for _ in range(ndims)]
        dims[int(rng.integers(ndims))] = 0
        return tuple(dims)
    dims = []
    for _ in range(ndims):
        r = rng.random()
        dims.append(1 if r < 0.12 else int(rng.integers(2, 9)) if r < 0.7
                    else int(rng.integers(9, 24)))
    if big:  # rows long enough for the GPU strategy's tiles on two dims
        for d in rng.choice(ndims, size=min(2, ndims), replace=False):
            dims[d] = int(rng.integers(24, 140))
    return tuple(dims)


def _tag(rng, ndims):
    """A random tag: the dims in any order, 0-3 inner blocks (blocked dims
    upper case in the outer part)."""
    order = rng.permutation(ndims)
    nblocks = int(rng.choice([0, 1, 2, 3], p=[0.3, 0.35, 0.25, 0.1]))
    blocks = [(int(rng.integers(ndims)), int(rng.choice(BLOCKS))) for _ in range(nblocks)]
    blocked = {d for d, _ in blocks}
    outer = "".join(LETTERS[d].upper() if d in blocked else LETTERS[d] for d in order)
    return outer + "".join(f"{size}{LETTERS[d]}" for d, size in blocks)


def _round_up(n, b):
    return -(-n // b) * b


def _gapped_strides(rng, order, extents, inner):
    """Outer strides for dims in `order` (outermost first) of `extents`
    outer steps each, innermost starting at `inner`, with gaps."""
    strides = [0] * len(order)
    s = inner
    for d in reversed(order):
        gap = 0 if rng.random() < 0.45 else int(rng.integers(1, 6))
        strides[d] = s + gap
        s = strides[d] * max(1, extents[d])
    return tuple(strides)


def layout_elems(dims, layout):
    """Elements the buffer of a layout spans (padding, gaps, parent)."""
    full = layout.parent or dims
    blocks, inner = [1] * len(full), 1
    if layout.tag is not None:
        for d, size in parse_tag(layout.tag)[1]:
            blocks[d] *= size
            inner *= size
    padded = [_round_up(n, b) for n, b in zip(full, blocks)]
    if layout.strides is None:
        return max(1, math.prod(padded))
    return inner + sum((p // b - 1) * s for p, b, s in zip(padded, blocks, layout.strides)
                       if p)


def _layout(rng, dims, ndims, tag=None, dressed=None):
    """A layout of dims: a tag (`tag`, else a random one; 60%), plain strides
    with gaps (20%), or a tag with outer strides with gaps (20%); a quarter
    of them a window of a bigger parent. With a given tag, `dressed` is the
    chance that it gets strides or a window at all."""
    if tag is not None and rng.random() >= dressed:
        return Layout(tag)
    form = rng.choice(["tag", "strides", "both"], p=[0.6, 0.2, 0.2])
    sub = 0 not in dims and rng.random() < 0.25
    if tag is None:
        tag = None if form == "strides" else _tag(rng, ndims)
    elif form == "strides":
        form = "both"
    blocks, inner = [1] * ndims, 1
    order = list(rng.permutation(ndims))
    if tag is not None:
        outer, pairs = parse_tag(tag)
        if rng.random() < 0.8:
            order = outer  # else the strides order the dims otherwise than the tag
        for d, size in pairs:
            blocks[d] *= size
            inner *= size
    full, offsets = dims, None
    if sub:  # offsets on whole blocks; a window that cuts a block reaches the end
        full, offsets = [], []
        for n, b in zip(dims, blocks):
            k = int(rng.integers(0, 3)) * b if b > 1 else int(rng.integers(0, 4))
            extra = 0
            if n % b == 0 and rng.random() < 0.7:
                extra = int(rng.choice([b, 2 * b, 1, b + 1])) if b > 1 else int(rng.integers(1, 4))
            full.append(k + n + extra)
            offsets.append(k)
        full, offsets = tuple(full), tuple(offsets)
    strides = None
    if form != "tag" and 0 not in full:
        padded = [_round_up(n, b) for n, b in zip(full, blocks)]
        strides = _gapped_strides(rng, order, [p // b for p, b in zip(padded, blocks)], inner)
        if tag is None and rng.random() < 0.2:  # an innermost stride past 1
            strides = tuple(s * 2 for s in strides)
        if tag is not None and list(order) != list(outer):
            # Strides keep a tag's order of dims: the tag is written in theirs.
            tag = "".join(LETTERS[d].upper() if d in dict(pairs) else LETTERS[d]
                          for d in order) + "".join(f"{size}{LETTERS[d]}" for d, size in pairs)
    elif tag is None:
        tag = LETTERS[:ndims]
    return Layout(tag, strides, full if sub else None, offsets)


def _plain(order):
    return "".join(LETTERS[d] for d in order)


def _related_tags(rng, ndims):
    """Two tags of the kinds the kernels treat apart: the same layout; plain
    layouts whose innermost dim moves (transposes); a plain layout and the
    same blocked on one dim by 4, 8 or 16 (nchw and nChw16c); a weights
    layout blocked on two dims (OIhw16i16o, OIhw4i16o4i) and a plain one."""
    mode = rng.choice(["same", "transpose", "block", "weights"], p=[0.3, 0.3, 0.25, 0.15])
    order = [int(d) for d in rng.permutation(ndims)]
    if mode == "same" or ndims == 1 and mode != "block":
        tag = _tag(rng, ndims) if rng.random() < 0.6 else _plain(order)
        return tag, tag
    if mode == "transpose":
        other = order[:]
        d = other.pop()  # the innermost dim goes further out
        other.insert(int(rng.integers(0, len(other))), d)
        return _plain(order), _plain(other), (d, other[-1])
    a = order[-1] if ndims == 1 else int(rng.choice(order))
    if mode == "block" or ndims == 1:
        size = int(rng.choice([4, 8, 16]))
        blocked = "".join(LETTERS[d].upper() if d == a else LETTERS[d] for d in order)
        return _plain(order), f"{blocked}{size}{LETTERS[a]}"
    b = int(rng.choice([d for d in order if d != a]))
    outer = "".join(LETTERS[d].upper() if d in (a, b) else LETTERS[d] for d in order)
    inner = rng.choice([f"16{LETTERS[a]}16{LETTERS[b]}", f"8{LETTERS[a]}8{LETTERS[b]}",
                        f"4{LETTERS[a]}16{LETTERS[b]}4{LETTERS[a]}"])
    return _plain(order), f"{outer}{inner}"


def _friendly(rng, dims, moved=()):
    """dims, half the time rounded up to multiples of 8 or 16 (no tails);
    the `moved` dims (a transpose's) always, and at least 8."""
    step = int(rng.choice([8, 16]))
    whole = rng.random() < 0.5
    return tuple(max(8, _round_up(n, step)) if d in moved else
                 _round_up(n, step) if whole and n > 2 else n for d, n in enumerate(dims))


def _values(rng, dims, kind, dt):
    """Scales (kind "scale") or zero points over a random mask."""
    ndims = len(dims)
    r = rng.random()
    if r < 0.35:
        mask = 0
    else:
        picked = rng.choice(ndims, size=1 if r < 0.8 or ndims == 1 else 2, replace=False)
        mask = sum(1 << int(d) for d in picked)
    count = math.prod(dims[d] for d in range(ndims) if mask >> d & 1)
    if kind == "scale":
        v = rng.uniform(0.05, 4.0, count)
        if rng.random() < 0.15:
            v = 2.0 ** rng.integers(-3, 4, count)
        if rng.random() < 0.1:
            v = -v
        data_type = str(rng.choice(["bf16", "f16"])) if rng.random() < 0.15 else None
        return Values(mask, tuple(np.float32(v).tolist()), data_type)
    lo, hi = {"s4": (-8, 8), "u4": (0, 16), "u8": (0, 40)}.get(dt, (-20, 21))
    return Values(mask, tuple(int(x) for x in rng.integers(lo, hi, count)))


def _attributes(rng, dims, sdt, ddt):
    kw = {}
    if rng.random() < 0.45 or 0 in dims:
        return kw
    if rng.random() < 0.5:
        kw["src_scales"] = _values(rng, dims, "scale", None)
    if rng.random() < 0.35:
        kw["dst_scales"] = _values(rng, dims, "scale", None)
    refuse = rng.random() < 0.03  # now and then a zero point on a float side: refused
    if (sdt in INTS or refuse) and rng.random() < 0.4:
        kw["src_zero_points"] = _values(rng, dims, "zp", sdt)
    if (ddt in INTS or refuse) and rng.random() < 0.4:
        kw["dst_zero_points"] = _values(rng, dims, "zp", ddt)
    if rng.random() < 0.45:  # a sum also shows an element written twice
        kw["sum_beta"] = float(rng.choice([0.5, 1.0, -1.0, 0.25, 2.0, 0.1]))
    if not kw:
        kw["src_scales"] = _values(rng, dims, "scale", None)
    kw["at_execute"] = bool(rng.random() < 0.25)
    return kw


def _divisors(n):
    return [g for g in range(1, n + 1) if n % g == 0]


def _nibble_tile_case(rng, seed, index, ndims):
    """A 4-bit bit copy whose innermost dim moves (a transpose), both moved
    dims multiples of 32 (now and then of 16 only), the others small:
    tiles of 32-128 nibbles serve it on the CPU strategy, where windows and
    strides leave its rows on words."""
    tags = _related_tags(rng, ndims)
    while len(tags) < 3:
        tags = _related_tags(rng, ndims)
    dims = [int(rng.integers(1, 4)) for _ in range(ndims)]
    sizes = [32, 64, 96, 128] if rng.random() < 0.85 else [16, 48, 80]
    size = int(rng.choice(sizes))  # most often both: a tile as wide as they are
    for d in tags[2]:
        dims[d] = size if rng.random() < 0.6 else int(rng.choice(sizes))
    dims = tuple(dims)
    dt = str(rng.choice(NIBBLES))
    tags = tags[:2] if rng.random() < 0.5 else tags[1::-1]
    src, dst = (_layout(rng, dims, ndims, tag, dressed=0.3) for tag in tags)
    return Case(seed, index, "reorder", dims, dt, dt, src, dst)


def make_case(seed, index):
    """Problem `index` of the sweep of `seed`: drawn from its own generator."""
    rng = np.random.default_rng((seed, index))
    for _ in range(100):
        case = _draw(rng, seed, index)
        dims = case.dims
        types = [case.sdt, case.ddt]
        budget = HUGE_BUDGET if math.prod(dims) >= 100_000 else \
            BIG_BUDGET if max(dims) >= 24 else BUDGET
        if any(t in NIBBLES for t in types):
            # (a nibble tile's bit copy: whole tiles need more)
            budget = min(budget, TILE_BUDGET if case.sdt == case.ddt and sum(
                n % 16 == 0 for n in dims) >= 2 and max(dims) >= 32 else NIBBLE_BUDGET)
        if all(layout_elems(dims, lay) <= budget for lay in (case.src, case.dst_layout)):
            return case
    raise AssertionError(f"no problem within the budget for seed {seed}, index {index}")


def _draw(rng, seed, index):
    ndims = int(rng.choice([1, 2, 3, 4, 5, 6], p=[0.08, 0.2, 0.24, 0.24, 0.14, 0.1]))
    r = rng.random()
    big = "huge" if r < 0.05 else r < 0.19
    if rng.random() < 0.25:  # a shuffle: same type, an axis whose size has divisors
        dims = list(_dims(rng, ndims, big))
        axis = int(rng.integers(ndims))
        if dims[axis] != 0:
            dims[axis] = int(rng.choice([4, 6, 8, 12, 16, 18, 24, 30, 32, 48, 64]))
        dims = tuple(dims)
        group = int(rng.choice(_divisors(dims[axis]))) if dims[axis] else 1
        dt = str(rng.choice(TYPES))
        src = _layout(rng, dims, ndims)
        # dst_md=None: the source's own layout (a window's would be dense: not drawn)
        same = src.parent is None and rng.random() < 0.35
        dst = None if same else _layout(rng, dims, ndims)
        return Case(seed, index, "shuffle", dims, dt, dt, src, dst,
                    shuffle=(axis, group, bool(rng.random() < 0.5)))
    if rng.random() < 0.03:  # the CPU strategy's nibble tiles: two dims in words of 32
        return _nibble_tile_case(rng, seed, index, max(ndims, 2))
    dims = _dims(rng, ndims, big)
    types = CORE if rng.random() < 0.4 else TYPES  # the common ones more often
    sdt, ddt = str(rng.choice(types)), str(rng.choice(types))
    if rng.random() < 0.15:
        ddt = sdt  # layout changes alone: bit copies
    if rng.random() < 0.5 or 0 in dims:
        src, dst = _layout(rng, dims, ndims), _layout(rng, dims, ndims)
    else:  # layouts the kernels pair up: vectors, register and local transposes
        tags = _related_tags(rng, ndims)
        dims = _friendly(rng, dims, tags[2] if len(tags) > 2 else ())
        tags = tags[:2] if rng.random() < 0.5 else tags[1::-1]
        src, dst = (_layout(rng, dims, ndims, tag, dressed=0.25) for tag in tags)
    return Case(seed, index, "reorder", dims, sdt, ddt, src, dst,
                **_attributes(rng, dims, sdt, ddt))
