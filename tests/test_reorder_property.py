"""Property-based reorder: random shapes, layouts, type pairs and scale
masks; the host path, the OpenCL path and the reference (tests/reference.py)
agree."""
import math

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import clayout as cly
from reference import (CORE, LETTERS, assert_padding_zero, assert_same, is_int, logical_of,
                       per_slice, random_bits, ref_reorder, sample_values)
from reorder_runs import execute, prefilled, src_memory

# =============================================================================
# Property-based: random shapes, layouts and type pairs
# =============================================================================

@st.composite
def layouts(draw, ndims):
    """A permutation of the dims, maybe one of them blocked by 4, 8 or 16."""
    order = draw(st.permutations(range(ndims)))
    blocked = draw(st.sampled_from([None] + list(range(ndims))))
    outer = "".join(LETTERS[d].upper() if d == blocked else LETTERS[d] for d in order)
    if blocked is None:
        return outer
    return outer + f"{draw(st.sampled_from([4, 8, 16]))}{LETTERS[blocked]}"


@st.composite
def reorder_cases(draw):
    ndims = draw(st.integers(1, 4))
    dims = tuple(draw(st.lists(st.integers(1, 6), min_size=ndims, max_size=ndims)))
    if draw(st.booleans()):  # a tail for the blocks
        d = draw(st.integers(0, ndims - 1))
        dims = dims[:d] + (draw(st.integers(7, 20)),) + dims[d + 1:]
    s_tag, d_tag = draw(layouts(ndims)), draw(layouts(ndims))
    sdt, ddt = draw(st.sampled_from(CORE)), draw(st.sampled_from(CORE))
    scale_mask = draw(st.sampled_from([None, None, 0] + [1 << d for d in range(ndims)]))
    return dims, s_tag, d_tag, sdt, ddt, scale_mask, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=reorder_cases())
def test_property_random_layouts_and_types(host_engine, cl_engine, case):
    dims, s_tag, d_tag, sdt, ddt, scale_mask, seed = case
    rng = np.random.default_rng(seed)
    values = sample_values(sdt, dims, rng) if rng.random() < 0.7 else random_bits(sdt, dims, rng)
    scales = attr = None
    if scale_mask is not None:
        count = math.prod(dims[d] for d in range(len(dims)) if scale_mask >> d & 1)
        sc = rng.uniform(0.1, 4, count).astype(np.float32)
        attr = cly.Attr(src_scales=cly.Scales(sc, mask=scale_mask))
        scales = per_slice(sc, scale_mask, dims)
    want, pre = ref_reorder(values, sdt, ddt, src_scale=scales)
    raws = []
    for eng in (host_engine, cl_engine):
        src_md, src = src_memory(eng, dims, sdt, s_tag, values)
        dst_md = cly.MemoryDesc(dims, ddt, tag=d_tag)
        dst = prefilled(dst_md, eng)
        execute(eng, src_md, dst_md, src, dst, attr=attr)
        raw = dst.raw()
        got = logical_of(raw, dims, d_tag, ddt)
        assert_same(got, want, src=values, pre=pre, quantized=attr is not None and is_int(ddt),
                    any_nan=True, what=repr(eng))
        assert_padding_zero(raw, dims, d_tag, ddt, what=f"{eng!r}: padding")
        raws.append(got)
    if attr is None:  # with no attributes the two paths agree exactly
        assert_same(raws[1], raws[0], any_nan=True, what="opencl vs host")
