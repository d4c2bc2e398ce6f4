"""The SYCL engine (dpctl): queues, USM memories, events, the same kernels
built from OpenCL C and from SPIR-V, cross-engine copies and bad input.

Runs on the SYCL queues of Intel's OpenCL CPU runtime (CLAYOUT_TEST_PLATFORM
=sycl or intel selects it). Every result is compared with the host engine's
bytes. Under CI a missing dpctl or runtime fails these tests."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import clayout as cly

#: On Intel's runtime: the PoCL pass leaves these out (conftest.py).
pytestmark = pytest.mark.needs_intel


def _need_sycl():
    try:
        import dpctl
        return dpctl
    except ImportError as error:
        if os.environ.get("CI"):
            pytest.fail(f"dpctl is missing ({error}) -- CI requires it", pytrace=False)
        pytest.skip(f"dpctl is missing: {error}")


@pytest.fixture(scope="module")
def dpctl():
    return _need_sycl()


@pytest.fixture(scope="module")
def sycl(dpctl):
    try:
        return cly.Engine("sycl", device="opencl:cpu")
    except cly.UnimplementedError as error:
        if os.environ.get("CI"):
            pytest.fail(f"{error} -- CI requires a SYCL CPU device", pytrace=False)
        pytest.skip(str(error))


HOST = cly.Engine("host")


def _host_bytes(src_md, dst_md, array, attr=None):
    src = cly.Memory.from_numpy(src_md, HOST, array)
    dst = cly.Memory(dst_md, HOST)
    cly.Reorder(src_md, dst_md, engine=HOST, attr=attr).execute(cly.Stream(HOST), src, dst)
    return dst.raw()


def _sycl_bytes(engine, src_md, dst_md, array, attr=None):
    src = cly.Memory.from_numpy(src_md, engine, array)
    dst = cly.Memory(dst_md, engine)
    prim = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
    event = prim.execute(cly.Stream(engine), src, dst)
    event.wait()
    return prim, dst.raw()


CASES = [
    ("f32 nchw -> nhwc", (2, 19, 5, 7), "f32", "nchw", "f32", "nhwc", None),
    ("f32 nchw -> nChw16c", (2, 19, 5, 7), "f32", "nchw", "f32", "nChw16c", None),
    ("f32 -> bf16 nChw16c", (2, 19, 5, 7), "f32", "nchw", "bf16", "nChw16c", None),
    ("f32 -> s8 per-channel", (2, 19, 5, 7), "f32", "nchw", "s8", "nhwc",
     cly.Attr(dst_scales=cly.Scales(mask=2, values=np.linspace(0.5, 2, 19)))),
    ("oihw -> OIhw4i16o4i s8", (20, 19, 3, 3), "s8", "oihw", "s8", "OIhw4i16o4i", None),
    ("u8 -> f32 zero point", (3, 40), "u8", "ab", "f32", "ba",
     cly.Attr(src_zero_points=cly.ZeroPoints(values=[7]))),
]


@pytest.mark.parametrize("strategy", ["cpu", "gpu"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_reorders_match_the_host(dpctl, sycl, case, strategy, monkeypatch):
    _, dims, st, stag, dt, dtag, attr = case
    monkeypatch.setenv("CLAYOUT_STRATEGY", strategy)
    engine = cly.Engine("sycl", device=sycl.device)
    monkeypatch.delenv("CLAYOUT_STRATEGY")
    src_md, dst_md = cly.MemoryDesc(dims, st, tag=stag), cly.MemoryDesc(dims, dt, tag=dtag)
    rng = np.random.default_rng(1)
    array = rng.integers(0, 100, dims) if st in ("u8", "s8") else rng.standard_normal(dims)
    array = array.astype(src_md.dtype.numpy)
    prim, got = _sycl_bytes(engine, src_md, dst_md, array, attr)
    assert prim.impl == "sycl:generated"
    assert got.tobytes() == _host_bytes(src_md, dst_md, array, attr).tobytes()


def test_grouped_decompression_and_shuffle_match_the_host(sycl):
    dims = (64, 96)
    scales = cly.Scales(mask=3, groups=(32, 1), values=np.linspace(0.01, 0.5, 2 * 96))
    points = cly.ZeroPoints(mask=3, groups=(32, 1), data_type="u4",
                            values=np.arange(2 * 96) % 16)
    attr = cly.Attr(src_scales=scales, src_zero_points=points)
    src_md, dst_md = cly.MemoryDesc(dims, "u4", tag="ab"), cly.MemoryDesc(dims, "f16", tag="ab")
    array = (np.arange(np.prod(dims)) % 16).reshape(dims).astype(src_md.dtype.numpy)
    prim, got = _sycl_bytes(sycl, src_md, dst_md, array, attr)
    assert prim.impl == "sycl:generated"
    assert got.tobytes() == _host_bytes(src_md, dst_md, array, attr).tobytes()

    md = cly.MemoryDesc((2, 48, 5, 3), "f32", tag="nChw16c")
    x = np.random.default_rng(2).standard_normal(md.dims).astype(np.float32)
    out = []
    for engine in (sycl, HOST):
        src, dst = cly.Memory.from_numpy(md, engine, x), cly.Memory(md, engine)
        cly.shuffle(src, dst, axis=1, group_size=4)
        out.append(dst.raw())
    assert out[0].tobytes() == out[1].tobytes()


def test_engine_queue_stream_and_events(dpctl, sycl):
    queue = dpctl.SyclQueue(sycl.context, sycl.device, property="in_order")
    engine = cly.Engine("sycl", queue=queue)
    assert engine == sycl and engine.queue is queue and cly.Stream(engine).queue is queue
    assert "sycl" in repr(engine)
    md = cly.MemoryDesc((4, 33), "f32", tag="ab")
    array = np.arange(4 * 33, dtype=np.float32).reshape(md.dims)
    src = cly.Memory.from_numpy(md, engine, array)
    dst = cly.Memory(cly.MemoryDesc((4, 33), "f32", tag="ba"), engine)
    prim = cly.Reorder(src.md, dst.md, engine=engine)
    first = prim.execute(queue, src, dst)
    assert isinstance(first, dpctl.SyclEvent)
    back = cly.Memory(md, engine)
    second = cly.Reorder(dst.md, md, engine=engine).execute(cly.Stream(engine), dst, back,
                                                            wait_for=[first])
    second.wait()
    np.testing.assert_array_equal(back.to_numpy(), array)
    np.testing.assert_array_equal(dst.to_numpy(), array)


class _UsmArray:
    """What dpnp and dpctl.tensor arrays show: __sycl_usm_array_interface__
    with a shape, a type and strides, over an allocation it keeps."""

    def __init__(self, usm, shape, typestr, strides=None, offset=0):
        self.usm = usm
        face = dict(usm.__sycl_usm_array_interface__)
        face.update(shape=shape, typestr=typestr, strides=strides, offset=offset)
        self.__sycl_usm_array_interface__ = face


def test_memories_wrap_usm_without_a_copy(dpctl, sycl):
    import dpctl.memory as dpm

    md = cly.MemoryDesc((3, 5), "f32", tag="ab")
    usm = dpm.MemoryUSMDevice(md.size, queue=sycl.queue)
    mem = cly.Memory(md, sycl, buffer=usm)
    assert mem.storage is usm or mem.engine.backend.address(mem.storage) == \
        usm.__sycl_usm_array_interface__["data"][0]
    array = np.arange(15, dtype=np.float32).reshape(3, 5)
    src = cly.Memory.from_numpy(md, sycl, array)
    cly.reorder(src, mem)
    host = np.empty(md.size, np.uint8)
    usm.copy_to_host(host)  # the reorder wrote into the caller's allocation
    np.testing.assert_array_equal(host.view(np.float32).reshape(3, 5), array)

    tensor = _UsmArray(usm, (3, 5), "<f4")  # as a dpnp array of the tensor's dims
    wrapped = cly.Memory(md, sycl, buffer=tensor)
    np.testing.assert_array_equal(wrapped.to_numpy(), array)
    flat = cly.Memory(md, sycl, buffer=_UsmArray(usm, (60,), "|u1"))  # its bytes
    np.testing.assert_array_equal(flat.to_numpy(), array)
    with pytest.raises(cly.InvalidArgumentError, match="smaller than"):
        cly.Memory(md, sycl, buffer=dpm.MemoryUSMDevice(md.size - 4, queue=sycl.queue))
    with pytest.raises(cly.InvalidArgumentError, match="does not hold"):
        cly.Memory(cly.MemoryDesc((3, 3), "f32", tag="ab"), sycl,
                   buffer=_UsmArray(usm, (3, 3), "<f4", strides=(5, 2)))
    with pytest.raises(cly.InvalidArgumentError, match="does not hold"):
        cly.Memory(md, sycl, buffer=_UsmArray(usm, (3, 5), "<i4"))
    with pytest.raises(cly.InvalidArgumentError, match="flat and contiguous"):
        cly.Memory(md, sycl, buffer=_UsmArray(usm, (60,), "|u1", strides=(2,)))


def test_usm_arrays_are_taken_with_their_strides(sycl):
    """An array of md's dims holds md's tensor only with md's strides: an
    nhwc view (as dpctl.tensor.permute_dims gives) for an nhwc descriptor;
    a C-ordered array is refused for it, never read as if it were nhwc."""
    import dpctl.memory as dpm

    nhwc = cly.MemoryDesc((2, 3, 4, 5), "f32", tag="nhwc")
    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    usm = dpm.MemoryUSMDevice(nhwc.size, queue=sycl.queue)
    usm.copy_from_host(np.ascontiguousarray(x.transpose(0, 2, 3, 1)).view(np.uint8).ravel())
    view = _UsmArray(usm, (2, 3, 4, 5), "<f4", strides=nhwc.strides)
    np.testing.assert_array_equal(cly.Memory(nhwc, sycl, buffer=view).to_numpy(), x)
    with pytest.raises(cly.InvalidArgumentError, match="does not hold"):
        cly.Memory(nhwc, sycl, buffer=_UsmArray(usm, (2, 3, 4, 5), "<f4"))


def test_values_at_execute_as_numpy_and_usm(sycl):
    md = cly.MemoryDesc((2, 8, 3), "f32", tag="abc")
    out_md = cly.MemoryDesc((2, 8, 3), "s8", tag="acb")
    attr = cly.Attr(dst_scales=cly.Scales(mask=2))
    array = np.random.default_rng(3).standard_normal(md.dims).astype(np.float32) * 20
    values = np.linspace(0.25, 4, 8).astype(np.float32)
    want = _host_bytes(md, out_md, array, cly.Attr(dst_scales=cly.Scales(mask=2, values=values)))
    prim = cly.Reorder(md, out_md, engine=sycl, attr=attr)
    src = cly.Memory.from_numpy(md, sycl, array)
    as_usm = cly.Memory.from_numpy(cly.MemoryDesc((8,), "f32", tag="a"), sycl, values)
    for given in (values, as_usm, as_usm.storage):
        dst = cly.Memory(out_md, sycl)
        prim.execute(cly.Stream(sycl), src, dst, dst_scales=given).wait()
        assert dst.raw().tobytes() == want.tobytes()


def test_host_path_runtime_dims_and_compensation(sycl, kernels_decline):
    md = cly.MemoryDesc((2, 3, 4, 5, 2, 2, 3), "f32")  # 7 dims: the host path
    out_md = cly.MemoryDesc(md.dims, "f32", strides=tuple(  # column-major
        int(np.prod(md.dims[:i])) for i in range(7)))
    array = np.arange(md.nelems(), dtype=np.float32).reshape(md.dims)
    prim, got = _sycl_bytes(sycl, md, out_md, array)
    assert prim.impl.startswith("host:numpy")
    assert got.tobytes() == _host_bytes(md, out_md, array).tobytes()

    pattern = cly.MemoryDesc((cly.RUNTIME_DIM, 16), "f32", tag="ab")
    runtime = cly.Reorder(pattern, cly.MemoryDesc((cly.RUNTIME_DIM, 16), "f16", tag="ba"),
                          engine=sycl)
    assert runtime.impl == "sycl:runtime"
    for rows in (3, 17):
        x = np.random.default_rng(rows).standard_normal((rows, 16)).astype(np.float32)
        src = cly.Memory.from_numpy(cly.MemoryDesc((rows, 16), "f32", tag="ab"), sycl, x)
        dst = cly.Memory(cly.MemoryDesc((rows, 16), "f16", tag="ba"), sycl)
        runtime.execute(cly.Stream(sycl), src, dst).wait()
        np.testing.assert_array_equal(dst.to_numpy(), x.astype(np.float16))

    weights = cly.MemoryDesc((32, 16, 3, 3), "s8", tag="OIhw4i16o4i",
                             extra=cly.Extra(compensation_mask=1))
    src_md = cly.MemoryDesc((32, 16, 3, 3), "f32", tag="oihw")
    w = np.random.default_rng(5).standard_normal(src_md.dims).astype(np.float32) * 30
    prim, got = _sycl_bytes(sycl, src_md, weights, w)
    assert prim.impl == "sycl:generated"
    assert got.tobytes() == _host_bytes(src_md, weights, w).tobytes()


@pytest.mark.parametrize("convert", ["device", "host", ""])
def test_cross_engine_host_and_sycl(sycl, convert, monkeypatch):
    monkeypatch.setenv("CLAYOUT_CROSS_CONVERT", convert)
    md, out_md = cly.MemoryDesc((2, 19, 5, 7), "f32", tag="nchw"), \
        cly.MemoryDesc((2, 19, 5, 7), "bf16", tag="nChw16c")
    array = np.random.default_rng(4).standard_normal(md.dims).astype(np.float32)
    want = _host_bytes(md, out_md, array)
    up = cly.Reorder(md, out_md, src_engine=HOST, dst_engine=sycl)
    src, dst = cly.Memory.from_numpy(md, HOST, array), cly.Memory(out_md, sycl)
    up.execute(cly.Stream(sycl), src, dst).wait()
    assert up.impl.startswith("cross:cpu2gpu") and dst.raw().tobytes() == want.tobytes()

    down = cly.Reorder(out_md, md, src_engine=sycl, dst_engine=HOST)
    back = cly.Memory(md, HOST)
    down.execute(cly.Stream(sycl), dst, back).wait()
    on_host = cly.Memory(out_md, HOST, raw=want)
    want_back = cly.Memory(md, HOST)
    cly.reorder(on_host, want_back)
    assert down.impl.startswith("cross:gpu2cpu")
    assert back.raw().tobytes() == want_back.raw().tobytes()

    same = cly.Reorder(md, md, src_engine=HOST, dst_engine=sycl)  # a plain upload
    copy = cly.Memory(md, sycl)
    same.execute(cly.Stream(sycl), src, copy).wait()
    np.testing.assert_array_equal(copy.to_numpy(), array)


def test_spirv_programs_run_the_same(dpctl, sycl, monkeypatch):
    from clayout.gpu.spirv import spirv_tools

    if spirv_tools() is None:
        if os.environ.get("CI"):
            pytest.fail("clang-15 and llvm-spirv-15 are missing -- CI requires them",
                        pytrace=False)
        pytest.skip("clang-15 and llvm-spirv-15 are missing")
    monkeypatch.setenv("CLAYOUT_SYCL_PROGRAM", "spirv")
    engine = cly.Engine("sycl", device=sycl.device)
    assert engine.backend.spirv
    for _, dims, st, stag, dt, dtag, attr in CASES:
        src_md, dst_md = cly.MemoryDesc(dims, st, tag=stag), cly.MemoryDesc(dims, dt, tag=dtag)
        array = (np.arange(np.prod(dims)) % 97).reshape(dims).astype(src_md.dtype.numpy)
        prim, got = _sycl_bytes(engine, src_md, dst_md, array, attr)
        assert prim.impl == "sycl:generated"
        assert got.tobytes() == _host_bytes(src_md, dst_md, array, attr).tobytes()
    # Quantize's vector kernel fetches ahead with OpenCL C's prefetch here:
    # llvm-spirv cannot translate clang's builtin (the kernel would not build).
    md = cly.MemoryDesc((64, 512), "f32")
    x = np.random.default_rng(3).standard_normal(md.dims).astype(np.float32)
    outs = {}
    for e in (engine, HOST):
        q = cly.Quantize(md, "u4", scheme="asymmetric", mask=3, groups=(1, 128), engine=e)
        mems = [cly.Memory(m, e) for m in (q.dst_md, q.scales_md, q.zero_points_md)]
        q.execute(cly.Stream(e), cly.Memory.from_numpy(md, e, x), *mems).wait()
        outs[e is HOST] = [m.raw().tobytes() for m in mems]
        if e is engine:
            assert q.impl.startswith("sycl:quantize") and q.plan.prefetch == "opencl", q.impl
    assert outs[False] == outs[True]


def test_bad_input_is_refused_before_anything_runs(dpctl, sycl, cl_engine_or_none):
    import dpctl.memory as dpm

    md = cly.MemoryDesc((4, 4), "f32", tag="ab")
    other = dpctl.SyclQueue(dpctl.SyclContext([sycl.device]), sycl.device)  # another context
    assert other.sycl_context != sycl.context
    with pytest.raises(cly.InvalidArgumentError, match="another SYCL context"):
        cly.Stream(sycl, queue=other)
    with pytest.raises(cly.InvalidArgumentError, match="another SYCL context"):
        cly.Memory(md, sycl, buffer=dpm.MemoryUSMDevice(md.size, queue=other))
    prim = cly.Reorder(md, md, engine=sycl)
    src, dst = cly.Memory(md, sycl), cly.Memory(md, sycl)
    with pytest.raises(cly.InvalidArgumentError, match="expected a dpctl SyclEvent"):
        prim.execute(cly.Stream(sycl), src, dst, wait_for=["not an event"])
    with pytest.raises(cly.InvalidArgumentError, match="stream"):
        prim.execute(object(), src, dst)
    with pytest.raises(cly.InvalidArgumentError, match="expected a dpctl SyclQueue"):
        cly.Engine("sycl", queue="opencl:cpu")
    if cl_engine_or_none is not None:
        with pytest.raises(cly.UnimplementedError, match="SYCL and an OpenCL engine"):
            cly.Reorder(md, md, src_engine=sycl, dst_engine=cl_engine_or_none)
        import pyopencl as cl
        marker = cl.enqueue_marker(cl_engine_or_none.queue)
        with pytest.raises(cly.InvalidArgumentError, match="expected a dpctl SyclEvent"):
            prim.execute(cly.Stream(sycl), src, dst, wait_for=[marker])


@pytest.fixture
def cl_engine_or_none():
    try:
        return cly.Engine("opencl")
    except cly.UnimplementedError:
        return None


def test_without_dpctl_the_error_names_the_extra():
    code = ("import sys; sys.modules['dpctl'] = None\n"
            "import clayout\n"
            "try:\n    clayout.Engine('sycl')\n"
            "except ImportError as e:\n    print('IMPORT-ERROR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "IMPORT-ERROR" in out.stdout and "clayout[sycl]" in out.stdout, out.stdout + out.stderr


def test_verbose_names_the_sycl_implementation(sycl, capsys, monkeypatch):
    monkeypatch.setenv("CLAYOUT_VERBOSE", "1")
    md = cly.MemoryDesc((3, 7), "f32", tag="ab")
    prim = cly.Reorder(md, cly.MemoryDesc((3, 7), "f16", tag="ba"), engine=sycl)
    src, dst = cly.Memory(md, sycl), cly.Memory(prim.dst_md, sycl)
    prim.execute(cly.Stream(sycl), src, dst).wait()
    deadline = time.monotonic() + 10
    lines = ""
    while "exec" not in lines and time.monotonic() < deadline:  # written once complete
        lines += capsys.readouterr().err
        time.sleep(0.01)
    assert ",create,sycl,reorder,sycl:generated:" in lines
    exec_line = next(line for line in lines.splitlines() if ",exec,sycl," in line)
    assert ",exec,sycl,reorder,sycl:generated:" in exec_line
    assert exec_line.endswith("ms") and float(exec_line.rsplit(",", 1)[1][:-2]) > 0, exec_line


def test_the_default_device_is_one_clayout_can_use(sycl):
    engine = cly.Engine("sycl")
    assert engine.device.has_aspect_usm_device_allocations
    pocl = os.path.join(sys.prefix, "etc", "OpenCL", "clayout", "pocl")
    if not os.path.isdir(pocl):
        pytest.skip(f"no PoCL ICD folder {pocl} (scripts/ensure_intel_opencl.sh writes it)")
    code = ("import clayout\ntry:\n    clayout.Engine('sycl')\n"
            "except clayout.UnimplementedError as e:\n    print('REFUSED', e)\n")
    env = dict(os.environ, OCL_ICD_VENDORS=pocl)  # PoCL alone: no USM
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert "REFUSED" in out.stdout and "USM device allocations" in out.stdout, \
        out.stdout + out.stderr


def test_host_work_for_sycl_finishes_in_a_subprocess_with_a_time_limit(sycl):
    """The work that blocks on a SYCL engine (host path, cross-engine
    downloads and conversions) waits for its inputs and ends: run in a
    subprocess under a time limit, so a hang fails the test."""
    code = """
