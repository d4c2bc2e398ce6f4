"""Runtime dims (issue 13): a Reorder or Shuffle created on descriptors with
RUNTIME_DIM builds one kernel at creation and runs on memories of any shape
that fills them, with no build after; 4-bit destinations and the host engine run
per shape without a build. Expected values come from tests/reference.py:
memories are filled with its bytes and read back with raw()."""
import math
import threading

import numpy as np
import pytest

import clayout as cly
from conftest import DEVICE_IMPL
from clayout.gpu.runtime_plan import magic
from reference import (NP, Blocking, assert_bytes, assert_padding_nibbles_zero,
                       assert_padding_zero, assert_same, blocked_offsets, blocking,
                       element_offsets, get_nibbles, is_int, logical_of, nibble_codes,
                       per_slice, physical_size, raw_of, raw_of_packed, random_bits,
                       ref_reorder, ref_shuffle, sample_values, to_f4_e2m1, to_int)

R = cly.RUNTIME_DIM
GUARD = 64  # bytes after each destination that no write may reach
FILL = 0xA5


def source(engine, dims, dt, tag, values, pad_byte=0x5A):
    """A concrete source memory holding the reference's bytes of `values`
    (padding holds garbage: it is never data)."""
    md = cly.MemoryDesc(dims, dt, tag=tag)
    return cly.Memory(md, engine, raw=raw_of(values, tag, dt, pad_byte))


def destination(engine, md, byte=FILL):
    """A memory of md whose bytes, and GUARD more after them, are `byte`."""
    return cly.Memory(md, engine, raw=np.full(md.size + GUARD, byte, np.uint8))


def values_for(sdt, ddt, dims, rng):
    """Arbitrary bits for a copy, the reference's sample values for a conversion."""
    return random_bits(sdt, dims, rng) if sdt == ddt else sample_values(sdt, dims, rng)


def check_reorder(dst, dims, tag, ddt, want, src=None, pre=None, what=""):
    """dst holds want in layout tag, zeros in its padding, and its guard bytes."""
    raw = dst.raw()
    size = raw.size - GUARD
    assert_same(logical_of(raw[:size], dims, tag, ddt), want, src=src, pre=pre,
                quantized=is_int(ddt) and pre is not None, any_nan=True, what=what)
    assert_padding_zero(raw[:size], dims, tag, ddt, what=f"{what} padding")
    assert_bytes(raw[size:], np.full(GUARD, FILL, np.uint8), what=f"{what} bytes after dst")


def strategy_engine(request, strategy):
    return request.getfixturevalue(f"{strategy}_engine")


STRATEGIES = ["cpu", "gpu"]


# =============================================================================
# 1. One primitive, 50 shapes, no build after creation
# =============================================================================

@pytest.mark.parametrize("strategy", STRATEGIES)
def test_one_primitive_runs_50_shapes_without_a_build(request, strategy):
    engine = strategy_engine(request, strategy)
    src_p = cly.MemoryDesc((R, 16, R, R), "f32", tag="nchw")
    dst_p = cly.MemoryDesc((R, 16, R, R), "f32", tag="nChw16c")
    r = cly.Reorder(src_p, dst_p, engine=engine)
    assert r.impl == DEVICE_IMPL + "runtime"
    rng = np.random.default_rng(50)
    shapes = set()
    while len(shapes) < 50:
        shapes.add((int(rng.integers(1, 4)), 16, int(rng.integers(1, 10)),
                    int(rng.integers(1, 26))))
    builds = cly.kernel_cache.builds
    stream = cly.Stream(engine)
    runs = []
    for dims in sorted(shapes):
        values = random_bits("f32", dims, rng)
        src = source(engine, dims, "f32", "nchw", values)
        dst = destination(engine, cly.MemoryDesc(dims, "f32", tag="nChw16c"))
        r.execute(stream, src, dst)
        runs.append((dims, values, dst))
    stream.wait()
    assert cly.kernel_cache.builds == builds, \
        f"{cly.kernel_cache.builds - builds} builds after creation over 50 shapes"
    for dims, values, dst in runs:
        check_reorder(dst, dims, "nChw16c", "f32", values, what=f"{dims}")


# =============================================================================
# 2. Layouts x types x runtime masks, both strategies
# =============================================================================

