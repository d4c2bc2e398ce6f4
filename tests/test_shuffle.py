"""Shuffle primitive: results against an independent reference, bit for bit.

The reference (tests/reference.py) is written from the shuffle seed's u/v
formula with explicit loops, and the expected physical buffers come from its
own tag-to-offset calculator (not from clayout.host or Memory.to_numpy), so
that the host path is never checked against itself.
"""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clayout as cly
from conftest import DEVICE_IMPL
from reference import (assert_bytes, assert_padding_zero, assert_same, bits_of, dt_of,
                       element_offsets, itemsize, physical_size, random_bits, raw_of,
                       ref_shuffle)

#: the types a shuffle moves (any bit pattern, NaN payloads included)
TYPES = ["f32", "bf16", "f16", "s32", "s8", "u8"]


# --------------------------------------------------------------------------
# Running the primitive
# --------------------------------------------------------------------------

def run_shuffle(engine, src_md, array, axis, group, backward=False, dst_md=None, fill=0xAB):
    """Create and execute a Shuffle into a destination pre-filled with ``fill``."""
    sh = cly.Shuffle(src_md, axis=axis, group_size=group, backward=backward,
                     engine=engine, dst_md=dst_md)
    src = cly.Memory.from_numpy(src_md, engine, array)
    dst = cly.Memory(sh.dst_md, engine, raw=np.full(sh.dst_md.size, fill, np.uint8))
    stream = cly.Stream(engine)
    sh.execute(stream, src, dst)
    stream.wait()
    return sh, dst


def check_result(dst, expected, tag):
    """Logical values and the whole physical buffer (padding included) bit for bit."""
    dt = dt_of(expected)
    assert_same(dst.to_numpy(), expected, what="to_numpy()")
    raw = dst.raw()
    assert dst.md.size == physical_size(expected.shape, tag) * itemsize(dt)
    assert_padding_zero(raw, expected.shape, tag, dt)
    assert_bytes(raw[: dst.md.size], raw_of(expected, tag, dt), f"{tag} bytes")


def check_impl(sh, engine):
    if engine.is_device:
        assert sh.impl.startswith(DEVICE_IMPL), sh.impl
    else:
        assert sh.impl.startswith("host"), sh.impl


# --------------------------------------------------------------------------
# Data types
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("backward", [False, True])
def test_every_type(engine, dt, backward):
    rng = np.random.default_rng(1)
    dims = (2, 12, 3, 2)
    a = random_bits(dt, dims, rng)
    md = cly.MemoryDesc(dims, dt, tag="nchw")
    sh, dst = run_shuffle(engine, md, a, axis=1, group=3, backward=backward)
    check_impl(sh, engine)
    check_result(dst, ref_shuffle(a, 1, 3, backward), "abcd")


# --------------------------------------------------------------------------
# Axes and groups
# --------------------------------------------------------------------------

AXIS_CASES = [
    # (dims, axis, group, dt)
    ((12, 2, 3, 2), 0, 2, "f32"),
    ((2, 12, 3, 2), 1, 3, "bf16"),
    ((2, 3, 16, 2), 2, 4, "s8"),
    ((2, 3, 2, 12), 3, 6, "f16"),
    ((16, 2, 2, 3, 2), 0, 8, "s32"),
    ((2, 32, 2, 1, 2), 1, 16, "u8"),
    ((2, 2, 6, 3, 2), 2, 3, "f32"),
    ((2, 1, 2, 8, 3), 3, 2, "bf16"),
    ((2, 3, 1, 2, 16), 4, 4, "f16"),
    ((1, 2, 3, 2, 48), 4, 16, "f32"),
    ((2, 24, 2, 2), 1, 8, "s8"),
]


@pytest.mark.parametrize("dims,axis,group,dt", AXIS_CASES)
@pytest.mark.parametrize("backward", [False, True])
def test_axes_and_groups(engine, dims, axis, group, dt, backward):
    rng = np.random.default_rng(2)
    a = random_bits(dt, dims, rng)
    tag = "abcde"[: len(dims)]
    md = cly.MemoryDesc(dims, dt, tag=tag)
    sh, dst = run_shuffle(engine, md, a, axis, group, backward)
    check_impl(sh, engine)
    check_result(dst, ref_shuffle(a, axis, group, backward), tag)


# --------------------------------------------------------------------------
# Layouts (padding included)
# --------------------------------------------------------------------------

