"""Arrays into and out of existing memories (issue 37): Memory.write and
read with events on every engine, to_numpy(out=), np.asarray of a host
memory, from_numpy taking its descriptor from the array, the one-line
cly.reorder, the host engine's complete events, and to_cl_array of a
layout in neither C nor Fortran order. Values are checked bit for bit
against the arrays written (layout changes copy), conversions against
NumPy's own."""
import tracemalloc

import numpy as np
import pytest

import clayout as cly

DIMS = (2, 19, 3, 5)   # 19 channels: nChw16c pads to 32
RNG = np.random.default_rng(37)
VALUES = RNG.standard_normal(DIMS).astype(np.float32)


@pytest.mark.parametrize("tag", ["nchw", "nhwc", "nChw16c", "chwn"])
def test_write_then_read_give_the_array_back(engine, tag):
    md = cly.MemoryDesc(DIMS, "f32", tag=tag)
    mem = cly.Memory(md, engine)
    event = mem.write(VALUES)
    event.wait()
    out, event = mem.read()
    event.wait()
    assert np.array_equal(out, VALUES)
    into = np.full(DIMS, np.nan, np.float32)
    assert mem.to_numpy(out=into) is into and np.array_equal(into, VALUES)
    if md.inner_blks:  # padding channels 19..31 hold zeros
        assert not mem.raw().view(np.float32).reshape(2, 2, 3, 5, 16)[:, 1, :, :, 3:].any()


def test_read_gives_an_array_in_the_memorys_own_layout(engine):
    mem = cly.Memory.from_numpy(cly.MemoryDesc(DIMS, "f32", tag="nhwc"), engine, VALUES)
    out, event = mem.read()
    event.wait()
    physical = out.transpose(0, 2, 3, 1)  # n, h, w, c: the bytes' order
    assert physical.flags.c_contiguous and np.array_equal(out, VALUES)


def test_a_window_is_written_and_its_neighbours_are_not(engine):
    whole_md = cly.MemoryDesc((4, 10), "f32")
    whole = cly.Memory.from_numpy(whole_md, engine, np.full((4, 10), 7, np.float32))
    window = cly.Memory(whole_md.submemory((2, 3), (1, 4)), engine, buffer=whole)
    part = np.arange(6, dtype=np.float32).reshape(2, 3)
    window.write(part).wait()
    want = np.full((4, 10), 7, np.float32)
    want[1:3, 4:7] = part
    assert np.array_equal(whole.to_numpy(), want)
    got, event = window.read()
    event.wait()
    assert np.array_equal(got, part)


