"""Writes wait for the reads still running (issue 33): every command clayout
enqueues records itself as a pending read of what it reads (its source, the
values it takes as memories), and a command that writes a memory waits for
the pending reads of its bytes as for the pending writes, on any queue,
out-of-order ones included. A read that fails fails no write.

Each reader here waits on a user event the test controls; nothing blocks
before the test sets it (a wrong wait would fail an assertion, not hang),
and every wait on an event polls under a time limit.
"""
import os
import threading
import time

import numpy as np
import pytest

import clayout as cly

#: pyopencl queues and user events with the device engine: not the SYCL pass.
pytestmark = pytest.mark.opencl_only


def _cl():
    import pyopencl as cl
    return cl


def _out_of_order_queue(engine):
    """An out-of-order pyopencl queue of the engine's context. Skipped (under
    CI: failed) only where the device has none."""
    cl = _cl()
    mode = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    if not engine.device.queue_properties & mode:
        message = f"{engine.device.name.strip()} has no out-of-order queues"
        if os.environ.get("CI"):
            pytest.fail(message + " -- CI runs on implementations that have them",
                        pytrace=False)
        pytest.skip(message)
    return cl.CommandQueue(engine.context, engine.device, properties=mode)


def _ended(*events, timeout=30.0) -> bool:
    """Poll ``events`` (never blocks for ever); True once all have ended."""
    cl = _cl()
    deadline = time.monotonic() + timeout
    while any(e.command_execution_status > cl.command_execution_status.COMPLETE
              for e in events):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _pending(event) -> bool:
    return event.command_execution_status > _cl().command_execution_status.COMPLETE


MD = cly.MemoryDesc((8, 64), "f32")
OLD = np.arange(512, dtype=np.float32).reshape(MD.dims)
NEW = -OLD - 1


def _settled(engine, *memories):
    """Wait for the writes that made ``memories`` (so that only the test's
    own events are pending)."""
    for memory in memories:
        assert _ended(*memory.events)
    engine.queue.finish()


@pytest.mark.parametrize("writer", ["kernel", "kernel on another queue",
                                    "host path on another queue",
                                    "cross-engine upload on another queue"])
def test_a_write_waits_for_a_read_still_running_on_an_out_of_order_queue(cl_engine, writer,
                                                                           kernels_decline):
    # (Host work on the reader's own out-of-order queue starts behind a
    # marker that waits for all before it: another queue shows the wait.)
    cl = _cl()
    queue = _out_of_order_queue(cl_engine)
    a = cly.Memory.from_numpy(MD, cl_engine, OLD)
    b = cly.Memory(cly.MemoryDesc(MD.dims, "f32", tag="ba"), cl_engine)
    if writer.startswith("host path"):  # f16 has kernels: decline them to write through the host
        kernels_decline("f16")
        new_md = cly.MemoryDesc(MD.dims, "f16")
        write = cly.Reorder(new_md, MD, engine=cl_engine)
        assert write.impl.startswith("host:")
        new = cly.Memory.from_numpy(new_md, cl_engine, NEW.astype(np.float16))
    elif writer.startswith("cross-engine upload"):
        write = cly.Reorder(MD, MD, src_engine=cly.Engine("host"), dst_engine=cl_engine)
        new = cly.Memory.from_numpy(MD, write.src_engine, NEW)
    else:
        write = cly.Reorder(MD, MD, engine=cl_engine)
        new = cly.Memory.from_numpy(MD, cl_engine, NEW)
    read = cly.Reorder(MD, b.md, engine=cl_engine)
    _settled(cl_engine, a, b, new)
    gate = cl.UserEvent(cl_engine.context)
    reader = read.execute(queue, a, b, wait_for=[gate])   # a slow read of a
    writer_queue = cly.Stream(cl_engine) if writer.endswith("another queue") else queue
    wrote = write.execute(writer_queue, new, a)            # then a write of a
    time.sleep(0.2)
    assert _pending(reader)
    assert _pending(wrote), f"the write ({write.impl}) did not wait for the read of its dst"
    gate.set_status(cl.command_execution_status.COMPLETE)
    assert _ended(reader, wrote)
    assert wrote.command_execution_status == cl.command_execution_status.COMPLETE
    assert np.array_equal(b.to_numpy(), OLD), "the read saw the later write"
    assert np.array_equal(a.to_numpy(), NEW)