LAYOUT_CASES = [
    # (dims, tag, axis, group, dt)
    ((2, 12, 3, 2), "nchw", 1, 4, "f32"),
    ((2, 12, 3, 2), "nhwc", 1, 4, "f32"),
    ((2, 12, 2, 3, 2), "ncdhw", 1, 6, "bf16"),
    ((2, 12, 2, 3, 2), "ndhwc", 1, 3, "bf16"),
    ((2, 3, 4, 6), "cdba", 3, 2, "f16"),
    ((2, 3, 4, 6), "cdba", 2, 2, "s8"),
    ((6, 3, 2, 4), "dbca", 0, 3, "u8"),
    ((2, 12, 3, 3), "aBcd16b", 1, 3, "f32"),      # tail: 12 of 16
    ((2, 12, 3, 3), "aBcd16b", 1, 4, "s8"),
    ((2, 36, 2, 2), "aBcd16b", 1, 6, "f16"),      # tail: 36 of 48
    ((2, 36, 2, 2), "nChw16c", 1, 12, "s32"),
    ((2, 36, 2, 1, 2), "aBcde16b", 1, 9, "bf16"),
    ((2, 12, 1, 2, 3), "aBcde16b", 1, 2, "u8"),
    ((2, 20, 4, 3), "aBcd16b", 2, 2, "f32"),      # blocked dim is not the axis
    ((12, 10), "BA8b4a2b", 0, 3, "f32"),          # A: 12 = 3 blocks of 4
    ((10, 12), "BA8b4a2b", 0, 5, "bf16"),         # A: 10 padded to 12
    ((12, 12), "BA8b4a2b", 1, 4, "f16"),          # B: 12 padded to 16
    ((6, 24), "BA8b4a2b", 1, 6, "s8"),            # B: 24 padded to 32
]


@pytest.mark.parametrize("dims,tag,axis,group,dt", LAYOUT_CASES)
@pytest.mark.parametrize("backward", [False, True])
def test_layouts(engine, dims, tag, axis, group, dt, backward):
    rng = np.random.default_rng(3)
    a = random_bits(dt, dims, rng)
    md = cly.MemoryDesc(dims, dt, tag=tag)
    sh, dst = run_shuffle(engine, md, a, axis, group, backward, fill=0xAB)
    check_impl(sh, engine)
    assert sh.dst_md == md
    check_result(dst, ref_shuffle(a, axis, group, backward), tag)


def test_padding_zero_via_descriptor_offsets(engine):
    """The padded positions the descriptor itself reports are zero in dst."""
    dims, dt = (2, 12, 3, 3), "f32"
    md = cly.MemoryDesc(dims, dt, tag="aBcd16b")
    a = random_bits(dt, dims, np.random.default_rng(4))
    _, dst = run_shuffle(engine, md, a, 1, 4, fill=0xAB)
    words = dst.raw()[: md.size].view(np.uint32)
    padded = md.element_offsets(padded=True)
    real = padded[:, :12]
    pad = padded[:, 12:]
    assert pad.size == 2 * 4 * 3 * 3
    assert np.all(words[pad.ravel()] == 0)
    assert md.offset((1, 5, 2, 1)) == real[1, 5, 2, 1]
    expected = ref_shuffle(a, 1, 4)
    np.testing.assert_array_equal(words[real], bits_of(expected))
    assert_padding_zero(dst.raw(), dims, "aBcd16b", dt)


@pytest.mark.parametrize("dims,src_tag,dst_tag,axis,group,dt", [
    ((2, 48, 7, 9), "nhwc", "nChw16c", 1, 8, "f32"),
    ((3, 40, 5, 17), "aBcd16b", "aBcd16b", 1, 5, "bf16"),
    ((2, 24, 33, 35), "nchw", "nchw", 1, 6, "s8"),
    ((2, 5, 9, 72), "nchw", "nhwc", 3, 9, "f16"),
    # planes of 1 KiB: work-items in the source's order (Tuning.source_order_bytes)
    ((2, 12, 16, 16), "nchw", "nchw", 1, 3, "f32"),
])
def test_larger_tensors(cl_engine, dims, src_tag, dst_tag, axis, group, dt):
    """Enough elements for many work-items and partial vectors on OpenCL."""
    a = random_bits(dt, dims, np.random.default_rng(13))
    src_md = cly.MemoryDesc(dims, dt, tag=src_tag)
    dst_md = cly.MemoryDesc(dims, dt, tag=dst_tag)
    for backward in (False, True):
        sh, dst = run_shuffle(cl_engine, src_md, a, axis, group, backward, dst_md=dst_md)
        check_impl(sh, cl_engine)
        check_result(dst, ref_shuffle(a, axis, group, backward), dst_tag)


