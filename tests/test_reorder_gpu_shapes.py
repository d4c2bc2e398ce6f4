"""Property-based, on shapes big enough for the GPU strategy's vectors
(issue 22): boxes of a warp of 16-byte vectors and more, rows across 3x3,
5x9 and 7x7 planes, channels that fill no block, blocked layouts, every core
type pair, per-tensor and per-dim scales. The OpenCL kernels agree with the
reference (tests/reference.py), bit for bit with no attribute, and padding
stays zero. `make test` runs this file on both strategies (the second time
with CLAYOUT_STRATEGY=gpu, where the plans must be the GPU strategy's)."""
import math
import os

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import clayout as cly
from reference import (CORE, assert_padding_zero, assert_same, is_int, logical_of, per_slice,
                       ref_reorder, sample_values)
from reorder_runs import execute, prefilled, src_memory
from test_reorder_property import layouts

PLANES = [(1, 1), (3, 3), (5, 9), (7, 7), (4, 16), (14, 14)]
CHANNELS = [3, 16, 20, 32, 48, 64, 96]


@st.composite
def gpu_cases(draw):
    n = draw(st.integers(1, 3))
    c = draw(st.sampled_from(CHANNELS))
    h, w = draw(st.sampled_from(PLANES))
    dims = (n, c, h, w)
    s_tag, d_tag = draw(layouts(4)), draw(layouts(4))
    sdt, ddt = draw(st.sampled_from(CORE)), draw(st.sampled_from(CORE))
    scale_mask = draw(st.sampled_from([None, None, 0, 2, 2, 1, 8]))
    return dims, s_tag, d_tag, sdt, ddt, scale_mask, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=gpu_cases())
def test_kernels_on_shapes_the_gpu_vectors_fill(cl_engine, case):
    dims, s_tag, d_tag, sdt, ddt, scale_mask, seed = case
    rng = np.random.default_rng(seed)
    values = sample_values(sdt, dims, rng, specials=False)
    attr = scales = None
    if scale_mask is not None:
        count = math.prod(dims[d] for d in range(4) if scale_mask >> d & 1)
        sc = rng.uniform(0.1, 4, count).astype(np.float32)
        attr = cly.Attr(src_scales=cly.Scales(sc, mask=scale_mask))
        scales = per_slice(sc, scale_mask, dims)
    want, pre = ref_reorder(values, sdt, ddt, src_scale=scales)
    src_md, src = src_memory(cl_engine, dims, sdt, s_tag, values)
    dst_md = cly.MemoryDesc(dims, ddt, tag=d_tag)
    dst = prefilled(dst_md, cl_engine)
    primitive = execute(cl_engine, src_md, dst_md, src, dst, attr=attr)
    plan = getattr(primitive._implementation, "plan", None)  # (a plain copy has none)
    if os.environ.get("CLAYOUT_STRATEGY") == "gpu":
        assert plan is None or plan.strategy == "gpu"
    raw = dst.raw()
    assert_same(logical_of(raw, dims, d_tag, ddt), want, src=values, pre=pre,
                quantized=attr is not None and is_int(ddt), what=f"{case}")
    assert_padding_zero(raw, dims, d_tag, ddt)
