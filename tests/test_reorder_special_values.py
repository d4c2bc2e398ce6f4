"""Reorder of special values: NaN, infinities, saturation, .5 boundaries and
exactness, for each conversion, against hand-written expectations that the
reference (tests/reference.py) must also reproduce."""
import numpy as np
import pytest

import clayout as cly
from conftest import _engine_with_strategy
from reference import NP, S32_MAX_FROM_F32, assert_same, logical_of, ref_reorder
from reorder_runs import execute, prefilled, src_memory

# =============================================================================
# Special values: NaN, infinities, saturation, .5 boundaries, exactness
# =============================================================================

CONVERSIONS = [
    ("f32", "s8", [np.nan, np.inf, -np.inf, 2.5, -3.5, 126.5, 127.5, -128.5, -127.5, 0.5, -0.5,
                   1.5, 1000.0, -1000.0],
     [0, 127, -128, 2, -4, 126, 127, -128, -128, 0, 0, 2, 127, -128]),
    ("f32", "u8", [np.nan, np.inf, -np.inf, 255.5, 254.5, -0.5, 0.5, 1.5, -124.0, 300.0, 2.5],
     [0, 255, 0, 255, 254, 0, 0, 2, 0, 255, 2]),
    ("f32", "s32", [np.nan, np.inf, -np.inf, 2147483520.0, 2147483648.0, 3e9, -2147483648.0,
                    -3e9, 16777217.0, 2.5, -2.5, -7.5],
     [0, S32_MAX_FROM_F32, -2**31, S32_MAX_FROM_F32, S32_MAX_FROM_F32, S32_MAX_FROM_F32,
      -2**31, -2**31, 16777216, 2, -2, -8]),
    ("f16", "s8", [np.nan, np.inf, -np.inf, 127.5, -128.5, 2.5, 3.5, 65504.0],
     [0, 127, -128, 127, -128, 2, 4, 127]),
    ("bf16", "u8", [np.nan, -np.inf, 255.0, 126.5, 127.5, -1.0, 1e30],
     [0, 0, 255, 126, 128, 0, 255]),
    ("f32", "f16", [2049.0, 2051.0, 65519.0, 65520.0, -65520.0, np.nan, 1e-8, 2.0**-25, 3e-8],
     [2048.0, 2052.0, 65504.0, np.inf, -np.inf, np.nan, 0.0, 0.0, 2.0**-24]),
    ("f32", "bf16", [1 + 2.0**-8, 1 + 3 * 2.0**-8, 3.4028235e38, -3.4028235e38, np.nan, 257.0,
                     259.0],
     [1.0, 1 + 2.0**-6, np.inf, -np.inf, np.nan, 256.0, 260.0]),
    ("f16", "bf16", [np.nan, np.inf, 65504.0, 257.0], [np.nan, np.inf, 65536.0, 256.0]),
    ("bf16", "f16", [np.nan, -np.inf, 1e30, 65536.0, 3.0], [np.nan, -np.inf, np.inf, np.inf, 3.0]),
    ("s32", "f32", [16777217, 2**31 - 1, -2**31, -16777219], [16777216.0, 2.0**31, -2.0**31,
                                                                -16777220.0]),
    ("s32", "f16", [65504, 65520, 2**31 - 1, -70000], [65504.0, np.inf, np.inf, -np.inf]),
    ("s32", "bf16", [16777217, 2**31 - 1, 257, 259], [16777216.0, 2.0**31, 256.0, 260.0]),
    ("s32", "s8", [2**31 - 1, -2**31, 300, -300, 16777217, 5], [127, -128, 127, -128, 127, 5]),
    ("s32", "u8", [2**31 - 1, -2**31, 256, -1, 16777217, 255], [255, 0, 255, 0, 255, 255]),
    ("u8", "s8", [200, 255, 0, 127, 128], [127, 127, 0, 127, 127]),
    ("s8", "u8", [-1, -128, 127, 0], [0, 0, 127, 0]),
    ("s8", "s32", [-128, 127, -1], [-128, 127, -1]),
    ("u8", "f16", [255, 0, 1], [255.0, 0.0, 1.0]),
    ("f64", "s32", [2147483647.0, 3e9, -3e9, np.nan, 2.5, 2147483646.5],
     [2**31 - 1, 2**31 - 1, -2**31, 0, 2, 2147483646]),
    ("f64", "bf16", [1 + 2.0**-8 + 2.0**-30, 1 + 2.0**-8, np.nan, 1e300],
     [1 + 2.0**-7, 1.0, np.nan, np.inf]),
    ("f64", "f32", [1 + 2.0**-24 + 2.0**-40, 1e300, -1e300, 1e-300],
     [1 + 2.0**-23, np.inf, -np.inf, 0.0]),
    ("f64", "f16", [65519.99, 65520.0, 2049.0000001], [65504.0, np.inf, 2050.0]),
    ("s32", "f64", [2**31 - 1, 16777217], [2147483647.0, 16777217.0]),
]