# --------------------------------------------------------------------------
# Forward then backward
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dims,tag,axis,group,dt", [
    ((2, 12, 3, 2), "nhwc", 1, 3, "f32"),
    ((2, 36, 2, 2), "aBcd16b", 1, 4, "bf16"),
    ((3, 2, 2, 2, 24), "abcde", 4, 8, "f16"),
    ((12, 10), "BA8b4a2b", 1, 2, "s8"),
])
def test_forward_then_backward_restores(engine, dims, tag, axis, group, dt):
    a = random_bits(dt, dims, np.random.default_rng(5))
    md = cly.MemoryDesc(dims, dt, tag=tag)
    fwd = cly.Shuffle(md, axis=axis, group_size=group, engine=engine)
    bwd = cly.Shuffle(md, axis=axis, group_size=group, backward=True, engine=engine)
    src = cly.Memory.from_numpy(md, engine, a)
    mid = cly.Memory(md, engine, raw=np.full(md.size, 0xAB, np.uint8))
    out = cly.Memory(md, engine, raw=np.full(md.size, 0xCD, np.uint8))
    stream = cly.Stream(engine)
    fwd.execute(stream, src, mid)
    bwd.execute(stream, mid, out)
    stream.wait()
    check_result(mid, ref_shuffle(a, axis, group), tag)
    check_result(out, a, tag)
    np.testing.assert_array_equal(out.raw(), src.raw())


# --------------------------------------------------------------------------
# Destination layout other than the source's
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dims,src_tag,dst_tag,axis,group,dt", [
    ((2, 12, 3, 2), "nchw", "nhwc", 1, 3, "f32"),
    ((2, 12, 3, 2), "nhwc", "nChw16c", 1, 4, "bf16"),
    ((2, 36, 2, 2), "aBcd16b", "nchw", 1, 6, "f16"),
    ((2, 20, 2, 3), "aBcd16b", "aBcd8b", 1, 5, "s8"),
    ((2, 12, 3, 2), "cdba", "acdb", 3, 2, "u8"),
    ((2, 12, 2, 3, 2), "ncdhw", "aBcde16b", 1, 4, "s32"),
    ((12, 10), "ab", "BA8b4a2b", 0, 4, "f32"),
    ((12, 10), "BA8b4a2b", "ba", 1, 2, "f32"),
])
@pytest.mark.parametrize("backward", [False, True])
def test_dst_layout_differs(engine, dims, src_tag, dst_tag, axis, group, dt, backward):
    a = random_bits(dt, dims, np.random.default_rng(6))
    src_md = cly.MemoryDesc(dims, dt, tag=src_tag)
    dst_md = cly.MemoryDesc(dims, dt, tag=dst_tag)
    sh, dst = run_shuffle(engine, src_md, a, axis, group, backward, dst_md=dst_md)
    check_impl(sh, engine)
    assert sh.dst_md == dst_md
    check_result(dst, ref_shuffle(a, axis, group, backward), dst_tag)


@pytest.mark.parametrize("tag", ["nhwc", "aBcd16b", "cdba"])
@pytest.mark.parametrize("how", ["none", "any"])
def test_dst_md_none_or_any_takes_source_layout(engine, tag, how):
    dims, dt = (2, 12, 3, 2), "bf16"
    md = cly.MemoryDesc(dims, dt, tag=tag)
    dst_md = None if how == "none" else cly.MemoryDesc(dims, dt, tag="any")
    a = random_bits(dt, dims, np.random.default_rng(7))
    sh, dst = run_shuffle(engine, md, a, 1, 2, dst_md=dst_md)
    assert sh.dst_md == md
    assert sh.dst_md.format_kind == "blocked"
    assert sh.dst_md.strides == md.strides and sh.dst_md.inner_blks == md.inner_blks
    check_result(dst, ref_shuffle(a, 1, 2), tag)


