"""Threads and events: launches safe from any thread, nothing blocks unasked,
reads wait for the writes clayout enqueued, the host path writes only its own
bytes even while another stream writes beside it."""
import os
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc

import ml_dtypes
import numpy as np
import pytest

import clayout as cly

@pytest.fixture(autouse=True)
def _f8_and_4bit_on_the_host(kernels_decline):
    """These tests drive the host fallback with f8 and 4-bit types, which
    had no kernels when they were written: keep those types there."""
    kernels_decline("f8_e5m2", "f8_e4m3", "s4", "u4")



def test_threads_sharing_one_reorder_lose_no_destination(cl_engine):
    src_md = cly.MemoryDesc((2, 40, 5, 7), "f32", tag="nchw")
    dst_md = cly.MemoryDesc(src_md.dims, "f32", tag="nhwc")
    reorder = cly.Reorder(src_md, dst_md, engine=cl_engine)
    results = [[] for _ in range(8)]

    def worker(t):
        stream = cly.Stream(cl_engine)
        for i in range(300):
            values = np.full(src_md.dims, t * 1000 + i, np.float32)
            values[0, 0, 0, 0] = -1 - i
            src = cly.Memory.from_numpy(src_md, cl_engine, values)
            dst = cly.Memory(dst_md, cl_engine)
            reorder.execute(stream, src, dst)
            results[t].append((values, dst))
        stream.wait()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(old)
    wrong = sum(not np.array_equal(dst.to_numpy(), values)
                for per_thread in results for values, dst in per_thread)
    assert sum(map(len, results)) == 2400 and wrong == 0