def test_conversions_on_write_are_only_the_safe_ones(engine):
    mem = cly.Memory(cly.MemoryDesc((3, 4), "f32"), engine)
    mem.write(np.arange(12, dtype=np.int8).reshape(3, 4)).wait()   # int8 -> f32: safe
    assert np.array_equal(mem.to_numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(cly.InvalidArgumentError, match="float64.*without loss"):
        mem.write(np.zeros((3, 4)))
    with pytest.raises(cly.InvalidArgumentError, match=r"\(4, 3\).*\(3, 4\)"):
        mem.write(np.zeros((4, 3), np.float32))


def test_read_refuses_outs_that_do_not_fit(engine):
    mem = cly.Memory(cly.MemoryDesc((3, 4), "f32", tag="ba"), engine)
    for out, rule in [(np.empty((4, 3), np.float32), "shape"),
                      (np.empty((3, 4), np.float64), "dtype"),
                      ([[0.0] * 4] * 3, "NumPy array")]:
        with pytest.raises(cly.InvalidArgumentError, match=rule):
            mem.read(out)
    frozen = np.empty((3, 4), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(cly.InvalidArgumentError, match="read-only"):
        mem.read(frozen)


def test_a_device_read_takes_c_order_or_its_own_layout(cl_engine):
    mem = cly.Memory.from_numpy(cly.MemoryDesc((3, 4), "f32", tag="ba"), cl_engine,
                                np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(cly.InvalidArgumentError, match="C order or in the memory's own"):
        mem.read(np.empty((3, 8), np.float32)[:, ::2])
    for out in (np.empty((3, 4), np.float32), np.empty((4, 3), np.float32).T):
        got, event = mem.read(out)
        event.wait()
        assert got is out and np.array_equal(out, np.arange(12).reshape(3, 4))


def _no_allocation(monkeypatch, engine):
    """Fail any device allocation while the test runs."""
    def refuse(*args, **kwargs):
        raise AssertionError("allocated a device buffer")
    monkeypatch.setattr(engine.backend, "allocate", refuse)


def test_same_layout_transfers_allocate_nothing(cl_engine, monkeypatch):
    big = RNG.standard_normal((64, 32, 16, 16)).astype(np.float32)   # 2 MiB
    for tag, array in [("nchw", big), ("nhwc", big.transpose(0, 2, 3, 1).copy()
                                       .transpose(0, 3, 1, 2))]:
        mem = cly.Memory(cly.MemoryDesc(big.shape, "f32", tag=tag), cl_engine)
        out = np.empty_like(array)   # the same strides as array
        with monkeypatch.context() as patch:
            _no_allocation(patch, cl_engine)
            tracemalloc.start()
            try:
                mem.write(array).wait()
                _, event = mem.read(out)
                event.wait()
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
        assert peak < big.nbytes // 16, f"{tag}: {peak} bytes allocated on the host"
        assert np.array_equal(out, big)


@pytest.mark.opencl_only
def test_write_and_read_wait_for_their_events_and_do_not_block(cl_engine):
    import pyopencl as cl

    mem = cly.Memory(cly.MemoryDesc(DIMS, "f32", tag="nhwc"), cl_engine)
    for array in (VALUES.transpose(0, 2, 3, 1).copy().transpose(0, 3, 1, 2), VALUES):
        gate = cl.UserEvent(cl_engine.context)
        written = mem.write(array, wait_for=[gate])          # returns with the gate shut
        assert written.command_execution_status != cl.command_execution_status.COMPLETE
        out, read = mem.read(np.zeros(DIMS, np.float32))     # waits for the write
        gate.set_status(cl.command_execution_status.COMPLETE)
        read.wait()
        assert np.array_equal(out, VALUES)


def test_np_asarray_of_a_host_memory_shares_a_plain_layouts_bytes(host_engine):
    mem = cly.Memory.from_numpy(cly.MemoryDesc(DIMS, "f32", tag="nhwc"), host_engine, VALUES)
    view = np.asarray(mem)
    assert np.array_equal(view, VALUES) and np.shares_memory(view, mem.storage)
    view[0, 0, 0, 0] = 123
    assert mem.to_numpy()[0, 0, 0, 0] == 123
    assert not np.shares_memory(np.array(mem, copy=True), mem.storage)
    blocked = cly.Memory.from_numpy(cly.MemoryDesc(DIMS, "f32", tag="nChw16c"), host_engine,
                                    VALUES)
    assert np.array_equal(np.asarray(blocked), VALUES)
    with pytest.raises(ValueError, match="inner blocks"):
        np.asarray(blocked, copy=False)
    assert np.asarray(mem, dtype=np.float64).dtype == np.float64


def test_np_asarray_of_a_device_memory_says_what_to_use(cl_engine):
    mem = cly.Memory(cly.MemoryDesc((2, 2), "f32"), cl_engine)
    with pytest.raises(cly.InvalidArgumentError, match=r"to_numpy\(\)"):
        np.asarray(mem)


class _CpuProducer:
    """A DLPack producer that is no NumPy array (as a PyTorch CPU tensor)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


@pytest.mark.parametrize("make, want", [
    (lambda: VALUES, (DIMS, "abcd")),
    (lambda: VALUES.transpose(0, 2, 3, 1).copy().transpose(0, 3, 1, 2), (DIMS, "acdb")),
    (lambda: VALUES.T.copy().T, (DIMS, "dcba")),
    (lambda: VALUES[:, ::2], ((2, 10, 3, 5), "abcd")),    # gaps: copied, C order
    (lambda: _CpuProducer(VALUES), (DIMS, "abcd")),
])
def test_from_numpy_takes_the_descriptor_from_the_array(engine, make, want):
    array = make()
    mem = cly.Memory.from_numpy(array, engine)
    dims, tag = want
    assert mem.md == cly.MemoryDesc(dims, "f32", tag=tag), mem.md
    assert np.array_equal(mem.to_numpy(), np.asarray(np.from_dlpack(array)
                                                     if isinstance(array, _CpuProducer)
                                                     else array))


def test_from_numpy_refuses_a_descriptor_and_an_array_twice(host_engine):
    with pytest.raises(cly.InvalidArgumentError, match="array alone"):
        cly.Memory.from_numpy(VALUES, host_engine, VALUES)


def test_one_line_reorders_on_the_host_give_arrays(host_engine):
    nhwc = cly.reorder(VALUES, tag="nhwc")
    assert isinstance(nhwc, np.ndarray) and np.array_equal(nhwc, VALUES)
    assert nhwc.transpose(0, 2, 3, 1).flags.c_contiguous   # laid out as nhwc
    half = cly.reorder(VALUES, data_type="f16")
    assert half.dtype == np.float16 and np.array_equal(half, VALUES.astype(np.float16))
    blocked = cly.reorder(VALUES, tag="nChw16c")
    assert isinstance(blocked, cly.Memory) and np.array_equal(blocked.to_numpy(), VALUES)
    scaled = cly.reorder(VALUES, data_type="s8",
                         attr=cly.Attr(dst_scales=cly.Scales(0.05)))
    want = np.clip(np.rint(VALUES / np.float32(0.05)), -128, 127).astype(np.int8)
    assert np.array_equal(scaled, want)


def test_one_line_reorders_on_a_device_give_memories(cl_engine):
    mem = cly.reorder(VALUES, tag="nChw16c", engine=cl_engine)
    assert isinstance(mem, cly.Memory) and mem.engine == cl_engine
    back = cly.reorder(mem, tag="nchw")
    assert back.engine == cl_engine and np.array_equal(back.to_numpy(), VALUES)
    with pytest.raises(cly.InvalidArgumentError, match="belong to the one-line form"):
        cly.reorder(mem, back, tag="nchw")
    with pytest.raises(cly.InvalidArgumentError, match="runs on src's engine"):
        cly.reorder(mem, tag="nchw", engine=cly.Engine("host"))


def test_the_host_engine_returns_complete_events(host_engine):
    src = cly.Memory.from_numpy(cly.MemoryDesc(DIMS, "f32"), host_engine, VALUES)
    dst = cly.Memory(cly.MemoryDesc(DIMS, "f32", tag="nhwc"), host_engine)
    stream = cly.Stream(host_engine)
    event = cly.Reorder(src.md, dst.md, engine=host_engine).execute(stream, src, dst)
    assert event.is_complete
    event.wait()
    again = cly.Reorder(src.md, dst.md, engine=host_engine).execute(stream, src, dst,
                                                                  wait_for=[event])
    assert again.is_complete and np.array_equal(dst.to_numpy(), VALUES)


@pytest.mark.opencl_only
def test_to_cl_array_of_nhwc_gets_the_logical_tensor(cl_engine):
    mem = cly.Memory.from_numpy(cly.MemoryDesc(DIMS, "f32", tag="nhwc"), cl_engine, VALUES)
    array = mem.to_cl_array()
    got = array.get()
    assert np.array_equal(got, VALUES) and got.transpose(0, 2, 3, 1).flags.c_contiguous
    into = np.empty_like(got)
    assert array.get(ary=into) is into and np.array_equal(into, VALUES)
