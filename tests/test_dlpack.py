"""DLPack both ways (clayout/dlpack.py): host memories with NumPy (and
PyTorch CPU tensors where torch is installed), SYCL memories with dpnp;
the refusals of what has no DLPack form.

Zero copy is shown by equal data pointers, values are compared bit for
bit. The SYCL tests run on Intel's runtime (the intel and sycl passes);
under CI a missing dpctl or dpnp fails them, elsewhere they are skipped."""
import ctypes
import os

import numpy as np
import pytest

import clayout as cly
from conftest import _sycl_engine
from clayout.dlpack import DLPackError

HOST = cly.Engine("host")


def _address(memory) -> int:
    """The address of a memory's first storage byte (host or USM)."""
    face = getattr(memory.storage, "__sycl_usm_array_interface__", None)
    return face["data"][0] if face else memory.storage.__array_interface__["data"][0]


def _first_element_address(memory) -> int:
    md = memory.md
    return _address(memory) + md.offset((0,) * md.ndims) * md.dtype.numpy.itemsize


def _same_bits(a, b) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and \
        a.reshape(-1).view(np.uint8).tobytes() == b.reshape(-1).view(np.uint8).tobytes()


def _values(dims, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(dims).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, dims, endpoint=True).astype(dtype)


def _capsule_is(capsule, name: bytes) -> bool:
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.restype, is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
    return bool(is_valid(capsule, name))


class _Producer:
    """A DLPack producer that hands out a capsule made in advance (how an
    old consumer meets an old capsule, a new one a versioned capsule)."""

    def __init__(self, capsule, device):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **_):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


# -- host memories and NumPy ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["f32", "f16", "f64", "s32", "s8", "u8"])
@pytest.mark.parametrize("tag", ["nchw", "nhwc", "chwn"])
def test_numpy_takes_a_host_memory_without_a_copy(tag, dtype):
    md = cly.MemoryDesc((2, 3, 4, 5), dtype, tag=tag)
    values = _values(md.dims, md.dtype.numpy)
    memory = cly.Memory.from_numpy(md, HOST, values)
    array = np.from_dlpack(memory)
    assert _same_bits(array, values)
    assert array.ctypes.data == _first_element_address(memory)
    size = md.dtype.numpy.itemsize
    assert array.strides == tuple(s * size for s in md.strides)
    assert memory.__dlpack_device__() == (1, 0)


def test_a_permuted_layout_exports_its_logical_view_with_its_strides():
    md = cly.MemoryDesc((2, 3, 4, 5), "f32", tag="nhwc")
    memory = cly.Memory.from_numpy(md, HOST, _values(md.dims, np.float32))
    array = np.from_dlpack(memory)
    assert array.shape == (2, 3, 4, 5)  # n, c, h, w
    assert array.strides == (4 * 5 * 3 * 4, 4, 5 * 3 * 4, 3 * 4)  # channels innermost


def test_writes_through_an_export_reach_the_memory():
    md = cly.MemoryDesc((3, 4), "s32", tag="ba")
    memory = cly.Memory.from_numpy(md, HOST, np.zeros(md.dims, np.int32))
    np.from_dlpack(memory)[1, 2] = 7
    expected = np.zeros(md.dims, np.int32)
    expected[1, 2] = 7
    assert _same_bits(memory.to_numpy(), expected)


def test_a_submemory_exports_its_window():
    md = cly.MemoryDesc((4, 6), "f32")
    values = _values(md.dims, np.float32)
    parent = cly.Memory.from_numpy(md, HOST, values)
    window = cly.Memory(md.submemory((2, 3), (1, 2)), HOST, buffer=parent)
    array = np.from_dlpack(window)
    assert _same_bits(array, values[1:3, 2:5])
    assert array.ctypes.data == _address(parent) + (1 * 6 + 2) * 4