def test_a_write_waits_for_a_download_still_reading(cl_engine):
    cl = _cl()
    queue = _out_of_order_queue(cl_engine)
    host = cly.Engine("host")
    a = cly.Memory.from_numpy(MD, cl_engine, OLD)
    new = cly.Memory.from_numpy(MD, cl_engine, NEW)
    down = cly.Reorder(MD, MD, src_engine=cl_engine, dst_engine=host)
    write = cly.Reorder(MD, MD, engine=cl_engine)
    back = cly.Memory(MD, host)
    _settled(cl_engine, a, new)
    gate = cl.UserEvent(cl_engine.context)
    reader = down.execute(queue, a, back, wait_for=[gate])
    wrote = write.execute(queue, new, a)
    time.sleep(0.2)
    assert _pending(reader) and _pending(wrote)
    gate.set_status(cl.command_execution_status.COMPLETE)
    assert _ended(reader, wrote)
    assert np.array_equal(back.to_numpy(), OLD) and np.array_equal(a.to_numpy(), NEW)


def test_a_write_of_values_waits_for_the_reorder_reading_them(cl_engine):
    cl = _cl()
    queue = _out_of_order_queue(cl_engine)
    scales_md = cly.MemoryDesc((8,), "f32")
    scaled = cly.Reorder(MD, MD, engine=cl_engine,
                         attr=cly.Attr(src_scales=cly.Scales(mask=1)))
    copy = cly.Reorder(scales_md, scales_md, engine=cl_engine)
    scales = cly.Memory.from_numpy(scales_md, cl_engine, np.full(8, 2, np.float32))
    other = cly.Memory.from_numpy(scales_md, cl_engine, np.full(8, 5, np.float32))
    src = cly.Memory.from_numpy(MD, cl_engine, OLD)
    dst = cly.Memory(MD, cl_engine)
    _settled(cl_engine, scales, other, src, dst)
    gate = cl.UserEvent(cl_engine.context)
    reader = scaled.execute(queue, src, dst, wait_for=[gate], src_scales=scales)
    wrote = copy.execute(queue, other, scales)
    time.sleep(0.2)
    assert _pending(reader) and _pending(wrote)
    gate.set_status(cl.command_execution_status.COMPLETE)
    assert _ended(reader, wrote)
    assert np.array_equal(dst.to_numpy(), 2 * OLD) and (scales.to_numpy() == 5).all()


def test_a_write_waits_only_for_reads_of_the_bytes_it_writes(cl_engine):
    cl = _cl()
    queue = _out_of_order_queue(cl_engine)
    parent_md = cly.MemoryDesc((1, 32, 4, 4), "f32", tag="nChw16c")
    half = (1, 16, 4, 4)
    parent = cly.Memory.from_numpy(parent_md, cl_engine,
                                   np.ones(parent_md.dims, np.float32))
    low, high = (cly.Memory(parent_md.submemory(half, (0, c, 0, 0)), cl_engine, buffer=parent)
                 for c in (0, 16))
    fives = cly.Memory.from_numpy(cly.MemoryDesc(half, "f32"), cl_engine,
                                  np.full(half, 5, np.float32))
    sevens = cly.Memory.from_numpy(parent_md, cl_engine, np.full(parent_md.dims, 7, np.float32))
    out = cly.Memory(cly.MemoryDesc(half, "f32"), cl_engine)
    _settled(cl_engine, parent, fives, sevens, out)
    gate = cl.UserEvent(cl_engine.context)
    reader = cly.Reorder(low.md, out.md, engine=cl_engine).execute(queue, low, out,
                                                                   wait_for=[gate])
    beside = cly.Reorder(fives.md, high.md, engine=cl_engine).execute(queue, fives, high)
    assert _ended(beside, timeout=10), "a write of the other half waited for the read"
    assert _pending(reader)
    whole = cly.Reorder(parent_md, parent_md, engine=cl_engine).execute(queue, sevens, parent)
    time.sleep(0.2)
    assert _pending(whole), "a write of the whole buffer did not wait for the read of a half"
    gate.set_status(cl.command_execution_status.COMPLETE)
    assert _ended(reader, whole)
    assert (out.to_numpy() == 1).all() and (parent.to_numpy() == 7).all()