import numpy as np, clayout as cly
eng, host = cly.Engine("sycl", device="opencl:cpu"), cly.Engine("host")
md = cly.MemoryDesc((2, 3, 4, 5, 2, 2, 3), "f32")
out = cly.MemoryDesc(md.dims, "f32", strides=tuple(int(np.prod(md.dims[:i])) for i in range(7)))
x = np.arange(md.nelems(), dtype=np.float32).reshape(md.dims)
src, dst = cly.Memory.from_numpy(md, eng, x), cly.Memory(out, eng)
stream = cly.Stream(eng)
for _ in range(3):
    cly.Reorder(md, out, engine=eng).execute(stream, src, dst)
    back = cly.Memory(out, host)
    cly.Reorder(out, out, src_engine=eng, dst_engine=host).execute(stream, dst, back)
stream.wait()
print("DONE", np.array_equal(back.to_numpy(), x))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert "DONE True" in done.stdout, done.stdout + done.stderr


def test_memories_and_values_of_another_context_are_refused_at_execute(dpctl, sycl):
    """Two engines on one device with contexts of their own: a Reorder or
    Shuffle of one refuses the other's memories, and values at execute
    held in them, before anything is enqueued. (``SyclContext(device)``
    hands out the device's one cached context, equal each time: a list
    of devices makes a new one.)"""
    dev = sycl.device
    one, two = (cly.Engine("sycl", queue=dpctl.SyclQueue(dpctl.SyclContext([dev]), dev))
                for _ in range(2))
    assert one.context != two.context and one != two
    md = cly.MemoryDesc((4, 6), "f32", tag="ab")
    reorder = cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="ba"), engine=one)
    shuffle = cly.Shuffle(md, axis=1, group_size=2, engine=one)
    scaled = cly.Reorder(md, md, engine=one, attr=cly.Attr(src_scales=cly.Scales(mask=2)))
    array = np.arange(24, dtype=np.float32).reshape(md.dims)
    mine, theirs = (cly.Memory.from_numpy(md, engine, array) for engine in (one, two))
    out, their_out = cly.Memory(reorder.dst_md, one), cly.Memory(reorder.dst_md, two)
    same, their_same = cly.Memory(md, one), cly.Memory(md, two)
    their_scales = cly.Memory.from_numpy(cly.MemoryDesc((6,), "f32", tag="a"), two,
                                         np.ones(6, np.float32))
    stream = cly.Stream(one)
    stream.wait()
    calls = [
        ("src", lambda: reorder.execute(stream, theirs, out)),
        ("dst", lambda: reorder.execute(stream, mine, their_out)),
        ("src", lambda: shuffle.execute(stream, theirs, same)),
        ("dst", lambda: shuffle.execute(stream, mine, their_same)),
        ("src_scales", lambda: scaled.execute(stream, mine, same, src_scales=their_scales)),
        ("src_scales", lambda: scaled.execute(stream, mine, same,
                                              src_scales=their_scales.storage)),
    ]
    for arg, call in calls:
        with pytest.raises(cly.InvalidArgumentError, match=rf"^{arg}\b.*(another SYCL context|"
                           rf"lives on .*SYCL context {hash(two.context):#x})") as caught:
            call()
        assert f"{hash(one.context):#x}" in str(caught.value), caught.value
    for memory in (out, their_out, same, their_same):
        assert memory.events == [] and not memory.raw().any(), "something was enqueued"
    reorder.execute(stream, mine, out).wait()   # its own context's memories run
    np.testing.assert_array_equal(out.to_numpy(), array)