def test_one_call_form(engine):
    dims, dt = (2, 12, 3, 2), "f32"
    a = random_bits(dt, dims, np.random.default_rng(8))
    src_md = cly.MemoryDesc(dims, dt, tag="nchw")
    dst_md = cly.MemoryDesc(dims, dt, tag="nChw16c")
    src = cly.Memory.from_numpy(src_md, engine, a)
    dst = cly.Memory(dst_md, engine, raw=np.full(dst_md.size, 0xAB, np.uint8))
    assert cly.shuffle(src, dst, axis=1, group_size=4) is None
    check_result(dst, ref_shuffle(a, 1, 4), "aBcd16b")
    back = cly.Memory(src_md, engine, raw=np.full(src_md.size, 0xAB, np.uint8))
    cly.shuffle(dst, back, axis=1, group_size=4, backward=True)
    check_result(back, a, "abcd")


def test_primitive_reused(engine):
    """One primitive, executed twice on different data, gives both results."""
    dims, dt = (2, 12, 2, 2), "f16"
    md = cly.MemoryDesc(dims, dt, tag="aBcd16b")
    sh = cly.Shuffle(md, axis=1, group_size=6, engine=engine)
    stream = cly.Stream(engine)
    rng = np.random.default_rng(9)
    for _ in range(2):
        a = random_bits(dt, dims, rng)
        src = cly.Memory.from_numpy(md, engine, a)
        dst = cly.Memory(md, engine, raw=np.full(md.size, 0xAB, np.uint8))
        sh.execute(stream, src, dst)
        stream.wait()
        check_result(dst, ref_shuffle(a, 1, 6), "aBcd16b")


@pytest.mark.parametrize("dims,src_strides,dst_strides,axis,group", [
    ((2, 12, 3, 2), (100, 8, 2, 1), None, 1, 4),
    ((2, 12, 3, 2), None, (1, 5, 64, 200), 1, 3),
    ((3, 2, 10), (1, 40, 3), (25, 12, 1), 2, 5),
])
def test_strided_layouts_with_gaps(engine, dims, src_strides, dst_strides, axis, group):
    """Plain layouts by strides; bytes in the destination's gaps are never touched."""
    dt = "s32"
    a = random_bits(dt, dims, np.random.default_rng(16))

    def plain(strides):
        if strides is None:
            return cly.MemoryDesc(dims, dt, tag="abcd"[: len(dims)])
        return cly.MemoryDesc(dims, dt, strides=strides)

    src_md, dst_md = plain(src_strides), plain(dst_strides)
    sh, dst = run_shuffle(engine, src_md, a, axis, group, dst_md=dst_md, fill=0xAB)
    strides = dst_strides or [math.prod(dims[d + 1:]) for d in range(len(dims))]
    offsets = element_offsets(dims, strides=strides)
    words = dst.raw().view(np.uint32)
    assert words.size >= offsets.max() + 1
    want = np.full(words.size, 0xABABABAB, dtype=np.uint32)
    want[offsets.ravel()] = bits_of(ref_shuffle(a, axis, group)).ravel()
    np.testing.assert_array_equal(words, want)


# --------------------------------------------------------------------------
# Submemories (in-place concat views)
# --------------------------------------------------------------------------

SUB_CASES = [
    # (parent dims, parent tag, sub dims, sub offsets, axis, group)
    ((2, 12, 3, 3), "nchw", (2, 6, 3, 3), (0, 6, 0, 0), 1, 2),
    ((2, 12, 3, 3), "nhwc", (2, 12, 3, 2), (0, 0, 0, 1), 1, 3),
    ((2, 32, 3, 3), "aBcd16b", (2, 16, 3, 3), (0, 16, 0, 0), 1, 4),
    ((2, 32, 3, 3), "aBcd16b", (2, 16, 3, 3), (0, 0, 0, 0), 1, 4),
    ((2, 24, 4, 3), "aBcd8b", (2, 16, 2, 3), (0, 8, 1, 0), 1, 8),
]