def test_a_memory_over_a_numpy_array_shares_its_bytes():
    values = _values((3, 5), np.float32)
    memory = cly.Memory.from_dlpack(values)
    assert memory.engine == HOST and memory.md == cly.MemoryDesc((3, 5), "f32")
    assert _address(memory) == values.ctypes.data
    assert _same_bits(memory.to_numpy(), values)
    values[2, 4] = 123.0  # the producer writes: the memory sees it
    assert memory.to_numpy()[2, 4] == 123.0
    src = cly.Memory.from_numpy(memory.md, HOST, np.full((3, 5), -1.5, np.float32))
    cly.reorder(src, memory)  # clayout writes: the producer sees it
    assert _same_bits(values, np.full((3, 5), -1.5, np.float32))


def test_a_channels_last_array_comes_in_as_an_nhwc_memory():
    values = _values((2, 4, 5, 3), np.float32).transpose(0, 3, 1, 2)  # logical nchw
    memory = cly.Memory.from_dlpack(values)
    assert memory.md.matches_tag("nhwc")
    assert _address(memory) == values.ctypes.data
    assert _same_bits(memory.to_numpy(), values)


def test_a_window_of_an_array_comes_in_without_a_copy():
    base = _values((3, 4, 5), np.float32)
    window = base[:, 1:3, 1:4]
    memory = cly.Memory.from_dlpack(window)
    assert memory.md.dims == (3, 2, 3) and memory.md.strides == (20, 5, 1)
    assert _address(memory) == window.ctypes.data
    assert _same_bits(memory.to_numpy(), window)
    # Round trip: the export is the window again, over the same bytes.
    again = np.from_dlpack(memory)
    assert again.ctypes.data == window.ctypes.data and again.strides == window.strides
    again[...] = 0  # written through clayout's view: the elements around stay
    assert not base[:, 1:3, 1:4].any() and base[:, 0].all() and base[:, 3].all()


def test_versioned_and_old_capsules():
    md = cly.MemoryDesc((2, 3), "u8", tag="ba")
    values = _values(md.dims, np.uint8)
    memory = cly.Memory.from_numpy(md, HOST, values)
    versioned = memory.__dlpack__(max_version=(1, 0))
    old = memory.__dlpack__()
    assert _capsule_is(versioned, b"dltensor_versioned")
    assert _capsule_is(old, b"dltensor") and not _capsule_is(old, b"dltensor_versioned")
    for capsule in (versioned, old):
        array = np.from_dlpack(_Producer(capsule, (1, 0)))
        assert _same_bits(array, values)
        assert array.ctypes.data == _first_element_address(memory)


def test_copy_true_gives_a_copy_and_copy_false_the_bytes():
    values = _values((4, 4), np.float32)
    memory = cly.Memory.from_numpy(cly.MemoryDesc((4, 4), "f32"), HOST, values)
    copied = np.from_dlpack(memory, copy=True)
    assert _same_bits(copied, values) and copied.ctypes.data != _address(memory)
    shared = np.from_dlpack(memory, copy=False)
    assert shared.ctypes.data == _address(memory)


def test_another_dl_device_or_a_stream_is_refused():
    memory = cly.Memory(cly.MemoryDesc((2, 2), "f32"), HOST)
    with pytest.raises(BufferError, match=r"dl_device=\(14, 0\).*kDLCPU"):
        memory.__dlpack__(dl_device=(14, 0))
    with pytest.raises(cly.InvalidArgumentError, match=r"dl_device=\(2, 0\)"):
        memory.__dlpack__(dl_device=(2, 0))
    with pytest.raises(cly.InvalidArgumentError, match="stream=5.*None only"):
        memory.__dlpack__(stream=5)
    assert _capsule_is(memory.__dlpack__(dl_device=(1, 0)), b"dltensor")  # its own device


