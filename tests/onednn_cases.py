"""The differential suite's random problems (tests/test_onednn.py), as a
hypothesis strategy: tests/sweep_cases.py's Case, drawn from what oneDNN's
C API can describe too.

* layouts: plain (any order of the dims, by their dense strides), blocked
  (every tag of oneDNN's enum with 1-4 inner blocks of up to 16, weights
  formats among them, its dims relabelled in any order), plain strides with
  gaps, and windows (submemories) of a bigger parent of either;
* types: any pair of the twelve (f64, f32, f16, bf16, f8_e5m2, f8_e4m3, s32,
  s8, u8, s4, u4, f4_e2m1), same-type pairs a layout change;
* attributes: src and dst scales per tensor or per one or two dims, stored
  as f32, f16 or bf16; src and dst zero points on integer sides, per tensor
  or per dim; src scales and zero points in groups on the last two dims
  (weight decompression); a sum post-op;
* source values: the sweep's samples, specials (NaN, +-inf, -0, denormals,
  the types' extremes) and ties of the conversion (tests/sweep_check.py);
* shuffles forward and backward along any axis, any group dividing it,
  into the source's layout or another.

A problem stays within BUDGET elements per buffer (padding and parent
included) so a few hundred run in CI's time.
"""
import math

import numpy as np
from hypothesis import strategies as st

import dnnl
import reference as ref
from sweep_cases import INTS, LETTERS, NIBBLES, TYPES, Case, Layout, Values, layout_elems

BUDGET = 6000


def _canonical_blocked():
    """{ndims: abstract tags of oneDNN's enum with inner blocks of at most
    16 and dims in order (aBcd16b, ABcd4b16a4b...)}: the shapes a relabelling
    turns into any order."""
    out = {}
    for name in dnnl.format_tags():
        try:
            outer, blocks = ref.parse_tag(ref.abstract_tag(name))
        except Exception:  # any, undef, x, abx...: not a tag of fixed dims
            continue
        if blocks and list(outer) == sorted(outer) and max(s for _, s in blocks) <= 16:
            out.setdefault(len(outer), set()).add(ref.abstract_tag(name))
    return {n: sorted(tags) for n, tags in out.items()}


BLOCKED = _canonical_blocked()


def _relabel(tag, order):
    """``tag`` with dim k renamed order[k] (upper case kept)."""
    def letter(ch):
        k = LETTERS.index(ch.lower())
        new = LETTERS[order[k]]
        return new.upper() if ch.isupper() else new
    return "".join(letter(ch) if ch.isalpha() else ch for ch in tag)


@st.composite
def dims_of(draw, ndims):
    sizes = st.one_of(st.just(1), st.integers(2, 9), st.integers(10, 24))
    return tuple(draw(st.lists(sizes, min_size=ndims, max_size=ndims)))


@st.composite
def layouts(draw, dims, shuffle=False):
    """A Layout of ``dims`` oneDNN can describe."""
    ndims = len(dims)
    order = draw(st.permutations(range(ndims)))
    families = ["plain", "strides", "window"] + (["blocked"] if ndims in BLOCKED else [])
    family = draw(st.sampled_from(families + ["blocked"] * 2 if ndims in BLOCKED else families))
    if family == "plain":
        return Layout("".join(LETTERS[d] for d in order))
    if family == "blocked":
        return Layout(_relabel(draw(st.sampled_from(BLOCKED[ndims])), order))
    if family == "strides":
        strides, step = [0] * ndims, 1
        for d in reversed(order):  # innermost first, each with a gap or none
            strides[d] = step + draw(st.sampled_from([0, 0, 1, 3]))
            step = strides[d] * max(1, dims[d])
        return Layout(None, tuple(strides))
    # a window: a plain or blocked parent, offsets on whole blocks
    inner = draw(layouts(dims).filter(lambda lay: lay.parent is None and lay.strides is None))
    blocks = [1] * ndims
    for d, size in ref.parse_tag(ref.abstract_tag(inner.tag))[1]:
        blocks[d] *= size
    offsets = tuple(draw(st.integers(0, 2)) * b for b in blocks)
    # a window that cuts a block must reach the parent's end
    extra = tuple(draw(st.integers(0, 3)) * b if n % b == 0 else 0
                  for n, b in zip(dims, blocks))
    parent = tuple(o + n + e for o, n, e in zip(offsets, dims, extra))
    return Layout(inner.tag, None, parent, offsets)


def _divisors(n):
    return [g for g in range(1, n + 1) if n % g == 0]