@pytest.mark.parametrize("parent_dims,tag,dims,offsets,axis,group", SUB_CASES)
@pytest.mark.parametrize("backward", [False, True])
def test_submemory_source(engine, parent_dims, tag, dims, offsets, axis, group, backward):
    """A view into a larger tensor is read at its own elements only."""
    dt = "f32"
    parent_md = cly.MemoryDesc(parent_dims, dt, tag=tag)
    sub_md = parent_md.submemory(dims, offsets)
    whole = random_bits(dt, parent_dims, np.random.default_rng(14))
    view = whole[tuple(slice(o, o + n) for o, n in zip(offsets, dims))]
    parent = cly.Memory.from_numpy(parent_md, engine, whole)
    src = cly.Memory(sub_md, engine, buffer=parent)
    dst_md = cly.MemoryDesc(dims, dt, tag="abcd")
    sh = cly.Shuffle(sub_md, axis=axis, group_size=group, backward=backward, engine=engine,
                     dst_md=dst_md)
    dst = cly.Memory(dst_md, engine, raw=np.full(dst_md.size, 0xAB, np.uint8))
    stream = cly.Stream(engine)
    sh.execute(stream, src, dst)
    stream.wait()
    check_result(dst, ref_shuffle(view, axis, group, backward), "abcd")


@pytest.mark.parametrize("parent_dims,tag,dims,offsets,axis,group", SUB_CASES)
def test_submemory_destination(engine, parent_dims, tag, dims, offsets, axis, group):
    """Only the view's elements are written; the rest of the parent keeps its bytes."""
    dt = "bf16"
    parent_md = cly.MemoryDesc(parent_dims, dt, tag=tag)
    sub_md = parent_md.submemory(dims, offsets)
    a = random_bits(dt, dims, np.random.default_rng(15))
    src_md = cly.MemoryDesc(dims, dt, tag="abcd")
    parent = cly.Memory(parent_md, engine, raw=np.full(parent_md.size, 0xAB, np.uint8))
    dst = cly.Memory(sub_md, engine, buffer=parent)
    sh = cly.Shuffle(src_md, axis=axis, group_size=group, engine=engine, dst_md=sub_md)
    src = cly.Memory.from_numpy(src_md, engine, a)
    stream = cly.Stream(engine)
    sh.execute(stream, src, dst)
    stream.wait()
    offs, total = element_offsets(parent_dims, tag), physical_size(parent_dims, tag)
    inside = np.zeros(parent_dims, dtype=bool)
    inside[tuple(slice(o, o + n) for o, n in zip(offsets, dims))] = True
    want = np.full(total, 0xABAB, dtype=np.uint16)
    want[offs[inside]] = bits_of(ref_shuffle(a, axis, group)).ravel()
    got = parent.raw()[: total * 2].view(np.uint16)
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------
# More than 6 dims: the host path
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dims,tag,axis,group,dt", [
    ((2, 1, 2, 6, 1, 2, 3), "abcdefg", 3, 3, "f32"),
    ((2, 12, 1, 2, 1, 2, 2), "aBcdefg16b", 1, 4, "bf16"),
    ((1, 2, 1, 2, 1, 2, 8), "gfedcba", 6, 2, "s8"),
    ((1, 2, 1, 2, 1, 1, 2, 6), "abcdefhg", 7, 2, "f16"),
])
@pytest.mark.parametrize("backward", [False, True])
def test_many_dims_use_host_path(engine, dims, tag, axis, group, dt, backward):
    a = random_bits(dt, dims, np.random.default_rng(10))
    md = cly.MemoryDesc(dims, dt, tag=tag)
    sh, dst = run_shuffle(engine, md, a, axis, group, backward)
    assert sh.impl.startswith("host"), sh.impl
    check_result(dst, ref_shuffle(a, axis, group, backward), tag)


def test_six_dims_still_opencl(cl_engine):
    dims, dt = (1, 2, 1, 6, 1, 2), "f32"
    a = random_bits(dt, dims, np.random.default_rng(11))
    md = cly.MemoryDesc(dims, dt, tag="abcdef")
    sh, dst = run_shuffle(cl_engine, md, a, 3, 2)
    assert sh.impl.startswith(DEVICE_IMPL), sh.impl
    check_result(dst, ref_shuffle(a, 3, 2), "abcdef")


# --------------------------------------------------------------------------
# Copies and no-ops
# --------------------------------------------------------------------------

@pytest.mark.parametrize("tag", ["nchw", "nhwc", "aBcd16b"])
@pytest.mark.parametrize("group", [1, 12])
@pytest.mark.parametrize("backward", [False, True])
def test_group_one_and_whole_axis_copy(engine, tag, group, backward):
    dims, dt = (2, 12, 3, 2), "f32"
    a = random_bits(dt, dims, np.random.default_rng(12))
    md = cly.MemoryDesc(dims, dt, tag=tag)
    sh, dst = run_shuffle(engine, md, a, 1, group, backward)
    check_impl(sh, engine)
    check_result(dst, a, tag)