@pytest.mark.parametrize("sdt, ddt, values, expected", CONVERSIONS,
                         ids=[f"{c[0]}->{c[1]}" for c in CONVERSIONS])
def test_conversion_of_special_values(engine, sdt, ddt, values, expected):
    # Two rows, the second reversed, so that the values meet different lanes.
    with np.errstate(all="ignore"):
        src_values = np.array([values, values[::-1]], dtype=object).astype(NP[sdt])
        want = np.array([expected, expected[::-1]], dtype=object).astype(NP[ddt])
    assert_same(ref_reorder(src_values, sdt, ddt)[0], want, any_nan=True,
                what="the reference itself")
    dims = src_values.shape
    src_md, src = src_memory(engine, dims, sdt, "ab", src_values)
    dst_md = cly.MemoryDesc(dims, ddt, tag="ba")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    assert_same(logical_of(dst.raw(), dims, "ba", ddt), want, src=src_values, any_nan=True)


def test_nan_survives_scaling_into_floats(engine):
    values = np.array([[np.nan, np.inf, -np.inf, 1.0, 65504.0, -0.0]], np.float32)
    for ddt, want in (("f16", [np.nan, np.inf, -np.inf, 2.0, np.inf, -0.0]),
                      ("bf16", [np.nan, np.inf, -np.inf, 2.0, 131072.0, -0.0])):
        src_md, src = src_memory(engine, values.shape, "f32", "ab", values)
        dst_md = cly.MemoryDesc(values.shape, ddt, tag="ab")
        dst = prefilled(dst_md, engine)
        execute(engine, src_md, dst_md, src, dst, attr=cly.Attr(src_scales=2.0))
        assert_same(logical_of(dst.raw(), values.shape, "ab", ddt),
                    np.array([want], np.float32).astype(NP[ddt]), any_nan=True)


def _f16_boundaries():
    """f32 values at every place f32 -> f16 rounding can go wrong: each f16
    value, each midpoint between neighbours (a tie) and the floats beside
    it, the runs around the subnormals' bottom (2^-25), the smallest normal
    (2^-14), overflow (65520) and the infinities and NaNs; both signs."""
    h = np.arange(0x7c01, dtype=np.uint16).view(np.float16).astype(np.float32)
    mid = ((h[:-1].astype(np.float64) + h[1:]) / 2).astype(np.float32)
    runs = [np.arange(lo, lo + 0x400, dtype=np.uint32).view(np.float32)
            for lo in (0x32fffe00, 0x337ffe00, 0x387ffe00, 0x477ffe00, 0x7f7ffe00, 0x7fbffe00, 0)]
    x = np.concatenate([h, mid, np.nextafter(mid, np.float32(0)),
                        np.nextafter(mid, np.float32(np.inf))] + runs)
    return np.concatenate([x, -x])


@pytest.mark.parametrize("strategy", ["cpu", "gpu"])
def test_f16_stores_round_every_boundary_as_numpy(cl_engine, strategy):
    """Each f16 store rounds to nearest even like NumPy, with subnormals,
    overflow to infinity and NaN: the GPU strategy's typed vectors, encoded
    in integer operations (a striped and a tiled kernel), and the stores by
    vstore_half_rte (the CPU strategy's, and one value at a time where no
    vector width divides the length)."""
    engine = _engine_with_strategy(cl_engine, strategy)
    x = _f16_boundaries()
    n = x.size - x.size % 16
    cases = [(x[:n], "a", "a", True),  # vectors
             (x[:n - 15], "a", "a", False),  # one value at a time
             (x[:n].reshape(1, 16, -1, 128), "nChw16c", "nchw", True)]  # a tiled transpose
    for values, s_tag, d_tag, vectors in cases:
        with np.errstate(all="ignore"):
            want = values.astype(np.float16)
        src_md, src = src_memory(engine, values.shape, "f32", s_tag, values)
        dst_md = cly.MemoryDesc(values.shape, "f16", tag=d_tag)
        dst = prefilled(dst_md, engine)
        primitive = execute(engine, src_md, dst_md, src, dst)
        kernel = primitive._implementation.kernel
        assert kernel.plan.strategy == strategy
        assert ("float_to_f16_x" in kernel.source) == (strategy == "gpu" and vectors)
        assert_same(logical_of(dst.raw(), values.shape, d_tag, "f16"), want, src=values,
                    any_nan=True, what=f"{s_tag}->{d_tag} {values.shape}")