#: (src tag, dst tag, pattern dims, src type, dst type, shapes that fill it)
LAYOUT_CASES = [
    # plain 4-D; odd W and C: the tails of the CPU strategy's register transposes
    ("abcd", "acdb", (R, 19, R, R), "f32", "f32", [(2, 19, 3, 7), (1, 19, 2, 9), (1, 19, 1, 17)]),
    ("abcd", "acdb", (R, R, R, R), "f32", "f32", [(2, 19, 3, 7), (1, 9, 2, 17), (3, 1, 1, 1)]),
    ("abcd", "acdb", (R, R, R, R), "f32", "bf16", [(1, 19, 3, 9), (2, 8, 1, 16)]),
    ("abcd", "cdba", (R, 5, R, R), "bf16", "f32", [(3, 5, 4, 2), (1, 5, 1, 9)]),
    ("acdb", "abcd", (R, R, 7, R), "s8", "f32", [(2, 19, 7, 3), (1, 1, 7, 1)]),
    # blocked
    ("abcd", "aBcd16b", (R, R, R, R), "f32", "f32", [(2, 19, 3, 7), (1, 16, 2, 9), (1, 33, 1, 17)]),
    ("abcd", "aBcd16b", (R, 19, R, R), "f32", "f16", [(2, 19, 3, 7), (1, 19, 1, 17)]),
    ("aBcd8b", "aBcd16b", (R, R, R, R), "f16", "f32", [(2, 19, 3, 5), (1, 8, 1, 1)]),
    ("aBcd16b", "acdb", (R, 19, R, R), "u8", "s32", [(2, 19, 3, 7), (1, 19, 1, 1)]),
    ("abcd", "ABcd16a16b", (R, R, 3, 3), "f32", "s8",
     [(17, 19, 3, 3), (16, 16, 3, 3), (1, 1, 3, 3)]),
    ("OIhw4i16o4i", "abcd", (R, R, R, R), "s8", "s8", [(17, 19, 3, 3), (16, 16, 1, 1)]),
    ("ABcd16a16b", "OIhw4i16o4i", (R, R, 2, 2), "u8", "u8", [(20, 17, 2, 2), (1, 3, 2, 2)]),
    # 1-D .. 6-D
    ("a", "a", (R,), "f32", "bf16", [(1,), (7,), (100,)]),
    ("a", "A8a", (R,), "s32", "s32", [(1,), (13,)]),
    ("ab", "ba", (R, R), "s32", "s8", [(7, 9), (1, 17), (33, 1)]),
    ("abc", "acb", (5, R, R), "u8", "f32", [(5, 3, 9), (5, 1, 1)]),
    ("abc", "aBc16b", (R, R, R), "f32", "f32", [(2, 19, 3), (1, 1, 1)]),
    ("abcde", "acdeb", (R, R, R, R, R), "f32", "f32", [(2, 3, 4, 5, 6), (1, 19, 1, 2, 9)]),
    ("abcde", "aBcde16b", (R, 19, R, 2, R), "bf16", "bf16", [(2, 19, 3, 2, 5), (1, 19, 1, 2, 1)]),
    ("abcdef", "fedcba", (R, 2, R, 3, R, 2), "f16", "f16",
     [(2, 2, 3, 3, 1, 2), (1, 2, 1, 3, 5, 2)]),
    ("abcdef", "acdefb", (R, R, R, R, R, R), "s8", "u8", [(2, 3, 1, 2, 3, 5), (1, 1, 1, 1, 1, 1)]),
]


def _case_id(case):
    stag, dtag, dims, sdt, ddt, _ = case
    shown = "x".join("R" if n == R else str(n) for n in dims)
    return f"{stag}-{dtag}-{shown}-{sdt}-{ddt}"


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("case", LAYOUT_CASES, ids=_case_id)
def test_layouts_types_and_masks(request, strategy, case):
    engine = strategy_engine(request, strategy)
    stag, dtag, pattern, sdt, ddt, shapes = case
    r = cly.Reorder(cly.MemoryDesc(pattern, sdt, tag=stag), cly.MemoryDesc(pattern, ddt, tag=dtag),
                    engine=engine)
    assert r.impl == DEVICE_IMPL + "runtime"
    builds = cly.kernel_cache.builds
    rng = np.random.default_rng(len(shapes))
    stream = cly.Stream(engine)
    for dims in shapes:
        values = values_for(sdt, ddt, dims, rng)
        src = source(engine, dims, sdt, stag, values)
        dst = destination(engine, cly.MemoryDesc(dims, ddt, tag=dtag))
        r.execute(stream, src, dst)
        stream.wait()
        want, pre = ref_reorder(values, sdt, ddt)
        check_reorder(dst, dims, dtag, ddt, want, src=values, pre=pre, what=f"{dims}")
    assert cly.kernel_cache.builds == builds


def test_the_cpu_strategy_uses_its_register_transposes_here(cpu_engine):
    # So the W=7/9/17 and C=19 shapes above reach the transposes' tails.
    for dtag in ("acdb", "aBcd16b"):
        r = cly.Reorder(cly.MemoryDesc((R, R, R, R), "f32", tag="abcd"),
                        cly.MemoryDesc((R, R, R, R), "f32", tag=dtag), engine=cpu_engine)
        assert r._implementation.plan.block > 1, f"nchw -> {dtag}: no register transpose"


TYPE_PAIRS = [("f32", "bf16"), ("bf16", "f32"), ("f32", "f16"), ("f16", "bf16"), ("f32", "s8"),
              ("s8", "u8"), ("u8", "s32"), ("s32", "f32"), ("f32", "u8"), ("s32", "bf16"),
              ("f16", "s8"), ("bf16", "bf16")]


@pytest.mark.parametrize("sdt, ddt", TYPE_PAIRS)
def test_type_conversions(cl_engine, sdt, ddt):
    """Under the strategy CLAYOUT_STRATEGY picks (the file runs under both)."""
    rng = np.random.default_rng(7)
    r = cly.Reorder(cly.MemoryDesc((R, 19, R, R), sdt, tag="nchw"),
                    cly.MemoryDesc((R, 19, R, R), ddt, tag="nChw16c"), engine=cl_engine)
    stream = cly.Stream(cl_engine)
    for dims in [(2, 19, 3, 7), (1, 19, 5, 1)]:
        values = values_for(sdt, ddt, dims, rng)
        src = source(cl_engine, dims, sdt, "nchw", values)
        dst = destination(cl_engine, cly.MemoryDesc(dims, ddt, tag="nChw16c"))
        r.execute(stream, src, dst)
        stream.wait()
        want, pre = ref_reorder(values, sdt, ddt)
        check_reorder(dst, dims, "nChw16c", ddt, want, src=values, pre=pre, what=f"{dims}")


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("dims", [(0, 19, 3, 5), (2, 19, 0, 5), (0, 19, 0, 0)])
def test_zero_size_shapes_are_a_no_op(request, strategy, dims):
    engine = strategy_engine(request, strategy)
    r = cly.Reorder(cly.MemoryDesc((R, 19, R, R), "f32", tag="nchw"),
                    cly.MemoryDesc((R, 19, R, R), "f32", tag="nChw16c"), engine=engine)
    builds = cly.kernel_cache.builds
    src = cly.Memory(cly.MemoryDesc(dims, "f32", tag="nchw"), engine,
                     raw=np.full(GUARD, 0x11, np.uint8))
    dst = destination(engine, cly.MemoryDesc(dims, "f32", tag="nChw16c"))
    event = r.execute(cly.Stream(engine), src, dst)
    assert event is not None
    event.wait()
    assert_bytes(dst.raw(), np.full(GUARD, FILL, np.uint8), what=f"{dims}: bytes of dst")
    assert cly.kernel_cache.builds == builds