@st.composite
def values(draw, dims, kind, dt, grouped=False):
    """Scales (kind "scale", stored as f32, f16 or bf16) or zero points of
    ``dt``'s range, per tensor or per one or two dims; ``grouped``: on the
    last two dims (and maybe others) in groups that divide them."""
    ndims = len(dims)
    groups = None
    if grouped and ndims >= 2 and dims[-1] * dims[-2] > 1:
        groups = (draw(st.sampled_from(_divisors(dims[-2]))),
                  draw(st.sampled_from(_divisors(dims[-1]))))
        masked = {ndims - 2, ndims - 1} | draw(st.sets(st.integers(0, ndims - 1), max_size=1))
    else:
        masked = draw(st.sets(st.integers(0, ndims - 1), max_size=min(2, ndims)))
    mask = sum(1 << d for d in masked)
    group = [1] * (ndims - 2) + list(groups or (1, 1))
    count = math.prod(dims[d] // group[d] for d in masked)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))  # the values themselves
    if kind == "scale":
        style = draw(st.sampled_from(["uniform", "powers of 2", "negative", "thirds"]))
        v = {"uniform": lambda: rng.uniform(0.05, 4.0, count),
             "powers of 2": lambda: 2.0 ** rng.integers(-3, 4, count),
             "negative": lambda: -rng.uniform(0.05, 4.0, count),
             "thirds": lambda: rng.integers(1, 9, count) / 3.0}[style]()
        stored = draw(st.sampled_from([None, None, None, "f16", "bf16"]))
        return Values(mask, tuple(np.float32(v).tolist()), stored, groups)
    lo, hi = {"s4": (-8, 8), "u4": (0, 16), "u8": (0, 40)}.get(dt, (-20, 21))
    return Values(mask, tuple(int(x) for x in rng.integers(lo, hi, count)), None, groups)


@st.composite
def problems(draw):
    """A reorder (4 in 5) or a shuffle within BUDGET, with a seed and index
    for its data (tests/sweep_run.py's Prepared draws the values from them)."""
    seed, index = draw(st.integers(0, 2**31)), draw(st.integers(0, 2**31))
    ndims = draw(st.sampled_from([1, 2, 2, 3, 3, 4, 4, 4, 5]))
    dims = draw(dims_of(ndims))
    if draw(st.integers(0, 4)) == 0:
        axis = draw(st.integers(0, ndims - 1))
        channels = draw(st.sampled_from([4, 6, 8, 12, 16, 18, 24, 32]))
        dims = dims[:axis] + (channels,) + dims[axis + 1:]
        group = draw(st.sampled_from([g for g in range(1, channels + 1) if channels % g == 0]))
        dt = draw(st.sampled_from(TYPES))
        src = draw(layouts(dims))
        dst = src if draw(st.booleans()) else draw(layouts(dims))
        case = Case(seed, index, "shuffle", dims, dt, dt, src, dst,
                    shuffle=(axis, group, draw(st.booleans())))
    else:
        sdt = draw(st.sampled_from(TYPES))
        ddt = sdt if draw(st.integers(0, 5)) == 0 else draw(st.sampled_from(TYPES))
        src, dst = draw(layouts(dims)), draw(layouts(dims))
        kw = {}
        if draw(st.booleans()):
            # grouped src scales and zero points: weight decompression
            grouped = draw(st.integers(0, 3)) == 0
            if draw(st.booleans()):
                kw["src_scales"] = draw(values(dims, "scale", None, grouped))
            if draw(st.integers(0, 2)) == 0:
                kw["dst_scales"] = draw(values(dims, "scale", None))
            if sdt in INTS and draw(st.integers(0, 2)) == 0:
                kw["src_zero_points"] = draw(values(dims, "zp", sdt, grouped))
            if ddt in INTS and draw(st.integers(0, 2)) == 0:
                kw["dst_zero_points"] = draw(values(dims, "zp", ddt))
            if draw(st.integers(0, 2)) == 0:
                kw["sum_beta"] = draw(st.sampled_from([0.5, 1.0, -1.0, 0.25, 2.0]))
        case = Case(seed, index, "reorder", dims, sdt, ddt, src, dst, **kw)
    budget = BUDGET // 2 if {case.sdt, case.ddt} & set(NIBBLES) else BUDGET  # slow reference
    for layout in (case.src, case.dst_layout):
        if layout_elems(case.dims, layout) > budget:
            from hypothesis import reject
            reject()
    return case