WRITE_AFTER_READ = """
import ctypes, sys, time, numpy as np, dpctl, dpctl.memory as dpm, dpctl.program as dpp
import clayout as cly
eng = cly.Engine("sycl", device="opencl:cpu")
ooo = dpctl.SyclQueue(eng.context, eng.device)       # SYCL's default: out of order
assert not ooo.is_in_order
side = dpctl.SyclQueue(eng.context, eng.device, property="in_order")
# SYCL has no user events: the gate is a kernel that spins until the host
# sets a flag in shared USM (or for some seconds at most).
spin = dpp.create_program_from_source(side, '''
__kernel void spin(volatile __global int *flag, long limit) {
    for (long i = 0; i < limit && flag[0] == 0; i++) {}
}''').get_sycl_kernel("spin")
flag = dpm.MemoryUSMShared(4, queue=side)
opened = np.frombuffer(memoryview(flag), dtype=np.int32)
opened[0] = 0
md = cly.MemoryDesc((8, 64), "f32")
old = np.arange(512, dtype=np.float32).reshape(md.dims)
a, new = cly.Memory.from_numpy(md, eng, old), cly.Memory.from_numpy(md, eng, -old)
b = cly.Memory(cly.MemoryDesc(md.dims, "f32", tag="ba"), eng)
read, write = cly.Reorder(md, b.md, engine=eng), cly.Reorder(md, md, engine=eng)
eng.queue.wait()
# Nothing blocks from here until the flag is set (the spin may hold the
# runtime's only free thread).
gate = side.submit_async(spin, [flag, ctypes.c_long(1 << 34)], [1])
reader = read.execute(ooo, a, b, wait_for=[gate])
writer_queue = ooo if sys.argv[1] == "same" else dpctl.SyclQueue(eng.context, eng.device)
wrote = write.execute(writer_queue, new, a)
time.sleep(0.3)
done = dpctl.event_status_type.complete
pending = (gate.execution_status != done, reader.execution_status != done,
           wrote.execution_status != done)
opened[0] = 1
gate.wait(); reader.wait(); wrote.wait()
print("PENDING", *pending)
print("READ OLD", np.array_equal(b.to_numpy(), old), "WROTE", np.array_equal(a.to_numpy(), -old))
"""


@pytest.mark.parametrize("writer_queue", ["same", "another"])
def test_a_write_waits_for_a_read_still_running_on_an_out_of_order_queue(sycl, writer_queue):
    """A reorder reading ``a`` waits on a gate; a reorder writing ``a``,
    enqueued after it on an out-of-order queue (the same one or another),
    stays pending until the read has run, which reads the old values. In
    a subprocess under a time limit: the gate is a spinning kernel."""
    done = subprocess.run([sys.executable, "-c", WRITE_AFTER_READ, writer_queue],
                          capture_output=True, text=True, timeout=120)
    out = done.stdout + done.stderr
    assert "PENDING True True True" in done.stdout, out
    assert "READ OLD True WROTE True" in done.stdout, out