# -- attributes: per-channel scales (channels fixed), zero points, sum --------

ATTR_SHAPES = [(2, 19, 3, 5), (1, 19, 1, 9)]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("kind", ["scales", "zero_point", "sum", "all"])
def test_f32_to_s8_with_attributes(request, strategy, kind):
    engine = strategy_engine(request, strategy)
    rng = np.random.default_rng(3)
    scales = rng.uniform(0.05, 3.0, 19).astype(np.float32)
    kw = {}
    if kind in ("scales", "all"):
        kw["src_scales"] = cly.Scales(scales, mask=0b10)
    if kind in ("zero_point", "all"):
        kw["dst_zero_points"] = -3
    if kind in ("sum", "all"):
        kw["sum_beta"] = 0.5
    r = cly.Reorder(cly.MemoryDesc((R, 19, R, R), "f32", tag="nchw"),
                    cly.MemoryDesc((R, 19, R, R), "s8", tag="nChw16c"), engine=engine,
                    attr=cly.Attr(**kw))
    assert r.impl == DEVICE_IMPL + "runtime"
    stream = cly.Stream(engine)
    for dims in ATTR_SHAPES:
        values = (rng.normal(0, 60, dims)).astype(np.float32)
        values.reshape(-1)[:4] = [np.nan, np.inf, -np.inf, 126.5]
        old = rng.integers(-128, 128, dims).astype(np.int8)
        src = source(engine, dims, "f32", "nchw", values)
        dst = cly.Memory(cly.MemoryDesc(dims, "s8", tag="nChw16c"), engine,
                         raw=np.concatenate([raw_of(old, "nChw16c", "s8", pad_byte=0x7F),
                                             np.full(GUARD, FILL, np.uint8)]))
        r.execute(stream, src, dst)
        stream.wait()
        want, pre = ref_reorder(
            values, "f32", "s8",
            src_scale=per_slice(scales, 0b10, dims) if "src_scales" in kw else None,
            dst_zp=np.int32(-3) if "dst_zero_points" in kw else None,
            beta=kw.get("sum_beta"), old=old if "sum_beta" in kw else None)
        check_reorder(dst, dims, "nChw16c", "s8", want, src=values, pre=pre, what=f"{dims}")


def test_s8_source_zero_points_per_channel_and_dst_scale(cl_engine):
    rng = np.random.default_rng(4)
    zps = rng.integers(-20, 20, 6).astype(np.int32)
    attr = cly.Attr(src_zero_points=cly.ZeroPoints(zps, mask=0b10), dst_scales=2.0)
    r = cly.Reorder(cly.MemoryDesc((R, 6, R), "s8", tag="abc"),
                    cly.MemoryDesc((R, 6, R), "f32", tag="acb"), engine=cl_engine, attr=attr)
    stream = cly.Stream(cl_engine)
    for dims in [(3, 6, 5), (1, 6, 1)]:
        values = sample_values("s8", dims, rng)
        src = source(cl_engine, dims, "s8", "abc", values)
        dst = destination(cl_engine, cly.MemoryDesc(dims, "f32", tag="acb"))
        r.execute(stream, src, dst)
        stream.wait()
        want, pre = ref_reorder(values, "s8", "f32", src_zp=per_slice(zps, 0b10, dims),
                                dst_scale=np.float32(2.0))
        check_reorder(dst, dims, "acb", "f32", want, src=values, pre=pre, what=f"{dims}")


# =============================================================================
# 3. Runtime strides: gaps between strides are never written
# =============================================================================