def test_a_blocked_layout_is_refused_naming_the_reorder():
    memory = cly.Memory(cly.MemoryDesc((2, 19, 5, 7), "f32", tag="nChw16c"), HOST)
    with pytest.raises(DLPackError) as info:
        np.from_dlpack(memory)
    text = str(info.value)
    assert "inner blocks (16b)" in text and "tag='abcd'" in text and "cly.reorder" in text
    assert isinstance(info.value, BufferError) and isinstance(info.value, cly.InvalidArgumentError)
    # The hint is code that runs and gives a memory DLPack exports.
    hint = text.split("e.g. ", 1)[1]
    names = {"cly": cly, "mem": cly.Memory.from_numpy(memory.md, HOST, _values(memory.md.dims,
                                                                             np.float32))}
    exec(hint, names)
    assert np.array_equal(np.from_dlpack(names["plain"]), names["mem"].to_numpy())


@pytest.mark.parametrize("dtype, target", [("s4", "'s8'"), ("u4", "'u8'"), ("bf16", "'f32'"),
                                           ("f8_e4m3", "'f32'"), ("e8m0", "'f32'")])
def test_types_dlpack_does_not_carry_are_refused(dtype, target):
    memory = cly.Memory(cly.MemoryDesc((4, 6), dtype), HOST)
    with pytest.raises(DLPackError, match=f"{dtype}.*reorder it to.*{target}"):
        memory.__dlpack__()


def test_a_flat_buffer_comes_in_as_a_blocked_layout_given_md():
    md = cly.MemoryDesc((2, 19, 5, 7), "f32", tag="nChw16c")
    values = _values(md.dims, np.float32)
    flat = cly.Memory.from_numpy(md, HOST, values).raw().view(np.float32)
    memory = cly.Memory.from_dlpack(flat, md=md)
    assert memory.md == md and _address(memory) == flat.ctypes.data
    assert _same_bits(memory.to_numpy(), values)
    with pytest.raises(cly.InvalidArgumentError, match="fewer than the 8960 bytes"):
        cly.Memory.from_dlpack(flat[:-1], md=md)
    with pytest.raises(cly.InvalidArgumentError, match="does not hold"):
        cly.Memory.from_dlpack(flat.astype(np.int8), md=md)


def test_md_of_the_tensor_itself_is_taken():
    values = _values((3, 4), np.int8).T  # strides (1, 3)
    md = cly.MemoryDesc((4, 3), "s8", tag="ba")
    memory = cly.Memory.from_dlpack(values, md=md)
    assert _address(memory) == values.ctypes.data and _same_bits(memory.to_numpy(), values)
    with pytest.raises(cly.InvalidArgumentError, match="does not hold"):
        cly.Memory.from_dlpack(values, md=cly.MemoryDesc((4, 3), "s8", tag="ab"))


@pytest.mark.parametrize("value, message", [
    (np.arange(6, dtype=np.float32)[::-1], "stride -4 is negative"),
    (np.broadcast_to(np.float32(1), (3, 4)), "broadcast view"),
    (np.arange(6, dtype=np.int64), "no int64 type"),
    (np.zeros((2, 2), dtype=bool), "no bool type"),
    (np.array(1.0, dtype=np.float32), "0 dims"),
    ([1.0, 2.0], "no DLPack producer"),
    (np.arange(60, dtype=np.float32).reshape(3, 4, 5)[:, 1:3, ::2], "no clayout layout"),
])
def test_tensors_with_no_clayout_form_are_refused(value, message):
    with pytest.raises(cly.InvalidArgumentError, match=message):
        cly.Memory.from_dlpack(value)


def test_a_cuda_producer_is_refused_naming_the_devices_taken():
    class CudaTensor:
        def __dlpack__(self, **_):
            raise AssertionError("not to be called")

        def __dlpack_device__(self):
            return 2, 0

    with pytest.raises(cly.UnimplementedError, match=r"kDLCUDA.*kDLCPU.*kDLOneAPI"):
        cly.Memory.from_dlpack(CudaTensor())


