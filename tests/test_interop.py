"""pyopencl interop: Arrays in and out without copies, engines compared by
context and device, and a kernel cache that lets contexts go."""
import gc
import weakref

import numpy as np
import pytest

import clayout as cly


@pytest.fixture
def queue(cl_engine):
    import pyopencl as cl
    return cl.CommandQueue(cl_engine.context)


def test_transposed_array_is_described_not_misread(cl_engine, queue):
    import pyopencl.array as cla

    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = cla.to_device(queue, host).T          # shape (6, 4), strides (4, 24) bytes
    with pytest.raises(cly.InvalidArgumentError, match="from_array"):
        cly.Memory(cly.MemoryDesc((6, 4), "f32"), cl_engine, buffer=view)
    md = cly.MemoryDesc.from_array(view)
    assert md.strides == (1, 6) and md.dims == (6, 4)
    mem = cly.Memory(md, cl_engine, buffer=view)
    assert np.array_equal(mem.to_numpy(), host.T)


def test_array_with_an_offset_is_shared_in_place(cl_engine, queue):
    import pyopencl.array as cla

    base = cla.to_device(queue, np.zeros((5, 8), np.float32))
    window = base[1:4, 2:6]                       # offset 40 bytes, strides (32, 4)
    md = cly.MemoryDesc.from_array(window)
    assert md.offset0 == 10 and md.strides == (8, 1)
    dst = cly.Memory(md, cl_engine, buffer=window)
    values = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    src = cly.Memory.from_numpy(cly.MemoryDesc((3, 4), "f32"), cl_engine, values)
    cly.reorder(src, dst)
    want = np.zeros((5, 8), np.float32)
    want[1:4, 2:6] = values
    assert np.array_equal(base.get(), want)       # written in place, nothing else touched


def test_to_cl_array_shares_the_buffer_and_its_events(cl_engine, queue):
    import threading

    import pyopencl as cl

    parent_md = cly.MemoryDesc((4, 10), "s32")
    parent = cly.Memory(parent_md, cl_engine)
    sub = cly.Memory(parent_md.submemory((2, 10), (1, 0)), cl_engine, buffer=parent)
    values = np.arange(20, dtype=np.int32).reshape(2, 10) - 6
    src = cly.Memory.from_numpy(cly.MemoryDesc((2, 10), "s32", tag="ba"), cl_engine, values)
    gate = cl.UserEvent(cl_engine.context)
    cly.Reorder(src.md, sub.md, engine=cl_engine).execute(queue, src, sub, wait_for=[gate])
    array = sub.to_cl_array(queue)
    assert array.shape == (2, 10) and array.strides == (40, 4) and array.offset == 40
    assert array.base_data.int_ptr == parent.storage.int_ptr
    threading.Timer(0.2, gate.set_status, [cl.command_execution_status.COMPLETE]).start()
    assert np.array_equal(array.get(), values)    # Array.get waits for the kernel
    array.fill(7)                                 # a pyopencl write, seen by clayout
    queue.finish()
    want = np.zeros((4, 10), np.int32)
    want[1:3] = 7
    assert np.array_equal(parent.to_numpy(), want)


def test_to_cl_array_of_a_strided_window(cl_engine, queue):
    parent = cly.Memory.from_numpy(cly.MemoryDesc((4, 10), "f32"), cl_engine,
                                   np.arange(40, dtype=np.float32).reshape(4, 10))
    sub = cly.Memory(parent.md.submemory((4, 3), (0, 5)), cl_engine, buffer=parent)
    array = sub.to_cl_array(queue)
    # pyopencl's get() wants contiguous arrays; the view is right all the same.
    assert (array.shape, array.strides, array.offset) == ((4, 3), (40, 4), 20)
    assert array.base_data.int_ptr == parent.storage.int_ptr


def test_to_cl_array_refuses_blocked_layouts(cl_engine):
    mem = cly.Memory(cly.MemoryDesc((2, 16, 2, 2), "f32", tag="nChw16c"), cl_engine)
    with pytest.raises(cly.InvalidArgumentError, match="plain layouts"):
        mem.to_cl_array()