def strided_expectation(nbytes, dims, strides, inner_blks, inner_idxs, values, dt):
    """The bytes a destination of `dims`, outer `strides` and inner blocks
    must hold after the reorder: the values at their elements, zeros in the
    padding, FILL everywhere else (gaps and the guard)."""
    item = np.dtype(NP[dt]).itemsize
    block = [math.prod(b for b, d in zip(inner_blks, inner_idxs) if d == k)
             for k in range(len(dims))]
    padded = tuple(-(-n // b) * b for n, b in zip(dims, block))
    desc = Blocking(padded, tuple(strides), tuple(inner_blks), tuple(inner_idxs))
    want = np.full(nbytes, FILL, np.uint8)
    typed = want[: nbytes // item * item].view(NP[dt])
    if math.prod(dims):
        pad = blocked_offsets(np.indices(padded), desc).reshape(-1)
        typed.view(np.uint8).reshape(-1, item)[pad] = 0
        where = blocked_offsets(np.indices(dims), desc)
        typed[where.reshape(-1)] = np.asarray(values, NP[dt]).reshape(-1)
    return want


def strided_source(engine, dims, strides, values, dt):
    """A source memory of plain `dims` and `strides` (gaps allowed) holding
    `values` at the reference's offsets; gaps hold garbage."""
    md = cly.MemoryDesc(dims, dt, strides=strides)
    item = np.dtype(NP[dt]).itemsize
    raw = np.full(md.size, 0x5A, np.uint8)
    offsets = element_offsets(dims, strides=strides).reshape(-1)
    raw[: raw.size // item * item].view(NP[dt])[offsets] = np.asarray(values).reshape(-1)
    return cly.Memory(md, engine, raw=raw)


#: (pattern dims, pattern strides, [(dims, strides) of the memories])
STRIDED = [
    ((R, R, 6), (R, R, 1), [((3, 4, 6), (40, 8, 1)), ((1, 2, 6), (100, 7, 1)),
                            ((2, 1, 6), (6, 6, 1))]),
    ((3, R), (R, 1), [((3, 5), (9, 1)), ((3, 1), (1, 1))]),
    ((R, 4), (8, 1), [((5, 4), (8, 1)), ((1, 4), (8, 1))]),
    ((R, R), (1, R), [((5, 3), (1, 7)), ((9, 2), (1, 9))]),    # column-major with gaps
]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("pattern, pstrides, memories", STRIDED)
@pytest.mark.parametrize("direction", ["into", "from"])
def test_runtime_strides_leave_gaps_untouched(request, strategy, pattern, pstrides, memories,
                                              direction):
    engine = strategy_engine(request, strategy)
    strided_p = cly.MemoryDesc(pattern, "f32", strides=pstrides)
    dense_p = cly.MemoryDesc(pattern, "f32")
    src_p, dst_p = (dense_p, strided_p) if direction == "into" else (strided_p, dense_p)
    r = cly.Reorder(src_p, dst_p, engine=engine)
    assert r.impl == DEVICE_IMPL + "runtime"
    builds = cly.kernel_cache.builds
    rng = np.random.default_rng(11)
    stream = cly.Stream(engine)
    for dims, strides in memories:
        values = random_bits("f32", dims, rng)
        strided_md = cly.MemoryDesc(dims, "f32", strides=strides)
        plain = "abcdef"[:len(dims)]
        if direction == "into":
            src = source(engine, dims, "f32", plain, values)
            dst = destination(engine, strided_md)
            r.execute(stream, src, dst)
            stream.wait()
            want = strided_expectation(strided_md.size + GUARD, dims, strides, (), (),
                                          values, "f32")
            assert_bytes(dst.raw(), want, what=f"{dims} strides {strides}")
        else:
            src = strided_source(engine, dims, strides, values, "f32")
            dst = destination(engine, cly.MemoryDesc(dims, "f32", tag=plain))
            r.execute(stream, src, dst)
            stream.wait()
            check_reorder(dst, dims, plain, "f32", values, what=f"{dims} strides {strides}")
    assert cly.kernel_cache.builds == builds


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_blocked_runtime_strides_with_gaps_and_padding(request, strategy):
    engine = strategy_engine(request, strategy)
    pattern = cly.MemoryDesc((R, 20, R, R), "f32", tag="nChw16c", strides=(R, R, R, 16))
    r = cly.Reorder(cly.MemoryDesc((R, 20, R, R), "f32", tag="nchw"), pattern, engine=engine)
    assert r.impl == DEVICE_IMPL + "runtime"
    rng = np.random.default_rng(12)
    stream = cly.Stream(engine)
    for dims, strides in [((2, 20, 3, 5), (1000, 400, 112, 16)), ((1, 20, 1, 1), (64, 32, 16, 16))]:
        values = random_bits("f32", dims, rng)
        md = cly.MemoryDesc(dims, "f32", tag="nChw16c", strides=strides)
        src = source(engine, dims, "f32", "nchw", values)
        dst = destination(engine, md)
        r.execute(stream, src, dst)
        stream.wait()
        want = strided_expectation(md.size + GUARD, dims, strides, (16,), (1,), values, "f32")
        assert_bytes(dst.raw(), want, what=f"{dims} strides {strides}")


def test_one_strided_pattern_on_both_sides_with_different_strides(cl_engine):
    pattern = cly.MemoryDesc((R, R, 6), "f32", strides=(R, R, 1))
    r = cly.Reorder(pattern, pattern, engine=cl_engine)
    rng = np.random.default_rng(14)
    stream = cly.Stream(cl_engine)
    # The same strides both sides (a copy that must skip the gaps), then others.
    for dims, s_strides, d_strides in [((3, 4, 6), (40, 8, 1), (40, 8, 1)),
                                       ((3, 4, 6), (40, 8, 1), (24, 6, 1)),
                                       ((2, 3, 6), (18, 6, 1), (7, 50, 1))]:
        values = random_bits("f32", dims, rng)
        src = strided_source(cl_engine, dims, s_strides, values, "f32")
        dst_md = cly.MemoryDesc(dims, "f32", strides=d_strides)
        dst = destination(cl_engine, dst_md)
        r.execute(stream, src, dst)
        stream.wait()
        want = strided_expectation(dst_md.size + GUARD, dims, d_strides, (), (), values, "f32")
        assert_bytes(dst.raw(), want, what=f"{dims} strides {s_strides} -> {d_strides}")


@pytest.mark.opencl_only
def test_a_destination_with_an_offset_in_a_shared_buffer(cl_engine):
    import pyopencl.array as cl_array

    r = cly.Reorder(cly.MemoryDesc((R, 4), "f32", tag="ba"),
                    cly.MemoryDesc((R, 4), "f32", strides=(4, 1)), engine=cl_engine)
    whole = cl_array.to_device(cl_engine.queue, np.full(40, 7.0, np.float32))
    for start, rows in [(8, 3), (20, 2)]:
        view = whole[start:start + 4 * rows].reshape(rows, 4)
        md = cly.MemoryDesc.from_array(view)
        values = random_bits("f32", (rows, 4), np.random.default_rng(start))
        src = source(cl_engine, (rows, 4), "f32", "ba", values)
        stream = cly.Stream(cl_engine)
        r.execute(stream, src, cly.Memory(md, cl_engine, buffer=view))
        stream.wait()
        want = np.full(40, 7.0, np.float32)
        want[start:start + 4 * rows] = values.reshape(-1)
        assert_bytes(whole.get(), want, what=f"rows {rows} at element {start}")
        whole.fill(7.0)


def test_with_dims_gives_the_dense_descriptor_of_the_tag():
    pattern = cly.MemoryDesc((R, 19, R, R), "bf16", tag="nChw16c")
    md = pattern.with_dims((2, 19, 3, 5))
    want = blocking((2, 19, 3, 5), "nChw16c")
    assert (md.dims, md.data_type, md.padded_dims, md.strides, md.inner_blks, md.inner_idxs) == \
        ((2, 19, 3, 5), "bf16", want.padded_dims, want.strides, want.inner_blks, want.inner_idxs)
    strided = cly.MemoryDesc((R, R, 6), "f32", strides=(R, R, 1))
    assert strided.with_dims((3, 4, 6), strides=(40, 8, 1)).strides == (40, 8, 1)


# =============================================================================
# 4. Shuffle with runtime N, H, W
# =============================================================================

SHUFFLE_CASES = [  # (src tag, dst tag or None, channels, group, type)
    ("nchw", None, 24, 3, "f32"),
    ("nhwc", None, 24, 4, "bf16"),
    ("nChw8c", None, 24, 3, "s8"),
    ("nChw16c", None, 24, 4, "f32"),    # C padded to 32
    ("nchw", "nhwc", 12, 2, "f16"),
    ("nhwc", "nChw16c", 20, 5, "u8"),
]


@pytest.mark.parametrize("backward", [False, True], ids=["fwd", "bwd"])
@pytest.mark.parametrize("stag, dtag, channels, group, dt", SHUFFLE_CASES)
def test_shuffle_with_runtime_spatial_and_batch(cl_engine, stag, dtag, channels, group, dt,
                                                backward):
    pattern = (R, channels, R, R)
    src_p = cly.MemoryDesc(pattern, dt, tag=stag)
    dst_p = None if dtag is None else cly.MemoryDesc(pattern, dt, tag=dtag)
    sh = cly.Shuffle(src_p, 1, group, backward=backward, engine=cl_engine, dst_md=dst_p)
    assert sh.impl == DEVICE_IMPL + "runtime"
    dtag = dtag or stag
    builds = cly.kernel_cache.builds
    rng = np.random.default_rng(channels)
    stream = cly.Stream(cl_engine)
    for dims in [(2, channels, 3, 5), (1, channels, 1, 7), (3, channels, 2, 1)]:
        values = random_bits(dt, dims, rng)
        src = source(cl_engine, dims, dt, stag, values)
        dst = destination(cl_engine, cly.MemoryDesc(dims, dt, tag=dtag))
        sh.execute(stream, src, dst)
        stream.wait()
        check_reorder(dst, dims, dtag, dt, ref_shuffle(values, 1, group, backward),
                      what=f"{dims}")
    assert cly.kernel_cache.builds == builds


def test_shuffle_on_a_fixed_spatial_axis(cl_engine):
    sh = cly.Shuffle(cly.MemoryDesc((R, R, 6, R), "f32", tag="nhwc"), 2, 2, engine=cl_engine)
    rng = np.random.default_rng(5)
    stream = cly.Stream(cl_engine)
    for dims in [(2, 3, 6, 5), (1, 1, 6, 1)]:
        values = random_bits("f32", dims, rng)
        dst = destination(cl_engine, cly.MemoryDesc(dims, "f32", tag="nhwc"))
        sh.execute(stream, source(cl_engine, dims, "f32", "nhwc", values), dst)
        stream.wait()
        check_reorder(dst, dims, "nhwc", "f32", ref_shuffle(values, 2, 2), what=f"{dims}")


# =============================================================================
# 5. The host engine, and 4-bit types (destinations on the host path) per shape
# =============================================================================

def test_host_engine_runs_each_shape(host_engine):
    builds = cly.kernel_cache.builds
    r = cly.Reorder(cly.MemoryDesc((R, R, R, R), "f32", tag="nchw"),
                    cly.MemoryDesc((R, R, R, R), "bf16", tag="nChw16c"), engine=host_engine)
    sh = cly.Shuffle(cly.MemoryDesc((R, 12, R, R), "s8", tag="nhwc"), 1, 3, engine=host_engine)
    assert r.impl.startswith("host:") and sh.impl.startswith("host:")
    stream = cly.Stream(host_engine)
    rng = np.random.default_rng(6)
    for dims in [(2, 19, 3, 5), (1, 1, 1, 1), (3, 16, 2, 7)]:
        values = sample_values("f32", dims, rng)
        dst = destination(host_engine, cly.MemoryDesc(dims, "bf16", tag="nChw16c"))
        event = r.execute(stream, source(host_engine, dims, "f32", "nchw", values), dst)
        assert event.is_complete  # the host engine's work is done on return
        want, pre = ref_reorder(values, "f32", "bf16")
        check_reorder(dst, dims, "nChw16c", "bf16", want, src=values, pre=pre, what=f"{dims}")
        sdims = (dims[0], 12) + dims[2:]
        svalues = random_bits("s8", sdims, rng)
        sdst = destination(host_engine, cly.MemoryDesc(sdims, "s8", tag="nhwc"))
        sh.execute(stream, source(host_engine, sdims, "s8", "nhwc", svalues), sdst)
        check_reorder(sdst, sdims, "nhwc", "s8", ref_shuffle(svalues, 1, 3), what=f"{sdims}")
    assert cly.kernel_cache.builds == builds


NIBBLE_CASES = [  # (src type, src tag, dst type, dst tag)
    ("f32", "nchw", "s4", "nhwc"),
    ("s4", "nchw", "f32", "nChw16c"),
    ("u4", "nchw", "u4", "nChw16c"),
    ("f32", "nhwc", "f4_e2m1", "nchw"),
]


def _nibble_values(dt, dims, rng):
    if dt == "f32":
        values = (rng.normal(0, 4, dims) * 2).round() / 2
        values.reshape(-1)[:3] = [np.inf, -0.0, np.nan]
        return values.astype(np.float32)
    lo, hi = (-8, 7) if dt == "s4" else (0, 15)
    return rng.integers(lo, hi, dims, endpoint=True).astype(NP[dt])


def _nibble_want(values, sdt, ddt):
    if ddt == "f4_e2m1":
        return to_f4_e2m1(values)
    if ddt in ("s4", "u4"):
        return values if sdt == ddt else to_int(values, ddt, np.float32)
    return np.asarray(values).astype(np.float64).astype(NP[ddt])


@pytest.mark.parametrize("sdt, stag, ddt, dtag", NIBBLE_CASES)
def test_4bit_types_run_every_shape_without_a_build(cl_engine, sdt, stag, ddt, dtag):
    # A context of its own: whatever the host path needs is built for it
    # here, whichever test ran before.
    engine = cly.Engine(cl_engine.kind, device=cl_engine.device)
    pattern = (R, 19, R, R)
    r = cly.Reorder(cly.MemoryDesc(pattern, sdt, tag=stag), cly.MemoryDesc(pattern, ddt, tag=dtag),
                    engine=engine)
    # Creation may build the host path's masked byte write; executions build
    # nothing. The runtime kernel reads 4-bit sources; 4-bit destinations
    # (two elements share a byte) go to the host path.
    builds = cly.kernel_cache.builds
    assert r.impl.startswith("host:numpy (" if ddt in ("s4", "u4", "f4_e2m1")
                             else DEVICE_IMPL + "runtime"), r.impl
    stream = cly.Stream(engine)
    rng = np.random.default_rng(9)
    for dims in [(2, 19, 3, 5), (1, 19, 1, 1), (1, 19, 2, 3)]:
        values = _nibble_values(sdt, dims, rng)
        src_md = cly.MemoryDesc(dims, sdt, tag=stag)
        raw = raw_of_packed(values, stag, sdt, pad_nibble=0xA) if sdt != "f32" \
            else raw_of(values, stag, sdt)
        src = cly.Memory(src_md, engine, raw=raw)
        dst = destination(engine, cly.MemoryDesc(dims, ddt, tag=dtag))
        r.execute(stream, src, dst)
        stream.wait()
        got_raw = dst.raw()
        size = got_raw.size - GUARD
        want = _nibble_want(values, sdt, ddt)
        if ddt == "f32":
            check_reorder(dst, dims, dtag, ddt, want, what=f"{dims}")
            continue
        got = get_nibbles(got_raw[:size], element_offsets(dims, dtag))
        assert np.array_equal(got, nibble_codes(want, ddt)), f"{dims}: {got} vs {want}"
        assert_padding_nibbles_zero(got_raw[:size], dims, dtag, what=f"{dims} padding")
        # The spare nibble of an odd count's last byte is no element's: kept.
        owned = np.zeros(2 * size, bool)
        owned[:physical_size(dims, dtag)] = True
        spare = np.nonzero(~owned)[0]
        assert_bytes(get_nibbles(got_raw, spare), get_nibbles(np.full(size, FILL, np.uint8), spare),
                     what=f"{dims}: spare nibbles")
        assert_bytes(got_raw[size:], np.full(GUARD, FILL, np.uint8), what="bytes after dst")
    assert cly.kernel_cache.builds == builds, \
        f"{cly.kernel_cache.builds - builds} program(s) built after creation"


# =============================================================================
# 6. Errors
# =============================================================================

@pytest.fixture(scope="module")
def nchw16c(cl_engine):
    """One runtime-dims reorder nchw -> nChw16c with C fixed at 16, its engine."""
    return cly.Reorder(cly.MemoryDesc((R, 16, R, R), "f32", tag="nchw"),
                       cly.MemoryDesc((R, 16, R, R), "f32", tag="nChw16c"), engine=cl_engine)


def _good(engine, dims=(2, 16, 3, 5)):
    return (cly.Memory(cly.MemoryDesc(dims, "f32", tag="nchw"), engine),
            cly.Memory(cly.MemoryDesc(dims, "f32", tag="nChw16c"), engine))


@pytest.mark.parametrize("md, rule", [
    (cly.MemoryDesc((2, 16, 3, 5), "f32", tag="nhwc"), "dense in the pattern's tag"),
    (cly.MemoryDesc((2, 16, 3, 5), "bf16", tag="nchw"), "data type"),
    (cly.MemoryDesc((2, 8, 3, 5), "f32", tag="nchw"), "dims must equal"),
    (cly.MemoryDesc((2, 16, 3, 5), "f32", strides=(400, 25, 5, 1)), "dense in the pattern's tag"),
    (cly.MemoryDesc((2, 16, 3, 5), "f32", tag="nChw16c"), "inner blocks"),
    (cly.MemoryDesc((2, 16, 3), "f32", tag="ncw"), "dims count"),
], ids=["tag", "type", "fixed-dim", "gaps", "blocks", "ndims"])
def test_a_memory_that_does_not_fill_the_pattern_is_refused(cl_engine, nchw16c, md, rule):
    _, dst = _good(cl_engine)
    src = cly.Memory(md, cl_engine)
    with pytest.raises(cly.InvalidArgumentError, match=rule) as error:
        nchw16c.execute(cly.Stream(cl_engine), src, dst)
    assert repr(md) in str(error.value)


def test_a_submemory_is_refused(cl_engine, nchw16c):
    parent = cly.Memory(cly.MemoryDesc((4, 16, 3, 5), "f32", tag="nchw"), cl_engine)
    sub_md = parent.md.submemory((2, 16, 3, 5), (1, 0, 0, 0))
    sub = cly.Memory(sub_md, cl_engine, buffer=parent)
    _, dst = _good(cl_engine)
    with pytest.raises(cly.InvalidArgumentError, match="submemor") as error:
        nchw16c.execute(cly.Stream(cl_engine), sub, dst)
    assert repr(sub_md) in str(error.value)


def test_src_and_dst_of_different_dims_are_refused(cl_engine, nchw16c):
    src, _ = _good(cl_engine, (2, 16, 3, 5))
    _, dst = _good(cl_engine, (2, 16, 3, 6))
    before = dst.raw().copy()
    with pytest.raises(cly.InvalidArgumentError, match="differently") as error:
        nchw16c.execute(cly.Stream(cl_engine), src, dst)
    assert repr(src.md) in str(error.value) and repr(dst.md) in str(error.value)
    assert_bytes(dst.raw(), before)


def test_a_pattern_has_no_memory_and_no_size(cl_engine, host_engine):
    pattern = cly.MemoryDesc((R, 16, R, R), "f32", tag="nChw16c")
    assert pattern.is_runtime and not pattern.with_dims((1, 16, 1, 1)).is_runtime
    shown = repr(pattern)
    assert "*" in shown
    for engine in (cl_engine, host_engine):
        with pytest.raises(cly.InvalidArgumentError, match="RUNTIME_DIM") as error:
            cly.Memory(pattern, engine)
        assert shown in str(error.value)
        with pytest.raises(cly.InvalidArgumentError, match="RUNTIME_DIM"):
            cly.Memory(pattern, engine, raw=np.zeros(4096, np.uint8))
    for name, call in [("size", lambda: pattern.size), ("nelems", lambda: pattern.nelems()),
                       ("offset", lambda: pattern.offset((0, 0, 0, 0))),
                       ("submemory", lambda: pattern.submemory((1, 16, 1, 1), (0, 0, 0, 0))),
                       ("reshape", lambda: pattern.reshape((R, 16, R))),
                       ("permute_axes", lambda: pattern.permute_axes((0, 2, 3, 1)))]:
        with pytest.raises(cly.InvalidArgumentError, match=name) as error:
            call()
        assert shown in str(error.value)
    strided = cly.MemoryDesc((3, 4), "f32", strides=(R, 1))
    assert strided.is_runtime
    with pytest.raises(cly.InvalidArgumentError, match="size"):
        strided.size


@pytest.mark.parametrize("name, cls, values, mask, dim", [
    ("src_scales", cly.Scales, np.ones(16, np.float32), 0b10, 1),
    ("dst_scales", cly.Scales, np.ones(2, np.float32), 0b1, 0),
    ("src_zero_points", cly.ZeroPoints, np.zeros(12, np.int32), 0b1100, 2),
    ("dst_zero_points", cly.ZeroPoints, np.zeros(7, np.int32), 0b1000, 3),
])
def test_a_mask_over_a_runtime_dim_is_refused(host_engine, name, cls, values, mask, dim):
    dims = [2, 16, 3, 7]
    dims[dim] = R
    src_dt = "s8" if name == "src_zero_points" else "f32"
    dst_dt = "s8" if name == "dst_zero_points" else "f32"
    attr = cly.Attr(**{name: cls(values, mask=mask)})
    with pytest.raises(cly.InvalidArgumentError,
                       match=f"{name} mask {mask:#b} covers runtime dim {dim}"):
        cly.Reorder(cly.MemoryDesc(dims, src_dt, tag="nchw"),
                    cly.MemoryDesc(dims, dst_dt, tag="nhwc"), engine=host_engine, attr=attr)


def test_a_mask_over_fixed_dims_only_is_accepted(host_engine):
    scales = np.arange(1, 17, dtype=np.float32)
    r = cly.Reorder(cly.MemoryDesc((R, 16, R), "f32", tag="abc"),
                    cly.MemoryDesc((R, 16, R), "f32", tag="acb"), engine=host_engine,
                    attr=cly.Attr(src_scales=cly.Scales(scales, mask=0b10)))
    dims = (2, 16, 3)
    values = sample_values("f32", dims, np.random.default_rng(1))
    dst = destination(host_engine, cly.MemoryDesc(dims, "f32", tag="acb"))
    r.execute(cly.Stream(host_engine), source(host_engine, dims, "f32", "abc", values), dst)
    want, pre = ref_reorder(values, "f32", "f32", src_scale=per_slice(scales, 0b10, dims))
    check_reorder(dst, dims, "acb", "f32", want, src=values, pre=pre)


def test_a_runtime_shuffle_axis_is_refused(host_engine):
    md = cly.MemoryDesc((2, R, 3, 3), "f32", tag="nchw")
    with pytest.raises(cly.InvalidArgumentError, match="axis 1 .* runtime dim"):
        cly.Shuffle(md, 1, 2, engine=host_engine)
    with pytest.raises(cly.InvalidArgumentError, match="axis 1 .* runtime dim"):
        cly.Shuffle(md, -3, 2, engine=host_engine)


def test_extra_with_runtime_dims_is_refused():
    extra = cly.Extra(compensation_mask=0b1)
    with pytest.raises(cly.InvalidArgumentError, match="compensation") as error:
        cly.MemoryDesc((R, 16, 3, 3), "s8", tag="OIhw4i16o4i", extra=extra)
    assert repr(extra) in str(error.value)
    with pytest.raises(cly.InvalidArgumentError, match="compensation"):
        cly.MemoryDesc((32, 16, 3, 3), "s8", strides=(R, 9, 3, 1), extra=extra)


def test_a_runtime_side_and_a_concrete_side_are_refused(host_engine):
    with pytest.raises(cly.InvalidArgumentError, match="differ"):
        cly.Reorder(cly.MemoryDesc((R, 16), "f32"), cly.MemoryDesc((2, 16), "f32", tag="ba"),
                    engine=host_engine)


@pytest.mark.parametrize("pattern, dims, strides, rule", [
    (cly.MemoryDesc((R, 16, R, R), "f32", tag="nchw"), (2, 8, 3, 3), None, "do not fill"),
    (cly.MemoryDesc((R, 16, R, R), "f32", tag="nchw"), (2, 16, 3), None, "do not fill"),
    (cly.MemoryDesc((R, 16, R, R), "f32", tag="nchw"), (2, 16, -1, 3), None, "negative"),
    (cly.MemoryDesc((R, 16, R, R), "f32", tag="nchw"), (R, 16, 3, 3), None, "dims"),
    (cly.MemoryDesc((R, R, 6), "f32", strides=(R, R, 1)), (3, 4, 6), None, "strides="),
    (cly.MemoryDesc((R, R, 6), "f32", strides=(R, R, 1)), (3, 4, 6), (48, 12, 2),
     "strides must equal"),
    (cly.MemoryDesc((R, 4), "f32", strides=(8, 1)), (3, 4), (4, 1), "strides must equal"),
], ids=["fixed-dim", "ndims", "negative", "runtime", "no-strides", "fixed-stride", "fixed-stride2"])
def test_with_dims_that_do_not_fill_the_pattern_are_refused(pattern, dims, strides, rule):
    with pytest.raises(cly.InvalidArgumentError, match=rule) as error:
        pattern.with_dims(dims, strides) if strides else pattern.with_dims(dims)
    text = str(error.value)
    shown = ["x".join(map(str, v)) for v in (dims, strides) if v is not None]
    assert any(s in text for s in shown + [str(dims)]), text


# =============================================================================
# 7. Events, queues and threads
# =============================================================================

@pytest.mark.opencl_only
@pytest.mark.parametrize("dt", ["f32", "s4"], ids=["kernel", "host-path"])
def test_execute_does_not_block_on_an_unset_user_event(cl_engine, dt):
    import pyopencl as cl

    r = cly.Reorder(cly.MemoryDesc((R, 16, R, R), "f32", tag="nchw"),
                    cly.MemoryDesc((R, 16, R, R), dt, tag="nhwc"), engine=cl_engine)
    dims = (2, 16, 3, 5)
    values = np.random.default_rng(2).integers(-8, 8, dims).astype(np.float32)
    src = source(cl_engine, dims, "f32", "nchw", values)
    dst_md = cly.MemoryDesc(dims, dt, tag="nhwc")
    dst = destination(cl_engine, dst_md, byte=0)
    gate = cl.UserEvent(cl_engine.context)
    released = threading.Event()

    def release():  # a safety net: a blocking execute returns only after this
        released.set()
        gate.set_status(cl.command_execution_status.COMPLETE)

    timer = threading.Timer(5.0, release)
    timer.start()
    try:
        event = r.execute(cly.Stream(cl_engine), src, dst, wait_for=[gate])
        returned_first = not released.is_set()
        assert isinstance(event, cl.Event)
        assert event.command_execution_status != cl.command_execution_status.COMPLETE
    finally:
        timer.cancel()
        if not released.is_set():
            release()
    assert returned_first, "execute blocked until its wait_for event was set"
    event.wait()
    raw = dst.raw()[:dst_md.size]
    if dt == "f32":
        assert_same(logical_of(raw, dims, "nhwc", "f32"), values)
    else:
        got = get_nibbles(raw, element_offsets(dims, "nhwc"))
        assert np.array_equal(got, nibble_codes(values, "s4"))


@pytest.mark.opencl_only
def test_a_pyopencl_queue_and_threads_sharing_one_primitive(cl_engine):
    import pyopencl as cl

    r = cly.Reorder(cly.MemoryDesc((R, R, R), "f32", tag="abc"),
                    cly.MemoryDesc((R, R, R), "f32", tag="cab"), engine=cl_engine)
    errors, results = [], []
    lock = threading.Lock()

    def worker(t):
        try:
            queue = cl.CommandQueue(cl_engine.context)
            rng = np.random.default_rng(t)
            for i in range(25):
                dims = (1 + (t + i) % 3, 1 + i % 7, 1 + (t * 5 + i) % 11)
                values = random_bits("f32", dims, rng)
                dst = destination(cl_engine, cly.MemoryDesc(dims, "f32", tag="cab"))
                r.execute(queue, source(cl_engine, dims, "f32", "abc", values), dst)
                with lock:
                    results.append((dims, values, dst))
            queue.finish()
        except Exception as error:  # reported below, with the thread
            errors.append((t, error))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(results) == 100
    for dims, values, dst in results:
        check_reorder(dst, dims, "cab", "f32", values, what=f"{dims}")


# =============================================================================
# 8. Magic-number division
# =============================================================================

def _divisors():
    rng = np.random.default_rng(8)
    powers = [2**k + e for k in range(32) for e in (-1, 0, 1) if 1 <= 2**k + e <= 2**31]
    return sorted(set(range(1, 1025)) | set(powers) | {2**31 - 1, 3**19, 7**11, 641, 6700417}
                  | {int(d) for d in rng.integers(1, 2**31, 3000, endpoint=True)}
                  | {int(d) for d in rng.integers(1, 2**16, 500)})


def test_magic_numbers_divide_exactly():
    rng = np.random.default_rng(31)
    top = 2**31 - 1
    for d in _divisors():
        m, s = magic(d)
        assert 0 <= m < 2**32 and 0 <= s <= 32, (d, m, s)
        q = np.array([1, 2, 3, top // d, top // d - 1, max(top // d // 2, 1)], np.int64)
        x = np.concatenate([np.array([0, 1, d - 1, d, top, top - 1], np.int64),
                            q * d, q * d - 1, q * d + d - 1,
                            rng.integers(0, 2**31, 64)])
        x = x[(x >= 0) & (x <= top)].astype(np.uint64)
        hi = (x * np.uint64(m)) >> np.uint64(32)       # mul_hi of two 32-bit values
        total = hi + x
        assert (total < 2**32).all(), f"d={d}: mul_hi(x, m) + x overflows 32 bits"
        got = total >> np.uint64(s)
        want = x // np.uint64(d)
        bad = np.nonzero(got != want)[0]
        assert bad.size == 0, f"d={d} (m={m}, s={s}): x={int(x[bad[0]])} gives " \
                              f"{int(got[bad[0]])}, want {int(want[bad[0]])}"


def test_magic_numbers_on_every_x_for_small_divisors():
    x = np.arange(0, 1 << 18, dtype=np.uint64)
    x = np.concatenate([x, np.uint64(2**31 - 1) - x])
    for d in list(range(1, 70)) + [255, 1000, 4097, 65535, 2**20 + 7]:
        m, s = magic(d)
        got = (((x * np.uint64(m)) >> np.uint64(32)) + x) >> np.uint64(s)
        assert np.array_equal(got, x // np.uint64(d)), d