def test_zero_size_tensors_both_ways():
    memory = cly.Memory.from_dlpack(np.zeros((0, 3), np.float32))
    assert memory.md.dims == (0, 3) and memory.to_numpy().shape == (0, 3)
    assert np.from_dlpack(cly.Memory(cly.MemoryDesc((2, 0), "s8"), HOST)).shape == (2, 0)


def test_a_read_only_array_gives_a_read_only_storage():
    values = np.arange(6, dtype=np.float32)
    values.flags.writeable = False
    memory = cly.Memory.from_dlpack(values)
    assert not memory.storage.flags.writeable and _address(memory) == values.ctypes.data
    assert _same_bits(memory.to_numpy(), values)


def test_a_cpu_tensor_is_copied_onto_a_device_engine(cl_engine):
    values = _values((3, 4, 5), np.float32)[:, 1:3]  # a window: its layout goes too
    memory = cly.Memory.from_dlpack(values, engine=cl_engine)
    assert memory.engine == cl_engine and memory.md.strides == (20, 5, 1)
    assert _same_bits(memory.to_numpy(), values)


# -- OpenCL memories ---------------------------------------------------------------------


@pytest.mark.opencl_only
def test_an_opencl_memory_reports_kdlopencl_and_refuses_naming_the_ways_out(cl_engine):
    assert cl_engine.kind == "opencl"
    memory = cly.Memory(cly.MemoryDesc((2, 3), "f32"), cl_engine)
    assert memory.__dlpack_device__() == (4, 0)
    with pytest.raises(DLPackError) as info:
        np.from_dlpack(memory)
    text = str(info.value)
    for way in ("no DLPack device that consumers take", "to_numpy()", "read(out=...)",
                "to_cl_array()", "Engine('sycl')"):
        assert way in text


# -- PyTorch CPU tensors ------------------------------------------------------------------


def test_torch_cpu_tensors_both_ways():
    torch = pytest.importorskip("torch")
    tensor = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
    memory = cly.Memory.from_dlpack(tensor)
    assert _address(memory) == tensor.data_ptr()
    assert _same_bits(memory.to_numpy(), tensor.numpy())
    tensor[0, 0, 0] = 42.0
    assert memory.to_numpy()[0, 0, 0] == 42.0
    md = cly.MemoryDesc((2, 3, 4, 5), "f32", tag="nhwc")
    values = _values(md.dims, np.float32)
    host = cly.Memory.from_numpy(md, HOST, values)
    back = torch.from_dlpack(host)
    assert back.data_ptr() == _first_element_address(host)
    assert back.stride() == md.strides and _same_bits(back.numpy(), values)
    channels_last = torch.zeros(2, 4, 5, 3).permute(0, 3, 1, 2)
    assert cly.Memory.from_dlpack(channels_last).md.matches_tag("nhwc")


# -- SYCL memories and dpnp -------------------------------------------------------------------


def _need(module: str):
    try:
        return pytest.importorskip(module) if not os.environ.get("CI") else \
            __import__(module)
    except ImportError as error:
        pytest.fail(f"{module} is missing ({error}) -- CI requires it", pytrace=False)


@pytest.fixture(scope="module")
def dpnp():
    _need("dpctl")
    return _need("dpnp")


@pytest.fixture(scope="module")
def sycl(dpnp):
    return _sycl_engine()


def _usm_address(array) -> int:
    face = array.__sycl_usm_array_interface__
    return face["data"][0] + (face.get("offset") or 0) * array.itemsize