def test_engines_on_one_context_are_one_engine(cl_engine):
    a = cly.Engine("opencl", context=cl_engine.context)
    b = cly.Engine("opencl", context=cl_engine.context)
    assert a == b == cl_engine and hash(a) == hash(b) and a is not b
    other = cly.Engine(cl_engine.kind, device=cl_engine.device)   # a context of its own
    assert other != a
    md = cly.MemoryDesc((3, 5), "f32")
    values = np.arange(15, dtype=np.float32).reshape(3, 5)
    src = cly.Memory.from_numpy(md, a, values)
    dst = cly.Memory(cly.MemoryDesc((3, 5), "f32", tag="ba"), b)
    r = cly.Reorder(md, dst.md, engine=cl_engine)
    stream = cly.Stream(a)
    r.execute(stream, src, dst)
    stream.wait()
    assert np.array_equal(dst.to_numpy(), values)
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.Memory(md, other, buffer=src)
    assert "context 0x" in str(info.value)        # the two sides read differently


def test_kernel_cache_lets_contexts_go(cl_engine):
    import pyopencl as cl

    gone = []
    for _ in range(3):
        context = cl.Context([cl_engine.device])
        engine = cly.Engine("opencl", context=context)
        md = cly.MemoryDesc((2, 3, 4), "f32")
        r = cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="cab"), engine=engine)
        src = cly.Memory.from_numpy(md, context, np.ones(md.dims, np.float32))
        dst = cly.Memory(r.dst_md, engine)
        stream = cly.Stream(engine)
        r.execute(stream, src, dst)
        stream.wait()
        assert (dst.to_numpy() == 1).all()
        gone.append(weakref.ref(context))
        del context, engine, r, src, dst, stream
    gc.collect()
    assert [ref() for ref in gone] == [None, None, None]


def test_kernel_cache_clear(cl_engine):
    md = cly.MemoryDesc((3, 7, 2), "u8")
    dst_md = cly.MemoryDesc(md.dims, "u8", tag="acb")
    cly.Reorder(md, dst_md, engine=cl_engine)
    assert len(cly.kernel_cache) >= 1
    cly.kernel_cache.clear()
    assert len(cly.kernel_cache) == 0
    before = cly.kernel_cache.builds
    cly.Reorder(md, dst_md, engine=cl_engine)
    assert cly.kernel_cache.builds == before + 1 and len(cly.kernel_cache) == 1


def test_one_kernel_is_built_once_by_racing_threads(cl_engine):
    import threading

    cly.kernel_cache.clear()
    md = cly.MemoryDesc((5, 3, 7), "s8")
    dst_md = cly.MemoryDesc(md.dims, "s8", tag="cab")
    before = cly.kernel_cache.builds
    threads = [threading.Thread(target=cly.Reorder, args=(md, dst_md),
                                kwargs={"engine": cl_engine}) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert cly.kernel_cache.builds == before + 1


def test_arrays_from_a_memory_pool_are_shared(cl_engine, queue):
    import pyopencl.array as cla
    import pyopencl.tools as cltools

    pool = cltools.MemoryPool(cltools.ImmediateAllocator(queue))
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    array = cla.to_device(queue, host, allocator=pool)
    mem = cly.Memory(cly.MemoryDesc.from_array(array), cl_engine, buffer=array)
    assert np.array_equal(mem.to_numpy(), host)


@pytest.mark.parametrize("tag", ["nchw", "nChw16c"])
def test_a_primitive_does_not_run_in_place(engine, tag):
    md = cly.MemoryDesc((2, 32, 3, 3), "f32", tag=tag)
    mem = cly.Memory.from_numpy(md, engine, np.ones(md.dims, np.float32))
    stream = cly.Stream(engine)
    for prim in (cly.Reorder(md, md, engine=engine),
                 cly.Shuffle(md, axis=1, group_size=4, engine=engine)):
        with pytest.raises(cly.InvalidArgumentError, match="share bytes"):
            prim.execute(stream, mem, mem)
    # Disjoint windows of one buffer are fine: one half into the other.
    parent = cly.MemoryDesc((2, 64, 3, 3), "f32", tag=tag)
    whole = cly.Memory.from_numpy(parent, engine, np.arange(2 * 64 * 9, dtype=np.float32)
                                  .reshape(parent.dims))
    low, high = (cly.Memory(parent.submemory(md.dims, (0, c, 0, 0)), engine, buffer=whole)
                 for c in (0, 32))
    cly.reorder(low, high)
    out = whole.to_numpy()
    assert np.array_equal(out[:, 32:], out[:, :32])