@pytest.mark.parametrize("dims,axis,group", [
    ((2, 0, 3, 4), 1, 4),
    ((2, 0, 3, 4), 1, 1),
    ((0, 12, 3, 4), 1, 3),
    ((2, 12, 0, 4), 1, 4),
])
@pytest.mark.parametrize("tag", ["nchw", "aBcd16b"])
def test_zero_size_is_noop(engine, dims, axis, group, tag):
    md = cly.MemoryDesc(dims, "f32", tag=tag)
    sh = cly.Shuffle(md, axis=axis, group_size=group, engine=engine)
    assert sh.dst_md == md
    src = cly.Memory(md, engine, raw=np.full(md.size + 16, 0x5A, np.uint8))
    dst = cly.Memory(sh.dst_md, engine, raw=np.full(md.size + 16, 0xAB, np.uint8))
    stream = cly.Stream(engine)
    sh.execute(stream, src, dst)
    stream.wait()
    assert dst.to_numpy().shape == dims
    # Nothing is written: the bytes the memory holds are as they were.
    np.testing.assert_array_equal(dst.raw(), np.full(md.size + 16, 0xAB, np.uint8))
    back = cly.Shuffle(md, axis=axis, group_size=group, backward=True, engine=engine)
    back.execute(stream, dst, src)
    stream.wait()
    np.testing.assert_array_equal(src.raw(), np.full(md.size + 16, 0x5A, np.uint8))


# --------------------------------------------------------------------------
# Bad inputs
# --------------------------------------------------------------------------

MD12 = ((2, 12, 3, 4), "f32")


def _md(dims=MD12[0], dt=MD12[1], tag="nchw"):
    return cly.MemoryDesc(dims, dt, tag=tag)


@pytest.mark.parametrize("group", [0, -2, 5, 24])
def test_bad_group(engine, group):
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.Shuffle(_md(), axis=1, group_size=group, engine=engine)
    assert str(group) in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("axis", [-5, 4, 7])
def test_bad_axis(engine, axis):
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.Shuffle(_md(), axis=axis, group_size=2, engine=engine)
    assert str(axis) in str(info.value)