def test_a_failed_read_fails_no_write(cl_engine):
    # Two in-order queues: Intel's runtime crashes in clFinish, or when the
    # queue is released, on an out-of-order queue that held a clayout command
    # after a failed user event (clayout before issue 33 too).
    cl = _cl()
    a = cly.Memory.from_numpy(MD, cl_engine, OLD)
    b = cly.Memory(cly.MemoryDesc(MD.dims, "f32", tag="ba"), cl_engine)
    new = cly.Memory.from_numpy(MD, cl_engine, NEW)
    read, write = cly.Reorder(MD, b.md, engine=cl_engine), cly.Reorder(MD, MD, engine=cl_engine)
    _settled(cl_engine, a, b, new)
    gate = cl.UserEvent(cl_engine.context)
    reader = read.execute(cly.Stream(cl_engine), a, b, wait_for=[gate])
    wrote = write.execute(cly.Stream(cl_engine), new, a)   # waits for the read, which fails
    time.sleep(0.1)
    assert _pending(wrote)
    gate.set_status(-1)
    assert _ended(reader, wrote)
    assert reader.command_execution_status < 0
    assert wrote.command_execution_status == cl.command_execution_status.COMPLETE
    assert np.array_equal(a.to_numpy(), NEW)   # no ExecutionError: the write succeeded
    with pytest.raises(cly.ExecutionError):    # the failed read's destination is undefined
        b.to_numpy()


def test_pending_reads_stay_few(cl_engine):
    queue = _out_of_order_queue(cl_engine)
    a = cly.Memory.from_numpy(MD, cl_engine, OLD)
    b = cly.Memory(MD, cl_engine)
    read = cly.Reorder(MD, MD, engine=cl_engine)
    for _ in range(200):
        read.execute(queue, a, b)
    queue.finish()
    read.execute(queue, a, b)
    assert len(a._pending.reads._entries) == 1   # the finished ones were dropped
    stream = cly.Stream(cl_engine)              # an in-order queue: the last stands for all
    for _ in range(50):
        read.execute(stream, a, b)
    assert len(a._pending.reads._entries) <= 2
    stream.wait()


def test_threads_reading_and_writing_one_memory_see_whole_values(cl_engine):
    """Readers transpose ``a`` while a writer fills it with one value at a
    time (a buffer copy, faster than a read), each thread on its own
    out-of-order queue: every transpose holds one value, never parts of
    two writes."""
    md = cly.MemoryDesc((256, 1024), "f32")
    out_md = cly.MemoryDesc(md.dims, "f32", tag="ba")
    a = cly.Memory.from_numpy(md, cl_engine, np.zeros(md.dims, np.float32))
    fills = [cly.Memory.from_numpy(md, cl_engine, np.full(md.dims, v, np.float32))
             for v in range(1, 5)]
    fill, transpose = cly.Reorder(md, md, engine=cl_engine), cly.Reorder(md, out_md,
                                                                        engine=cl_engine)
    _settled(cl_engine, a, *fills)
    copies = {t: [] for t in range(2)}
    errors = []

    def writer():
        try:
            own = _out_of_order_queue(cl_engine)
            for i in range(40):
                fill.execute(own, fills[i % 4], a)
            own.finish()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    def reader(t):
        try:
            own = _out_of_order_queue(cl_engine)
            for _ in range(20):
                out = cly.Memory(out_md, cl_engine)
                transpose.execute(own, a, out)
                copies[t].append(out)
            own.finish()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=writer)] + \
        [threading.Thread(target=reader, args=(t,)) for t in copies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors and not any(t.is_alive() for t in threads), errors
    torn = [out for outs in copies.values() for out in outs
            if len(np.unique(out.to_numpy())) != 1]
    assert not torn, f"{len(torn)} of 40 transposes mix two writes"
