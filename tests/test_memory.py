"""Memory: NumPy in and out of every layout, raw bytes, shared buffers."""
import ml_dtypes
import numpy as np
import pytest

import clayout as cly
from reference import assert_padding_zero, assert_same, random_bits

ALL_TYPES = ["f32", "f16", "bf16", "s32", "s8", "u8", "f64", "f8_e5m2", "f8_e4m3", "s4", "u4"]


@pytest.mark.parametrize("dt", ALL_TYPES)
@pytest.mark.parametrize("tag", ["abcd", "acdb", "aBcd16b", "ABcd4b16a4b", "cdba"])
def test_round_trip_is_bit_exact(engine, dt, tag):
    rng = np.random.default_rng(7)
    md = cly.MemoryDesc((3, 19, 2, 5), dt, tag=tag)
    values = random_bits(dt, md.dims, rng)  # NaN payloads included for floats
    mem = cly.Memory.from_numpy(md, engine, values)
    assert_same(mem.to_numpy(), values)
    assert mem.raw().size == md.size


def test_physical_bytes_follow_the_layout(engine):
    # nChw16c with C = 17: element (n, c, h, w) sits at
    # n*(2*16*2*2) + (c//16)*(16*2*2) + h*(2*16) + w*16 + c%16, padding is zero.
    md = cly.MemoryDesc((2, 17, 2, 2), "s32", tag="nChw16c")
    values = np.arange(1, 2 * 17 * 2 * 2 + 1, dtype=np.int32).reshape(md.dims)
    raw = cly.Memory.from_numpy(md, engine, values).raw().view(np.int32)
    assert raw.size == 2 * 32 * 2 * 2
    expect = np.zeros(raw.size, np.int32)
    for n, c, h, w in np.ndindex(*md.dims):
        expect[n * 128 + (c // 16) * 64 + h * 32 + w * 16 + c % 16] = values[n, c, h, w]
    np.testing.assert_array_equal(raw, expect)
    assert_padding_zero(raw, md.dims, "nChw16c", "s32")


def test_packed_types_put_the_first_element_in_the_low_nibble(engine):
    md = cly.MemoryDesc((4,), "u4")
    mem = cly.Memory.from_numpy(md, engine, np.array([1, 2, 3, 15], dtype=ml_dtypes.uint4))
    assert list(mem.raw()) == [0x21, 0xF3]


def test_raw_in_and_out(engine):
    md = cly.MemoryDesc((4, 8), "u8", strides=(10, 1))  # gaps of 2 bytes per row
    raw = np.arange(md.size, dtype=np.uint8)
    mem = cly.Memory(md, engine, raw=raw)
    assert_same(mem.raw(), raw)
    expect = np.array([[10 * r + c for c in range(8)] for r in range(4)], dtype=np.uint8)
    assert_same(mem.to_numpy(), expect)


def test_new_memory_is_zero_filled(engine):
    md = cly.MemoryDesc((3, 5), "f32", tag="Ba4b")
    assert not cly.Memory(md, engine).raw().any()


def test_submemory_shares_the_parent_buffer(engine):
    parent_md = cly.MemoryDesc((2, 32, 3, 3), "f32", tag="nChw16c")
    values = np.random.default_rng(1).standard_normal(parent_md.dims).astype(np.float32)
    parent = cly.Memory.from_numpy(parent_md, engine, values)
    sub_md = parent_md.submemory((2, 16, 3, 3), (0, 16, 0, 0))
    sub = cly.Memory(sub_md, engine, buffer=parent)
    assert_same(sub.to_numpy(), values[:, 16:])


def test_zero_size_memory(engine):
    md = cly.MemoryDesc((2, 0, 3), "f32", tag="acb")
    mem = cly.Memory.from_numpy(md, engine, np.zeros((2, 0, 3), np.float32))
    assert md.size == 0 and mem.to_numpy().shape == (2, 0, 3)


def test_pyopencl_buffer_and_array_are_shared(cl_engine):
    import pyopencl as cl
    import pyopencl.array as cla

    md = cly.MemoryDesc((4, 6), "f32", tag="ba")
    queue = cl.CommandQueue(cl_engine.context)
    host = np.arange(24, dtype=np.float32)
    array = cla.to_device(queue, host)
    queue.finish()
    # The array's bytes read through the 'ba' layout: element (r, c) at c*4 + r.
    expect = host.reshape(6, 4).T
    assert_same(cly.Memory(md, cl_engine, buffer=array).to_numpy(), expect)
    assert_same(cly.Memory(md, cl_engine, buffer=array.data).to_numpy(), expect)


@pytest.mark.parametrize("make, words", [
    (lambda e: cly.Memory(cly.MemoryDesc((4, 8), "f32"), e, raw=np.zeros(100, np.uint8)),
     ["100 bytes", "128 bytes"]),
    (lambda e: cly.Memory(cly.MemoryDesc((4, 8), "f32"), e,
                          buffer=cly.Memory(cly.MemoryDesc((4, 4), "f32"), e)),
     ["64 bytes", "128 bytes"]),
    (lambda e: cly.Memory.from_numpy(cly.MemoryDesc((4, 8), "f32"), e, np.zeros((8, 4))),
     ["(8, 4)", "(4, 8)"]),
    (lambda e: cly.Memory.from_numpy(cly.MemoryDesc((2, 2), "s8"), e, np.zeros((2, 2), np.float32)),
     ["float32", "s8"]),
    (lambda e: cly.Memory(cly.MemoryDesc((2, 2), "f32", tag="any"), e), ["any"]),
])
def test_bad_memory_arguments_are_named(engine, make, words):
    with pytest.raises(cly.InvalidArgumentError) as info:
        make(engine)
    for word in words:
        assert word in str(info.value)


def test_memory_of_another_engine_is_rejected(cl_engine, host_engine):
    other = cly.Memory(cly.MemoryDesc((2,), "f32"), host_engine)
    with pytest.raises(cly.InvalidArgumentError, match="lives on"):
        cly.Memory(cly.MemoryDesc((2,), "f32"), cl_engine, buffer=other)