def _concat_parts(engine, dims, guard):
    """A prefilled nChw16c parent (with guard bytes after it) and its two
    channel halves as submemories."""
    parent_md = cly.MemoryDesc(dims, "f32", tag="nChw16c")
    raw = np.full(parent_md.size + guard, 0x5A, np.uint8)
    parent = cly.Memory(parent_md, engine, raw=raw)
    half = (dims[0], dims[1] // 2) + dims[2:]
    halves = [cly.Memory(parent_md.submemory(half, (0, c, 0, 0)), engine, buffer=parent)
              for c in (0, dims[1] // 2)]
    return parent, halves


@pytest.mark.parametrize("run", range(5))
def test_concurrent_concat_with_a_host_fallback_keeps_both_halves(cl_engine, run):
    import pyopencl as cl

    guard = 256
    parent, (low, high) = _concat_parts(cl_engine, (2, 64, 96, 96), guard)
    rng = np.random.default_rng(run)
    f8 = rng.integers(-60, 60, low.md.dims).astype(ml_dtypes.float8_e4m3fn)
    f32 = rng.standard_normal(high.md.dims).astype(np.float32)
    f8_md = cly.MemoryDesc(f8.shape, "f8_e4m3", tag="nchw")
    f32_md = cly.MemoryDesc(f32.shape, "f32", tag="nchw")
    on_device = cly.Reorder(f32_md, high.md, engine=cl_engine)
    on_host = cly.Reorder(f8_md, low.md, engine=cl_engine)
    assert on_device.impl == "ocl:generated" and on_host.impl.startswith("host:")
    a, b = cly.Stream(cl_engine), cly.Stream(cl_engine)
    f8_mem = cly.Memory.from_numpy(f8_md, cl_engine, f8)
    f32_mem = cly.Memory.from_numpy(f32_md, cl_engine, f32)
    # The kernel's half lands while the host path works on the other half.
    gate = cl.UserEvent(cl_engine.context)
    on_device.execute(b, f32_mem, high, wait_for=[gate])
    threading.Timer(0.02, gate.set_status, [cl.command_execution_status.COMPLETE]).start()
    on_host.execute(a, f8_mem, low)
    a.wait()
    b.wait()
    want = np.concatenate([f8.astype(np.float32), f32], axis=1)
    assert np.array_equal(parent.to_numpy(), want)
    assert (parent.raw()[-guard:] == 0x5A).all()


def test_host_fallback_partial_bytes_keep_their_neighbours(cl_engine):
    # An s4 submemory starting on an odd element shares its first byte with
    # an element outside it: that nibble must survive the write.
    parent_md = cly.MemoryDesc((2, 9), "s4")
    raw = np.full(parent_md.size, 0x77, np.uint8)
    parent = cly.Memory(parent_md, cl_engine, raw=raw)
    sub = cly.Memory(parent_md.submemory((2, 4), (0, 3)), cl_engine, buffer=parent)
    values = np.array([[-8, -1, 0, 7], [1, 2, -3, -4]], np.float32)
    src = cly.Memory.from_numpy(cly.MemoryDesc((2, 4), "f32"), cl_engine, values)
    r = cly.Reorder(src.md, sub.md, engine=cl_engine)
    assert r.impl.startswith("host:")
    stream = cly.Stream(cl_engine)
    r.execute(stream, src, sub)
    stream.wait()
    want = np.full((2, 9), 7, np.int8)
    want[:, 3:7] = values
    assert np.array_equal(parent.to_numpy().astype(np.int8), want)


HANG_PRELUDE = """
import sys, threading, numpy as np, pyopencl as cl, clayout as cly
eng = cly.Engine("opencl")
stream = cly.Stream(eng)
gate = cl.UserEvent(eng.context)
"""


def run_without_hanging(body, env=None, timeout=120):
    """Run a script that must reach print('returned') before the user event
    it waits on is set; the script ends by printing 'ok'."""
    script = textwrap.dedent(HANG_PRELUDE) + textwrap.dedent(body)
    environ = dict(os.environ, **(env or {}))
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=timeout, env=environ)
    except subprocess.TimeoutExpired as error:
        out = error.stdout.decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
        pytest.fail(f"hung: no exit within {timeout} s; printed {out!r}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["returned", "ok"], done.stdout + done.stderr
    return done


def test_verbose_does_not_block_execute(cl_engine):
    done = run_without_hanging("""
        md = cly.MemoryDesc((2, 3, 4), "f32")
        r = cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="cba"), engine=eng)
        values = np.arange(24, dtype=np.float32).reshape(md.dims)
        src, dst = cly.Memory.from_numpy(md, eng, values), cly.Memory(r.dst_md, eng)
        event = r.execute(stream, src, dst, wait_for=[gate])
        print("returned", flush=True)
        gate.set_status(cl.command_execution_status.COMPLETE)
        event.wait()
        assert np.array_equal(dst.to_numpy(), values)
        print("ok")
    """, env={"CLAYOUT_VERBOSE": "1"})
    assert "clayout_verbose,primitive,exec,opencl,reorder," in done.stderr


@pytest.mark.parametrize("case", ["f64 to f8", "7 dims", "s4 with sum"])
def test_host_fallback_does_not_block_execute(cl_engine, case):
    run_without_hanging("""
        import ml_dtypes
        case = CASE
        if case == "f64 to f8":  # a pair the kernels leave to the host (two roundings)
            src_md = cly.MemoryDesc((3, 5), "f64")
            dst_md = cly.MemoryDesc((3, 5), "f8_e5m2", tag="ba")
            values = 2.0 ** (np.arange(15, dtype=np.float64).reshape(3, 5) - 7)
            want = values.astype(ml_dtypes.float8_e5m2)
            attr = None
        elif case == "7 dims":
            src_md = cly.MemoryDesc((2,) * 7, "f32")
            dst_md = cly.MemoryDesc((2,) * 7, "f32", tag="gfedcba")
            values = np.arange(128, dtype=np.float32).reshape((2,) * 7)
            want, attr = values, None
        else:  # a packed destination read, changed and written back by the host
            from clayout.implementations import GeneratedKernel
            GeneratedKernel.decline = classmethod(lambda cls, p, e: "declined by the test")
            src_md = cly.MemoryDesc((4, 6), "s8")
            dst_md = cly.MemoryDesc((4, 6), "s4", tag="ba")
            values = (np.arange(24).reshape(4, 6) % 7 - 3).astype(np.int8)
            want = np.clip(np.rint(values + 0.5), -8, 7).astype(np.int8)  # old dst: all 1
            attr = cly.Attr(sum_beta=0.5)
        r = cly.Reorder(src_md, dst_md, engine=eng, attr=attr)
        assert r.impl.startswith("host:"), r.impl
        src = cly.Memory.from_numpy(src_md, eng, values)
        old = np.ones(dst_md.dims, dst_md.dtype.numpy)
        dst = cly.Memory.from_numpy(dst_md, eng, old)
        event = r.execute(stream, src, dst, wait_for=[gate])
        print("returned", flush=True)
        assert event.command_execution_status != cl.command_execution_status.COMPLETE
        threading.Timer(0.3, gate.set_status, [cl.command_execution_status.COMPLETE]).start()
        got = dst.to_numpy()   # waits for the pending write
        assert event.command_execution_status == cl.command_execution_status.COMPLETE
        assert got.tobytes() == np.asarray(want, dst_md.dtype.numpy).tobytes(), (got, want)
        print("ok")
    """.replace("CASE", repr(case)))


def test_to_numpy_waits_for_a_kernel_on_a_user_queue(cl_engine):
    import pyopencl as cl

    queue = cl.CommandQueue(cl_engine.context)
    md = cly.MemoryDesc((3, 32, 4, 4), "f32", tag="nchw")
    values = np.random.default_rng(5).standard_normal(md.dims).astype(np.float32)
    src = cly.Memory.from_numpy(md, cl_engine, values)
    dst = cly.Memory(cly.MemoryDesc(md.dims, "f32", tag="nChw16c"), cl_engine)
    gate = cl.UserEvent(cl_engine.context)
    event = cly.Reorder(md, dst.md, engine=cl_engine).execute(queue, src, dst, wait_for=[gate])
    assert event in dst.events
    threading.Timer(0.2, gate.set_status, [cl.command_execution_status.COMPLETE]).start()
    assert np.array_equal(dst.to_numpy(), values)   # not the zeros of before the kernel
    assert dst.events == []


def test_a_second_write_waits_for_the_first_on_another_queue(cl_engine):
    import pyopencl as cl

    md = cly.MemoryDesc((4, 64), "f32")
    ones = cly.Memory.from_numpy(md, cl_engine, np.ones(md.dims, np.float32))
    twos = cly.Memory.from_numpy(md, cl_engine, np.full(md.dims, 2, np.float32))
    dst = cly.Memory(cly.MemoryDesc(md.dims, "f32", tag="ba"), cl_engine)
    r = cly.Reorder(md, dst.md, engine=cl_engine)
    gate = cl.UserEvent(cl_engine.context)
    r.execute(cly.Stream(cl_engine), ones, dst, wait_for=[gate])
    r.execute(cly.Stream(cl_engine), twos, dst)      # ordered after the gated write
    time.sleep(0.1)
    gate.set_status(cl.command_execution_status.COMPLETE)
    assert (dst.to_numpy() == 2).all()


def test_from_numpy_and_to_numpy_take_queue_and_wait_for(cl_engine, monkeypatch):
    import dataclasses

    import pyopencl as cl

    monkeypatch.setattr(cl_engine, "caps",
                        dataclasses.replace(cl_engine.caps, convert_on_device_bytes=0))
    queue = cl.CommandQueue(cl_engine.context)
    md = cly.MemoryDesc((2, 20, 3, 3), "f32", tag="nChw16c")
    values = np.random.default_rng(8).standard_normal(md.dims).astype(np.float32)
    gate = cl.UserEvent(cl_engine.context)
    mem = cly.Memory.from_numpy(md, cl_engine, values, queue=queue, wait_for=[gate])
    values_copy = values.copy()
    values[...] = 0   # taken before from_numpy returned
    assert mem.events
    threading.Timer(0.2, gate.set_status, [cl.command_execution_status.COMPLETE]).start()
    assert np.array_equal(mem.to_numpy(queue=queue), values_copy)
    later = cl.UserEvent(cl_engine.context)
    threading.Timer(0.2, later.set_status, [cl.command_execution_status.COMPLETE]).start()
    assert np.array_equal(mem.to_numpy(queue=cly.Stream(cl_engine), wait_for=[later]),
                          values_copy)
    assert later.command_execution_status == cl.command_execution_status.COMPLETE


def test_new_memory_is_filled_on_the_device(cl_engine):
    md = cly.MemoryDesc((16, 1024, 1024), "f32")  # 64 MiB
    tracemalloc.start()
    try:
        mem = cly.Memory(md, cl_engine)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{peak} bytes of host memory to zero-fill a device buffer"
    assert not mem.raw()[:: 4096].any()


@pytest.mark.parametrize("tag", ["nchw", "nhwc", "nChw16c"])
@pytest.mark.parametrize("on_device", [False, True])
def test_transfers_need_at_most_one_extra_copy(cl_engine, monkeypatch, tag, on_device):
    import dataclasses

    threshold = 0 if on_device else 1 << 40
    monkeypatch.setattr(cl_engine, "caps",
                        dataclasses.replace(cl_engine.caps, convert_on_device_bytes=threshold))
    md = cly.MemoryDesc((4, 64, 64, 64), "f32", tag=tag)  # 4 MiB
    values = np.random.default_rng(1).standard_normal(md.dims).astype(np.float32)
    tracemalloc.start()
    try:
        mem = cly.Memory.from_numpy(md, cl_engine, values)
        _, up = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        out = mem.to_numpy()
        _, down = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.array_equal(out, values)
    limit = values.nbytes * 1.1 if tag != "nchw" and not on_device else 1 << 20
    assert up < limit, f"from_numpy used {up} bytes of host memory"
    assert down - base - out.nbytes < limit, f"to_numpy used {down - base} bytes"


def _wait_until_done(event, timeout=30.0):
    """Poll an event (never blocks the test for ever); True once it has ended."""
    import pyopencl as cl

    deadline = time.monotonic() + timeout
    while event.command_execution_status > cl.command_execution_status.COMPLETE:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.parametrize("dt", ["s8", "f8_e5m2"])   # a kernel, and the host path
def test_a_failed_write_is_reported_not_read_as_data(cl_engine, dt):
    import pyopencl as cl

    md = cly.MemoryDesc((4, 8), "f32")
    src = cly.Memory.from_numpy(md, cl_engine, np.ones(md.dims, np.float32))
    dst = cly.Memory(cly.MemoryDesc(md.dims, dt, tag="ba"), cl_engine)
    gate = cl.UserEvent(cl_engine.context)
    event = cly.Reorder(md, dst.md, engine=cl_engine).execute(cly.Stream(cl_engine), src, dst,
                                                              wait_for=[gate])
    gate.set_status(-1)   # the caller's event failed: the write never happens
    assert _wait_until_done(event)
    with pytest.raises(cly.ExecutionError, match="failed"):
        dst.to_numpy()
    assert dst.to_numpy().shape == md.dims   # reported once; the bytes are undefined


def test_a_failing_host_path_fails_its_event_and_blocks_nothing(cl_engine, monkeypatch):
    import clayout.host.reorder

    def broken(*args, **kwargs):
        raise MemoryError("no room")

    monkeypatch.setattr(clayout.host.reorder, "reorder", broken)
    md = cly.MemoryDesc((3, 5), "f32")
    src = cly.Memory.from_numpy(md, cl_engine, np.ones(md.dims, np.float32))
    dst = cly.Memory(cly.MemoryDesc(md.dims, "f8_e4m3"), cl_engine)
    stream = cly.Stream(cl_engine)
    with pytest.warns(RuntimeWarning, match="no room"):
        event = cly.Reorder(md, dst.md, engine=cl_engine).execute(stream, src, dst)
        assert _wait_until_done(event)
    assert event.command_execution_status < 0
    with pytest.raises(cly.ExecutionError):
        dst.to_numpy()


def test_memories_over_one_buffer_share_their_pending_writes(cl_engine):
    import pyopencl as cl

    md = cly.MemoryDesc((4, 16), "f32")
    buffer = cl.Buffer(cl_engine.context, cl.mem_flags.READ_WRITE, md.size)
    parent = cly.Memory(md, cl_engine, buffer=buffer)
    cly.reorder(cly.Memory.from_numpy(md, cl_engine, np.zeros(md.dims, np.float32)), parent)
    row = cly.Memory(md.submemory((1, 16), (2, 0)), cl_engine, buffer=buffer)  # not via parent
    src = cly.Memory.from_numpy(cly.MemoryDesc((1, 16), "f32"), cl_engine,
                                np.full((1, 16), 3, np.float32))
    gate = cl.UserEvent(cl_engine.context)
    event = cly.Reorder(src.md, row.md, engine=cl_engine).execute(cly.Stream(cl_engine), src, row,
                                                                 wait_for=[gate])
    assert event in parent.events
    threading.Timer(0.2, gate.set_status, [cl.command_execution_status.COMPLETE]).start()
    want = np.zeros(md.dims, np.float32)
    want[2] = 3
    assert np.array_equal(parent.to_numpy(), want)


def test_disjoint_windows_are_written_concurrently(cl_engine):
    import pyopencl as cl

    parent, (low, high) = _concat_parts(cl_engine, (1, 32, 4, 4), 0)
    src = cly.Memory.from_numpy(cly.MemoryDesc((1, 16, 4, 4), "f32"), cl_engine,
                                np.full((1, 16, 4, 4), 5, np.float32))
    gate = cl.UserEvent(cl_engine.context)
    held = cly.Reorder(src.md, low.md, engine=cl_engine).execute(
        cly.Stream(cl_engine), src, low, wait_for=[gate])
    free = cly.Reorder(src.md, high.md, engine=cl_engine).execute(
        cly.Stream(cl_engine), src, high)                # waits for nothing of low's
    assert _wait_until_done(free, 10)
    assert held.command_execution_status > cl.command_execution_status.COMPLETE
    assert held in parent.events and held not in high.events
    gate.set_status(cl.command_execution_status.COMPLETE)
    assert (parent.to_numpy() == 5).all()


def test_transfer_queues_are_checked_on_every_path(engine):
    md = cly.MemoryDesc((2, 3), "f32")
    values = np.zeros(md.dims, np.float32)
    for call in (lambda: cly.Memory.from_numpy(md, engine, values, queue="nope"),
                 lambda: cly.Memory.from_numpy(md, engine, values).to_numpy(queue="nope"),
                 lambda: cly.Memory.from_numpy(md, engine, values).raw(queue="nope")):
        with pytest.raises(cly.InvalidArgumentError, match="'nope'"):
            call()


def test_a_gated_transfer_stalls_no_other_memory(cl_engine):
    # The engine's own queues never hold a command that waits on a caller's event.
    run_without_hanging("""
        other = cly.Memory.from_numpy(cly.MemoryDesc((4,), "f32"), eng,
                                      np.arange(4, dtype=np.float32))
        md = cly.MemoryDesc((2, 17, 3, 3), "f32", tag="nChw16c")
        values = np.random.default_rng(0).standard_normal(md.dims).astype(np.float32)
        gated = cly.Memory.from_numpy(md, eng, values, wait_for=[gate])
        fresh = cly.Memory(md, eng)
        assert other.to_numpy().tolist() == [0, 1, 2, 3] and not fresh.to_numpy().any()
        print("returned", flush=True)
        threading.Timer(0.2, gate.set_status, [cl.command_execution_status.COMPLETE]).start()
        assert np.array_equal(gated.to_numpy(), values)
        late = cl.UserEvent(eng.context)
        threading.Timer(0.2, late.set_status, [cl.command_execution_status.COMPLETE]).start()
        assert np.array_equal(gated.to_numpy(wait_for=[late]), values)
        print("ok")
    """, env={"CLAYOUT_CONVERT_ON_DEVICE_BYTES": "0"})


@pytest.mark.parametrize("on_device", [False, True])
def test_from_numpy_zero_fills_around_a_window(cl_engine, monkeypatch, on_device):
    import dataclasses

    monkeypatch.setattr(cl_engine, "caps", dataclasses.replace(
        cl_engine.caps, convert_on_device_bytes=0 if on_device else 1 << 60))
    parent = cly.MemoryDesc((2, 64, 8, 8), "f32", tag="nchw")
    for _ in range(3):   # leave a pattern in memory the driver may hand out again
        cly.Memory(parent, cl_engine, raw=np.full(parent.size, 0xAB, np.uint8)).raw()
    md = parent.submemory((2, 32, 8, 8), (0, 32, 0, 0))
    mem = cly.Memory.from_numpy(md, cl_engine, np.ones(md.dims, np.float32))
    raw = mem.raw().view(np.float32).reshape(parent.dims)
    assert (raw[:, 32:] == 1).all() and not raw[:, :32].any()


@pytest.mark.parametrize("verbose", ["0", "1"])
def test_exiting_with_host_work_in_flight_exits_cleanly(cl_engine, verbose):
    # A daemon thread blocked inside pyopencl at exit aborts the process
    # ("terminate called without an active exception"); clayout's do not.
    script = textwrap.dedent("""
        import numpy as np, clayout as cly
        eng = cly.Engine("opencl")
        md = cly.MemoryDesc((8,) * 7, "f32")                  # 7 dims: the host path
        dst_md = cly.MemoryDesc(md.dims, "f32", tag="gfedcba")
        src = cly.Memory.from_numpy(md, eng, np.ones(md.dims, md.dtype.numpy))
        r = cly.Reorder(md, dst_md, engine=eng)
        assert r.impl.startswith("host:")
        r.execute(cly.Stream(eng), src, cly.Memory(dst_md, eng))   # not waited for
    """)
    env = dict(os.environ, CLAYOUT_VERBOSE=verbose)
    codes = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, env=env).returncode for _ in range(3)]
    assert codes == [0, 0, 0]


@pytest.mark.parametrize("case", ["runtime kernel", "runtime host path", "cpu2gpu", "gpu2cpu"])
def test_runtime_dims_and_cross_engine_do_not_block_execute(cl_engine, case):
    """The paths issue 13 added return before the user event they wait on is
    set, and finish right after it, in a process that cannot hang the suite."""
    run_without_hanging(f"""
        case = {case!r}
        R = cly.RUNTIME_DIM
        dims = (2, 19, 3, 5)
        values = (np.arange(np.prod(dims)) % 7 - 3).astype(np.float32).reshape(dims)
        host = cly.Engine("host")
        if case.startswith("runtime"):
            ddt = "s4" if case == "runtime host path" else "f32"
            src_p = cly.MemoryDesc((R, 19, R, R), "f32", tag="nchw")
            dst_p = cly.MemoryDesc((R, 19, R, R), ddt, tag="nChw16c")
            r = cly.Reorder(src_p, dst_p, engine=eng)
            src = cly.Memory.from_numpy(src_p.with_dims(dims), eng, values)
            dst = cly.Memory(dst_p.with_dims(dims), eng)
        else:
            src_md = cly.MemoryDesc(dims, "f32", tag="nchw")
            dst_md = cly.MemoryDesc(dims, "f32", tag="nChw16c")
            up = case == "cpu2gpu"
            src_eng, dst_eng = (host, eng) if up else (eng, host)
            r = cly.Reorder(src_md, dst_md, src_engine=src_eng, dst_engine=dst_eng)
            src = cly.Memory.from_numpy(src_md, src_eng, values)
            dst = cly.Memory(dst_md, dst_eng)
        stream.wait()
        event = r.execute(stream, src, dst, wait_for=[gate])
        print("returned", flush=True)
        gate.set_status(cl.command_execution_status.COMPLETE)
        event.wait()
        assert np.array_equal(dst.to_numpy().astype(np.float32), values), r.impl
        print("ok")
    """)


@pytest.mark.parametrize("tag", ["nhwc", "nChw16c"], ids=["one copy", "staged"])
def test_memory_write_and_read_do_not_block(cl_engine, tag):
    """Memory.write and read gated on a shut user event return at once, in
    one copy (the array lies as the memory does) or through the device's
    layout change; the values arrive once the gate opens."""
    run_without_hanging(f"""
        values = np.arange(2 * 19 * 3 * 5, dtype=np.float32).reshape(2, 19, 3, 5)
        mem = cly.Memory(cly.MemoryDesc(values.shape, "f32", tag="{tag}"), eng)
        written = mem.write(values, wait_for=[gate])
        out, read = mem.read(wait_for=[written])
        print("returned", flush=True)
        gate.set_status(cl.command_execution_status.COMPLETE)
        read.wait()
        assert np.array_equal(out, values), out
        print("ok")
    """)


@pytest.mark.parametrize("groups", [(1, 32), (4, 32)], ids=["kernel", "reorders-around"])
def test_quantize_does_not_block(cl_engine, groups):
    """Quantize gated on a shut user event returns at once, its own kernel
    alone or with device reorders around it (clayout/quantize_route.py:
    temporaries kept until the last event); the values arrive once the gate
    opens, as the host path computes them."""
    run_without_hanging(f"""
        x = np.random.default_rng(0).standard_normal((16, 64)).astype(np.float32)
        md = cly.MemoryDesc(x.shape, "f32")
        q = cly.Quantize(md, "u4", scheme="asymmetric", mask=3, groups={groups!r}, engine=eng)
        h = cly.Quantize(md, "u4", scheme="asymmetric", mask=3, groups={groups!r},
                         engine=cly.Engine("host"))
        assert q.runs_kernel and ("reorder in" in q.impl) == ({groups[0]} > 1), q.impl
        outs = [cly.Memory(m, eng) for m in (q.dst_md, q.scales_md, q.zero_points_md)]
        src = cly.Memory.from_numpy(md, eng, x)
        event = q.execute(stream, src, *outs, wait_for=[gate])
        print("returned", flush=True)
        assert event.command_execution_status != cl.command_execution_status.COMPLETE
        gate.set_status(cl.command_execution_status.COMPLETE)
        host = cly.Engine("host")
        want = [cly.Memory(m, host) for m in (h.dst_md, h.scales_md, h.zero_points_md)]
        h.execute(cly.Stream(host), cly.Memory.from_numpy(md, host, x), *want)
        for got, ref in zip(outs, want):
            assert got.raw().tobytes() == ref.raw().tobytes()
        print("ok")
    """)


def test_quantize_route_never_shares_buffers_in_flight(cl_engine):
    """A routed Quantize keeps its temporaries for the next execute
    (quantize_route.Temporaries), but not while a command still uses them:
    an execute gated on a shut user event holds its buffers, so a second
    execute on another stream takes new ones; both give the host path's
    bytes, and once both completed the next execute allocates nothing."""
    run_without_hanging("""
        import time
        md = cly.MemoryDesc((32, 256), "f32")
        kw = dict(scheme="asymmetric", mask=3, groups=(4, 32))
        q = cly.Quantize(md, "u4", engine=eng, **kw)
        assert "reorder in + quantize + reorder out" in q.impl, q.impl
        host = cly.Engine("host")
        h = cly.Quantize(md, "u4", engine=host, **kw)
        allocations, taken = [], []
        allocate = eng.backend.allocate
        eng.backend.allocate = lambda m, n, data=None: allocations.append(n) or allocate(m, n, data)
        take = q._temporaries.take
        q._temporaries.take = lambda m: taken.append(take(m)) or taken[-1]

        def run(x, s, wait_for=None):
            outs = [cly.Memory(m, eng) for m in (q.dst_md, q.scales_md, q.zero_points_md)]
            src = cly.Memory.from_numpy(md, eng, x)
            before = len(allocations)
            event = q.execute(s, src, *outs, wait_for=wait_for)
            return event, outs, len(allocations) - before

        def check(x, outs):
            want = [cly.Memory(m, host) for m in (h.dst_md, h.scales_md, h.zero_points_md)]
            h.execute(cly.Stream(host), cly.Memory.from_numpy(md, host, x), *want)
            for got, ref in zip(outs, want):
                assert got.raw().tobytes() == ref.raw().tobytes()

        rng = np.random.default_rng(0)
        xs = [rng.standard_normal(md.dims).astype(np.float32) for _ in range(3)]
        gated, gated_outs, first = run(xs[0], stream, [gate])
        print("returned", flush=True)
        other = cly.Stream(eng)
        done, done_outs, second = run(xs[1], other)
        done.wait()
        assert first == 2 and second == 2, (first, second)  # in flight: new buffers
        assert len(taken) == 4 and not {id(b) for b in taken[:2]} & {id(b) for b in taken[2:]}
        check(xs[1], done_outs)
        gate.set_status(cl.command_execution_status.COMPLETE)
        gated.wait()
        check(xs[0], gated_outs)
        # The buffers come back on a watcher thread: 4, two of each size
        # (the f32 copy and the values' copy differ in size; 2 kept of each).
        for _ in range(1000):
            if q._temporaries.free_count() == 4:
                break
            time.sleep(0.01)
        assert q._temporaries.free_count() == 4, q._temporaries.free_count()
        last, last_outs, third = run(xs[2], other)
        last.wait()
        assert third == 0, third
        check(xs[2], last_outs)
        print("ok")
    """)