def test_negative_axis_counts_from_the_end(engine):
    md = _md()
    rng = np.random.default_rng(3)
    values = rng.integers(-100, 100, md.dims).astype(np.float32)
    src = cly.Memory.from_numpy(md, engine, values)
    out = {}
    for axis in (1, 1 - md.ndims):
        sh = cly.Shuffle(md, axis=axis, group_size=2, engine=engine)
        assert sh.axis == 1
        dst = cly.Memory(md, engine)
        s = cly.Stream(engine)
        sh.execute(s, src, dst)
        s.wait()
        out[axis] = dst.to_numpy()
    rows = md.dims[1] // 2
    want = values[:, [(c % rows) * 2 + c // rows for c in range(md.dims[1])]]
    assert np.array_equal(out[1], want) and np.array_equal(out[1 - md.ndims], want)


def test_type_mismatch(engine):
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.Shuffle(_md(), axis=1, group_size=2, engine=engine, dst_md=_md(dt="s8"))
    assert "s8" in str(info.value)
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.Shuffle(_md(), axis=1, group_size=2, engine=engine,
                    dst_md=cly.MemoryDesc(MD12[0], "bf16", tag="any"))
    assert "bf16" in str(info.value)


def test_dims_mismatch(engine):
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.Shuffle(_md(), axis=1, group_size=2, engine=engine,
                    dst_md=_md(dims=(2, 12, 4, 3)))
    assert "(2, 12, 4, 3)" in str(info.value) or "2x12x4x3" in str(info.value)


def test_one_call_form_errors(engine):
    src = cly.Memory(_md(), engine)
    dst = cly.Memory(_md(dt="u8"), engine)
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.shuffle(src, dst, axis=1, group_size=3)
    assert "u8" in str(info.value)
    dst = cly.Memory(_md(), engine)
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.shuffle(src, dst, axis=1, group_size=5)
    assert "5" in str(info.value)


@pytest.mark.parametrize("which", ["src", "dst"])
@pytest.mark.parametrize("other", [dict(tag="nhwc"), dict(dt="s32"), dict(dims=(2, 12, 4, 3))])
def test_execute_with_mismatched_memory(engine, which, other):
    md = _md()
    sh = cly.Shuffle(md, axis=1, group_size=3, engine=engine)
    wrong_md = _md(**other)
    good, wrong = cly.Memory(md, engine), cly.Memory(wrong_md, engine, raw=np.full(
        wrong_md.size, 0xAB, np.uint8))
    stream = cly.Stream(engine)
    args = (wrong, good) if which == "src" else (good, wrong)
    before = wrong.raw()
    with pytest.raises(cly.InvalidArgumentError) as info:
        sh.execute(stream, *args)
    stream.wait()
    message = str(info.value)
    assert which in message
    assert repr(wrong_md) in message or str(wrong_md.dims) in message
    np.testing.assert_array_equal(wrong.raw(), before)


def test_source_of_format_any_rejected(engine):
    any_md = cly.MemoryDesc(MD12[0], "f32", tag="any")
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.Shuffle(any_md, axis=1, group_size=2, engine=engine)
    assert "any" in str(info.value)


def test_memories_on_other_engine(cl_engine, host_engine):
    md = _md()
    sh = cly.Shuffle(md, axis=1, group_size=3, engine=cl_engine)
    on_host = cly.Memory(md, host_engine)
    on_cl = cly.Memory(md, cl_engine)
    with pytest.raises(cly.InvalidArgumentError):
        sh.execute(cly.Stream(cl_engine), on_host, on_cl)
    with pytest.raises(cly.InvalidArgumentError):
        sh.execute(cly.Stream(host_engine), on_cl, on_cl)
    with pytest.raises(cly.UnimplementedError):
        cly.shuffle(on_host, on_cl, axis=1, group_size=3)
    with pytest.raises(cly.InvalidArgumentError):
        sh.execute(cly.Stream(cl_engine), on_cl, np.zeros(md.size, np.uint8))


# --------------------------------------------------------------------------
# Property-based: OpenCL == host == reference
# --------------------------------------------------------------------------

@st.composite
def shuffle_cases(draw):
    ndims = draw(st.integers(2, 5))
    axis = draw(st.integers(0, ndims - 1))
    dims = [draw(st.integers(1, 9)) for _ in range(ndims)]
    dims[axis] = draw(st.sampled_from([4, 6, 8, 9, 12, 16, 18, 20, 24]))
    channels = dims[axis]
    group = draw(st.sampled_from([g for g in range(1, channels + 1) if channels % g == 0]))
    # Keep the tensors small.
    while math.prod(dims) > 3000:
        d = max((d for d in range(ndims) if d != axis), key=lambda d: dims[d])
        dims[d] = max(1, dims[d] // 2)
    order = draw(st.permutations(list(range(ndims))))
    letters = [chr(ord("a") + d) for d in order]
    if draw(st.booleans()):
        blocked = draw(st.sampled_from(list(range(ndims))))
        block = draw(st.sampled_from([4, 8]))
        letters = [c.upper() if c == chr(ord("a") + blocked) else c for c in letters]
        tag = "".join(letters) + f"{block}{chr(ord('a') + blocked)}"
    else:
        tag = "".join(letters)
    dt = draw(st.sampled_from(TYPES))
    backward = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    return tuple(dims), axis, group, tag, dt, backward, seed


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=shuffle_cases())
def test_property_opencl_host_reference(cl_engine, host_engine, case):
    dims, axis, group, tag, dt, backward, seed = case
    a = random_bits(dt, dims, np.random.default_rng(seed))
    md = cly.MemoryDesc(dims, dt, tag=tag)
    expected = ref_shuffle(a, axis, group, backward)
    want = raw_of(expected, tag, dt)
    raws = []
    for engine in (cl_engine, host_engine):
        sh, dst = run_shuffle(engine, md, a, axis, group, backward, fill=0xAB)
        check_impl(sh, engine)
        raw = dst.raw()[: md.size]
        assert_padding_zero(raw, dims, tag, dt, what=f"{engine!r} {sh!r}: padding")
        assert_bytes(raw, want, f"{engine!r} {sh!r}")
        assert_same(dst.to_numpy(), expected, what=f"{engine!r} to_numpy()")
        raws.append(raw)
    assert_bytes(raws[0], raws[1], "opencl vs host")
