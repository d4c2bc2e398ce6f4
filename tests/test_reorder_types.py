"""Reorder between every pair of types, plain and blocked, and the s32 bounds,
checked against the independent reference (tests/reference.py)."""
import numpy as np
import pytest

import clayout as cly
from reference import (CORE, S32_MAX_FROM_F32, assert_bytes, assert_padding_zero, assert_same,
                       itemsize, logical_of, physical_size, raw_of, ref_reorder, sample_values)
from reorder_runs import execute, prefilled, src_memory

# =============================================================================
# Every type pair, plain and blocked
# =============================================================================

PAIR_DIMS = (2, 17, 3, 2)


def _blocked_layouts(sdt, ddt):
    """Half the pairs go plain -> blocked, the other half blocked -> plain."""
    if (CORE.index(sdt) + CORE.index(ddt)) % 2:
        return "aBcd8b", "acdb"
    return "abcd", "aBcd16b"


@pytest.mark.parametrize("blocked", [False, True], ids=["plain", "blocked"])
@pytest.mark.parametrize("ddt", CORE)
@pytest.mark.parametrize("sdt", CORE)
def test_every_type_pair(engine, sdt, ddt, blocked):
    stag, dtag = _blocked_layouts(sdt, ddt) if blocked else ("abcd", "abcd")
    values = sample_values(sdt, PAIR_DIMS, np.random.default_rng(1))
    src_md, src = src_memory(engine, PAIR_DIMS, sdt, stag, values)
    dst_md = cly.MemoryDesc(PAIR_DIMS, ddt, tag=dtag)
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    want, _ = ref_reorder(values, sdt, ddt)
    raw = dst.raw()
    assert raw.size == physical_size(PAIR_DIMS, dtag) * itemsize(ddt)
    assert_same(logical_of(raw, PAIR_DIMS, dtag, ddt), want, src=values, any_nan=True)
    if sdt == ddt:  # a bit copy: NaN payloads included
        assert_bytes(raw, raw_of(values, dtag, ddt))
    # The padding is zeros, whatever the source's padding held.
    assert_padding_zero(raw, PAIR_DIMS, dtag, ddt)


# =============================================================================
# s32: exact copies beyond 2^24, the bound when the arithmetic is in f32
# =============================================================================

def test_s32_beyond_2_24_is_copied_exactly(engine):
    values = np.array([[16777217, 2**31 - 1, -2**31, 2147483583, -16777219, 123456789]], np.int32)
    values = np.repeat(values, 3, axis=0)
    src_md, src = src_memory(engine, values.shape, "s32", "ab", values)
    for tag in ("ba", "ab"):
        dst_md = cly.MemoryDesc(values.shape, "s32", tag=tag)
        dst = prefilled(dst_md, engine)
        execute(engine, src_md, dst_md, src, dst)
        assert_bytes(dst.raw(), raw_of(values, tag, "s32"))
    # An empty Attr is no attribute at all: still a copy.
    dst_md = cly.MemoryDesc(values.shape, "s32", tag="ba")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst, attr=cly.Attr())
    assert_bytes(dst.raw(), raw_of(values, "ba", "s32"))


def test_s32_bound_holds_with_scales(engine):
    values = np.array([[2147483520.0, 2147483648.0, np.inf, -np.inf, np.nan, -2147483648.0]],
                      np.float32)
    src_md, src = src_memory(engine, values.shape, "f32", "ab", values)
    dst_md = cly.MemoryDesc(values.shape, "s32", tag="ba")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst, attr=cly.Attr(src_scales=1.0, dst_scales=0.5))
    want = [[S32_MAX_FROM_F32] * 3 + [-2**31, 0, -2**31]]
    assert_same(logical_of(dst.raw(), values.shape, "ba", "s32"), np.array(want, np.int32))