@pytest.mark.needs_intel
@pytest.mark.parametrize("tag", ["nchw", "nhwc"])
def test_dpnp_takes_a_sycl_memory_without_a_copy(dpnp, sycl, tag):
    md = cly.MemoryDesc((2, 3, 4, 5), "f32", tag=tag)
    values = _values(md.dims, np.float32)
    memory = cly.Memory.from_numpy(md, sycl, values)
    array = dpnp.from_dlpack(memory)
    assert _usm_address(array) == _first_element_address(memory)
    assert array.strides == tuple(4 * s for s in md.strides)  # dpnp counts bytes
    assert _same_bits(dpnp.asnumpy(array), values)
    assert memory.__dlpack_device__() == tuple(int(v) for v in array.__dlpack_device__())
    array[0, 1, 2, 3] = 5.0  # written through dpnp: the memory sees it
    assert memory.to_numpy()[0, 1, 2, 3] == 5.0


@pytest.mark.needs_intel
def test_a_sycl_memory_over_a_dpnp_array_shares_its_usm(dpnp, sycl):
    values = _values((3, 4, 5), np.float32)
    whole = dpnp.asarray(values, sycl_queue=sycl.queue)
    window = whole[:, 1:3, 1:4]
    memory = cly.Memory.from_dlpack(window)
    assert memory.engine == sycl and memory.md.strides == (20, 5, 1)
    assert _address(memory) == _usm_address(window)
    assert _same_bits(memory.to_numpy(), values[:, 1:3, 1:4])
    src = cly.Memory.from_numpy(memory.md, sycl, np.full((3, 2, 3), 9.0, np.float32))
    cly.reorder(src, memory)  # clayout writes the window: dpnp sees it, the rest stays
    expected = values.copy()
    expected[:, 1:3, 1:4] = 9.0
    assert _same_bits(dpnp.asnumpy(whole), expected)
    assert cly.Memory.from_dlpack(window, engine=sycl).engine is sycl


@pytest.mark.needs_intel
def test_an_export_waits_for_clayouts_writes(dpnp, sycl):
    md = cly.MemoryDesc((64, 512, 257), "f32")
    dst_md = cly.MemoryDesc(md.dims, "f32", tag="acb")
    values = _values(md.dims, np.float32)
    src = cly.Memory.from_numpy(md, sycl, values)
    dst = cly.Memory(dst_md, sycl)
    sycl.queue.wait()
    # On a queue of its own (a profiling stream's), not the one the export's
    # array and dpnp's copy use: only the export's wait orders them.
    other = cly.Stream(sycl, profiling=True)
    assert other.queue != sycl.queue
    cly.Reorder(md, dst_md, engine=sycl).execute(other, src, dst)  # not waited
    assert _same_bits(dpnp.asnumpy(dpnp.from_dlpack(dst)), values)


@pytest.mark.needs_intel
def test_sycl_exports_to_the_host_and_refuses_other_devices(dpnp, sycl):
    values = _values((3, 4), np.int8)
    memory = cly.Memory.from_numpy(cly.MemoryDesc((3, 4), "s8", tag="ba"), sycl, values)
    assert _same_bits(np.from_dlpack(memory, device="cpu"), values)
    assert _capsule_is(memory.__dlpack__(max_version=(1, 0), stream=sycl.queue),
                       b"dltensor_versioned")
    with pytest.raises(BufferError, match=r"dl_device=\(2, 0\)"):
        memory.__dlpack__(dl_device=(2, 0))
    with pytest.raises(cly.InvalidArgumentError, match="stream=3.*SyclQueue"):
        memory.__dlpack__(stream=3)
    blocked = cly.Memory(cly.MemoryDesc((2, 19, 5, 7), "f32", tag="nChw16c"), sycl)
    with pytest.raises(DLPackError, match="inner blocks.*tag='abcd'"):
        dpnp.from_dlpack(blocked)


@pytest.mark.needs_intel
def test_a_dpnp_array_is_copied_to_a_host_engine(dpnp, sycl):
    values = _values((4, 5), np.float32)
    memory = cly.Memory.from_dlpack(dpnp.asarray(values, sycl_queue=sycl.queue), engine=HOST)
    assert memory.engine == HOST and _same_bits(memory.to_numpy(), values)
