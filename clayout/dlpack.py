"""DLPack exchange: a Memory as a DLPack producer, and a Memory over any
DLPack producer's tensor, without a copy wherever strides express the layout.

DLPack describes a tensor by a data pointer, a shape and strides, so what
it carries is a plain layout (any dim order, gaps allowed, windows such as
submemories) of a type both sides know. A blocked layout (``nChw16c``),
the 4-bit packed types and the types the exporters do not carry (bf16,
the f8 types, e8m0) have no DLPack form: the error names the reorder that
gives one.

Host memories go through NumPy (``ndarray.__dlpack__``, ``np.from_dlpack``):
NumPy, PyTorch CPU tensors and any CPU producer meet them. SYCL memories are
USM, exported and taken through ``usm_ndarray`` (``dpnp.tensor``; before
dpctl 0.22, ``dpctl.tensor``): dpnp arrays, PyTorch XPU tensors and other
oneAPI-device producers and consumers meet them. OpenCL buffers have no
DLPack device that consumers take: such a memory reports kDLOpenCL and
refuses to export, naming the ways out.

Both directions share bytes: a write through one side is seen by the other.
An export first waits for the commands clayout enqueued on the memory (its
writes, and its reads, which a consumer's write must not overtake); what
the consumer enqueues afterwards is the consumer's to order.
"""
from __future__ import annotations

import importlib
import weakref
from typing import Any

import numpy as np

from .backends.usm import Span
from .dtypes import DATA_TYPES, data_type
from .engine import Engine, as_engine
from .errors import Error, InvalidArgumentError, UnimplementedError, describe
from .memory_desc import MemoryDesc
from .tags import LETTERS

#: DLPack's device types (dlpack.h's DLDeviceType) that clayout meets.
KDL_CPU, KDL_OPENCL, KDL_ONEAPI = 1, 4, 14
#: Names of the other device types, for messages.
_DEVICE_NAMES = {KDL_CPU: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", KDL_OPENCL: "kDLOpenCL",
                 7: "kDLVulkan", 8: "kDLMetal", 9: "kDLVPI", 10: "kDLROCM",
                 11: "kDLROCMHost", 13: "kDLCUDAManaged", KDL_ONEAPI: "kDLOneAPI"}

#: What an OpenCL memory's refusal offers instead.
OPENCL_WAYS_OUT = (
    "OpenCL buffers have no DLPack device that consumers take: use mem.to_numpy(), "
    "mem.read(out=...), mem.to_cl_array() for pyopencl, or a SYCL engine "
    "(Engine('sycl')) whose USM memories DLPack exports")

#: The clayout types both exporters carry: NumPy's own dtypes. The
#: ml_dtypes ones (bf16, the f8 types, e8m0, the 4-bit types) have no
#: DLPack code NumPy or usm_ndarray writes.
_CARRIED = tuple(name for name, dt in DATA_TYPES.items() if dt.numpy.type.__module__ == "numpy")
#: The type a reorder gives an uncarried type (s4 and u4 widen exactly).
_WIDER = {"s4": "s8", "u4": "u8"}


class DLPackError(InvalidArgumentError, BufferError):
    """What DLPack cannot carry: a blocked layout, a type no exporter takes,
    a device no consumer takes, a ``copy=False`` that needs a copy. Both
    clayout's InvalidArgumentError and the BufferError that the array API
    standard asks ``__dlpack__`` to raise for these."""


# -- export ------------------------------------------------------------------------


def device_of(memory) -> tuple[int, int]:
    """``memory.__dlpack_device__()``: (1, 0) (kDLCPU) on the host; (14, n)
    (kDLOneAPI) on a SYCL engine, n the device's number as usm_ndarray
    reports it; (4, 0) (kDLOpenCL) on an OpenCL engine, whose ``__dlpack__``
    refuses (no consumer takes that device)."""
    kind = memory.engine.kind
    if kind == "host":
        return KDL_CPU, 0
    if kind == "opencl":
        return KDL_OPENCL, 0
    # An array of no element over the storage: its device is the allocation's.
    empty = _usm_view(memory, (0,), np.dtype(np.uint8), (1,), 0)
    device_type, number = empty.__dlpack_device__()
    return int(device_type), int(number)


def export(memory, stream=None, max_version=None, dl_device=None, copy=None):
    """The capsule ``memory.__dlpack__(...)`` returns: the tensor (shape
    md.dims, the layout's strides) over the memory's own bytes; versioned
    (DLPack 1.x) when ``max_version`` allows it, the old kind when it is
    None; a copy for ``copy=True``. Waits for the commands clayout enqueued
    on the memory first. A SYCL memory also exports to ``dl_device=(1, 0)``
    (a host copy, or the same bytes on a CPU device) and orders with a
    dpctl SyclQueue ``stream``.

    Raises DLPackError (an InvalidArgumentError and a BufferError) for an
    OpenCL memory, a layout with inner blocks, a type no exporter carries,
    a ``dl_device`` the memory cannot go to, or ``copy=False`` where a copy
    is needed; InvalidArgumentError for a ``stream`` of the wrong kind.
    """
    _check_exportable(memory)
    own = device_of(memory)
    wanted = own if dl_device is None else _device_tuple(dl_device)
    if memory.engine.is_device:
        view = _sycl_view(memory, own, wanted, stream)
    else:
        view = _host_view(memory, own, wanted, stream)
    keywords = dict(stream=stream, max_version=max_version,
                    dl_device=None if dl_device is None else wanted, copy=copy)
    try:
        return view.__dlpack__(**keywords)
    except BufferError as error:  # the standard's error for what cannot be exported
        raise DLPackError(f"{memory!r}: the export refused {keywords}: {error}") from None
    except Exception as error:  # noqa: BLE001 - NumPy and dpctl raise several kinds
        raise InvalidArgumentError(
            f"{memory!r}: the export refused {keywords}: {error}") from None


def _check_exportable(memory) -> None:
    """Raise DLPackError unless the memory's tensor has a DLPack form."""
    md = memory.md
    if memory.engine.is_opencl:
        raise DLPackError(f"{memory!r}: {OPENCL_WAYS_OUT}")
    if md.inner_blks:
        blocks = "".join(f"{n}{LETTERS[d]}" for n, d in zip(md.inner_blks, md.inner_idxs))
        raise DLPackError(
            f"{md!r} has inner blocks ({blocks}); DLPack takes strides only: reorder it to "
            f"a plain layout first, e.g. {_reorder_hint(md, md.data_type)}")
    if md.data_type not in _CARRIED:
        why = ("packs two elements a byte, which DLPack strides cannot address"
               if md.dtype.packed else "is a type no DLPack exporter here carries "
               "(NumPy and usm_ndarray take integers and f16/f32/f64)")
        target = _WIDER.get(md.data_type, "f32")
        raise DLPackError(
            f"{md!r}: {md.data_type} {why}; reorder it to {target}"
            f"{' (or f16)' if target == 'f32' else ''} first, e.g. "
            f"{_reorder_hint(md, target)}")


def _reorder_hint(md, target_type: str) -> str:
    """The code that reorders a memory of md into a plain one of
    ``target_type`` with md's dim order."""
    order = sorted(range(md.ndims), key=lambda d: (-md.strides[d], d))
    tag = "".join(LETTERS[d] for d in order)
    dtype = "" if target_type == md.data_type else f", data_type={target_type!r}"
    return f"plain = cly.reorder(mem, tag={tag!r}{dtype})"


def _device_tuple(dl_device) -> tuple[int, int]:
    """A ``dl_device`` argument as two ints. Raises InvalidArgumentError."""
    try:
        device_type, number = dl_device
        return int(device_type), int(number)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"dl_device={describe(dl_device)}: expected (device type, device number), as "
            f"__dlpack_device__() gives") from None


def _settle(memory) -> None:
    """Block until the commands clayout enqueued on the memory's elements
    have ended: a consumer may read and write them at once."""
    if memory.engine.is_device:
        memory.engine.backend.wait(memory._wait_list(write=True))
    else:
        memory._host_wait(write=True)


def _first_element(md) -> int:
    """Element offset of index (0, ..., 0) in the buffer (0 for no element)."""
    return md.offset((0,) * md.ndims) if md.nelems() else 0


def _host_view(memory, own, wanted, stream) -> np.ndarray:
    """The NumPy array over a host memory's bytes that exports it."""
    from .host.arrays import plain_view

    if wanted != own:
        raise DLPackError(
            f"dl_device={wanted}: {memory!r} is in host memory, device {own} (kDLCPU), and "
            f"exports there only; Memory.from_dlpack(array, engine=a_sycl_engine) puts a "
            f"copy on a device")
    if stream is not None:
        raise InvalidArgumentError(
            f"stream={stream!r}: a host memory (kDLCPU) takes stream=None only, as the "
            f"array API standard says for CPU tensors")
    _settle(memory)
    return plain_view(memory.md, memory.storage)


def _sycl_view(memory, own, wanted, stream):
    """The usm_ndarray over a SYCL memory's USM that exports it."""
    if wanted not in (own, (KDL_CPU, 0)):
        raise DLPackError(
            f"dl_device={wanted}: {memory!r} is USM on device {own} (kDLOneAPI); it exports "
            f"there, or to (1, 0) (kDLCPU: a host copy)")
    import dpctl  # there: the memory's engine runs on it

    if stream is not None and not isinstance(stream, dpctl.SyclQueue):
        raise InvalidArgumentError(
            f"stream={stream!r}: a SYCL memory's export takes a dpctl SyclQueue to order its "
            f"consumer's work after, or None")
    _settle(memory)
    md = memory.md
    return _usm_view(memory, md.dims, md.dtype.numpy, md.strides, _first_element(md))


def _usm_view(memory, shape, dtype, strides, offset):
    """A usm_ndarray over the memory's USM storage (``offset`` and
    ``strides`` in elements). Raises UnimplementedError where dpctl
    refuses it (f16 or f64 on a device without them)."""
    tensor = tensor_module()
    try:
        return tensor.usm_ndarray(shape, dtype=dtype, strides=strides, buffer=memory.storage,
                                  offset=offset)
    except Exception as error:  # noqa: BLE001 - dpctl raises several kinds
        raise UnimplementedError(
            f"{memory!r}: usm_ndarray cannot view its USM storage as shape {shape}, "
            f"{dtype}, strides {strides} ({error})") from None


def tensor_module():
    """The module holding usm_ndarray and its from_dlpack: dpnp.tensor
    (dpctl 0.22 moved it into dpnp), else dpctl.tensor. Raises ImportError
    naming what to install."""
    for name in ("dpnp.tensor", "dpctl.tensor"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("DLPack with SYCL memories needs usm_ndarray: pip install dpnp "
                      "(dpnp.tensor; with dpctl before 0.22, dpctl.tensor)")


# -- import ------------------------------------------------------------------------


def from_dlpack(obj, engine=None, md=None, *, memory_type):
    """``Memory.from_dlpack``: a ``memory_type`` (the Memory class, passed
    in by it: this module sits beside memory.py, which imports it) over the
    tensor of ``obj``, an object with ``__dlpack__`` and
    ``__dlpack_device__`` (a NumPy or dpnp array, a PyTorch tensor, ...).

    A CPU tensor (kDLCPU) becomes a host memory sharing its bytes; a
    oneAPI-device tensor (kDLOneAPI, SYCL USM) a memory sharing its USM on
    ``engine`` (a SYCL engine of the tensor's context), or, without one, on
    a SYCL engine of the tensor's context and device. The memory keeps the
    producer alive. ``engine`` of another kind gets a copy: a CPU tensor's
    bytes copied onto a device engine, a oneAPI tensor's copied to the host
    (and from there onto an OpenCL engine).

    ``md`` (optional) says how the bytes are read: a descriptor of the
    tensor's own dims, type and strides, or any layout (blocked, 4-bit)
    whose buffer the tensor holds flat and contiguous, in md's type or as
    uint8 bytes. Without it, md is the tensor's dims, type and strides.

    Raises InvalidArgumentError for an object that is no DLPack producer, a
    type clayout lacks, negative, fractional or broadcast (zero) strides,
    0-d tensors, or a tensor that does not hold ``md``; UnimplementedError
    for producers on other devices (CUDA, ROCm, ...).
    """
    device = _producer_device(obj)
    if engine is not None:
        engine = as_engine(engine, "from_dlpack engine")
    if md is not None and not (isinstance(md, MemoryDesc) and md.format_kind == "blocked"):
        raise InvalidArgumentError(
            f"from_dlpack md {describe(md)}: expected a MemoryDesc with a layout (not 'any')")
    if device == KDL_CPU:
        return _over_host_array(memory_type, _numpy_of(obj), obj, engine, md)
    if device == KDL_ONEAPI:
        return _from_oneapi(memory_type, obj, engine, md)
    raise UnimplementedError(
        f"{describe(obj)} lives on DLPack device {device} "
        f"({_DEVICE_NAMES.get(device, 'unknown')}): clayout takes tensors on the CPU "
        f"(kDLCPU) and on oneAPI devices (kDLOneAPI, SYCL USM); copy it to the host first "
        f"(e.g. tensor.cpu())")


def _producer_device(obj) -> int:
    """The DLPack device type of ``obj``. Raises InvalidArgumentError for
    an object that is no DLPack producer."""
    get = getattr(obj, "__dlpack_device__", None)
    if get is None or not hasattr(obj, "__dlpack__"):
        raise InvalidArgumentError(
            f"{describe(obj)} is no DLPack producer (it lacks __dlpack__ and "
            f"__dlpack_device__): give a NumPy, dpnp or array API array, or a PyTorch tensor")
    try:
        device_type, _ = get()
        return int(device_type)
    except Error:
        raise
    except Exception as error:  # noqa: BLE001 - whatever the producer raises
        raise InvalidArgumentError(
            f"{describe(obj)}.__dlpack_device__() failed: {error}") from None


def _numpy_of(obj) -> np.ndarray:
    """``np.from_dlpack(obj)``, a view of the producer's bytes. Raises
    InvalidArgumentError where NumPy refuses the tensor."""
    try:
        return np.from_dlpack(obj)
    except Error:
        raise  # a clayout Memory's own refusal says it best
    except Exception as error:  # noqa: BLE001 - BufferError, TypeError, RuntimeError ...
        raise InvalidArgumentError(
            f"{describe(obj)}: NumPy cannot take it through DLPack ({error}); clayout takes "
            f"{', '.join(_CARRIED)} tensors: convert it first (a bf16 or f8 tensor to "
            f"float32, say)") from None


def _clayout_type(dtype, obj):
    """The clayout type of a producer's NumPy dtype. Raises InvalidArgumentError."""
    try:
        return data_type(np.dtype(dtype))
    except (InvalidArgumentError, TypeError):
        raise InvalidArgumentError(
            f"{describe(obj)}: clayout has no {np.dtype(dtype).name} type; it takes "
            f"{', '.join(_CARRIED)} tensors: convert it first") from None


def _element_strides(obj, shape, strides, unit: int) -> tuple[int, ...]:
    """A producer's ``strides`` (in units of ``unit`` bytes; DLPack's and
    usm_ndarray's are elements, NumPy's bytes) as element strides. Raises
    InvalidArgumentError for 0-d tensors and for strides no clayout layout
    has: negative, not whole elements, zero on a dim of more than one
    element (a broadcast view, whose elements share bytes)."""
    if not shape:
        raise InvalidArgumentError(
            f"{describe(obj)} has 0 dims: a memory has 1 to 12; reshape it to (1,) first")
    if 0 in shape:  # no element: its strides address nothing
        return (0,) * len(shape)
    for d, (n, s) in enumerate(zip(shape, strides)):
        if n > 1 and (s <= 0 or s % unit):
            why = ("a broadcast view, whose elements share bytes" if s == 0 else
                   "negative" if s < 0 else "not a whole number of elements")
            raise InvalidArgumentError(
                f"{describe(obj)} with strides {tuple(strides)}: dim {d}'s stride {s} is "
                f"{why}; a memory's strides are positive whole elements: copy it first "
                f"(e.g. np.ascontiguousarray)")
    return tuple(s // unit if n > 1 else 0 for n, s in zip(shape, strides))


def _desc_of(obj, shape, dt, strides) -> MemoryDesc:
    """The plain descriptor of a tensor's dims, type and element strides
    (dims of one element get the dense stride: theirs means nothing)."""
    dense = MemoryDesc(shape, dt).strides
    if 0 in shape:  # no element: any strides do, the dense ones read best
        return MemoryDesc(shape, dt)
    strides = tuple(s if n > 1 else t for n, s, t in zip(shape, strides, dense))
    try:
        return MemoryDesc(shape, dt, strides=strides)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(
            f"{describe(obj)}: its strides {strides} (elements) make no clayout layout "
            f"({error}); copy it first (e.g. np.ascontiguousarray)") from None


def _held_as(md, obj, shape, dt, strides) -> tuple[MemoryDesc, bool]:
    """(``md``, whether the tensor is md's buffer flat) after checking that
    the tensor holds md: md's own tensor (its dims, type and strides,
    plain), or md's buffer flat and contiguous (of md's type, or uint8
    bytes). Raises InvalidArgumentError naming both."""
    itself = (shape == md.dims and dt == md.dtype and not md.inner_blks
              and not md.dtype.packed and _first_element(md) == 0
              and all(n <= 1 or s == t for n, s, t in zip(shape, strides, md.strides)))
    step, dense = 1, True
    for n, s in reversed(list(zip(shape, strides))):
        dense = dense and (n <= 1 or s == step)
        step *= n
    flat = dense and dt.name in (md.data_type, "u8")
    if not (itself or flat):
        raise InvalidArgumentError(
            f"{describe(obj)} with strides {tuple(strides)} (elements) does not hold {md!r}: "
            f"give a tensor of md's dims {md.dims}, type {md.data_type} and strides "
            f"{md.strides}, or md's buffer flat and contiguous, in {md.data_type} or uint8 "
            f"(a {dt.name} tensor of {int(np.prod(shape))} elements is neither)")
    return md, not itself


def _layout(obj, md, shape, dt, strides, nbytes: int) -> tuple[MemoryDesc, int]:
    """(descriptor, bytes the memory may use) of a tensor whose bytes from
    its first element to its last are ``nbytes``: md given or the tensor's
    own. A window (a slice) ends before its descriptor's size (oneDNN's
    size runs to the end of the outermost stride): its memory uses its
    elements' bytes alone, which is all clayout reads and writes of a plain
    layout. md's buffer given flat must be md's whole size. Raises
    InvalidArgumentError."""
    if md is None:
        return _desc_of(obj, shape, dt, strides), nbytes
    md, flat = _held_as(md, obj, shape, dt, strides)
    if flat and nbytes < _whole_size(md):
        raise InvalidArgumentError(
            f"{describe(obj)}: its {nbytes} bytes are fewer than the {_whole_size(md)} "
            f"bytes of {md!r}")
    return md, nbytes


def _whole_size(md) -> int:
    """Bytes a buffer of md holds, offset0 included (as a Memory asks)."""
    return md.size + md.dtype.nbytes(md.offset0)


def _over_host_array(memory_type, array: np.ndarray, obj, engine, md):
    """A host memory over ``array``'s bytes (``obj`` its producer), or a
    copy of them on a device ``engine``."""
    dt = _clayout_type(array.dtype, obj)
    strides = _element_strides(obj, array.shape, array.strides, array.itemsize)
    data = _bytes_of(array, strides)
    md, nbytes = _layout(obj, md, array.shape, dt, strides, data.nbytes)
    if engine is not None and engine.is_device:  # the same layout, copied
        raw = np.zeros(max(_whole_size(md), data.nbytes), dtype=np.uint8)
        raw[: data.nbytes] = data
        return memory_type(md, engine, raw=raw)
    memory = memory_type._wrap(md, engine or Engine("host"), data, nbytes)
    memory._dlpack_producer = obj  # (its bytes hold it already; this says so)
    return memory


class _ByteRange:
    """The bytes of an array from its first element to its last, as a flat
    uint8 ``__array_interface__``; holds the array (hence its producer)."""

    def __init__(self, array: np.ndarray, nbytes: int):
        self.array = array
        self.__array_interface__ = {
            "data": (array.__array_interface__["data"][0], not array.flags.writeable),
            "shape": (nbytes,), "typestr": "|u1", "version": 3}


def _span_elements(shape, strides) -> int:
    """Elements from a tensor's first to its last, gaps included (0 for none)."""
    if 0 in shape:
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def _bytes_of(array: np.ndarray, strides) -> np.ndarray:
    """A flat uint8 array over ``array``'s bytes (element strides
    ``strides``, none negative), from its first element to its last, not
    copied; read-only when ``array`` is."""
    if array.size == 0:
        return np.zeros(0, dtype=np.uint8)
    return np.asarray(_ByteRange(array, _span_elements(array.shape, strides) * array.itemsize))


def _from_oneapi(memory_type, obj, engine, md):
    """A SYCL memory over a oneAPI-device tensor's USM (a copy on another
    kind of ``engine``)."""
    tensor = tensor_module()
    try:
        x = tensor.from_dlpack(obj)
    except Exception as error:  # noqa: BLE001 - dpctl raises several kinds
        raise InvalidArgumentError(
            f"{describe(obj)}: usm_ndarray cannot take it through DLPack ({error})") from None
    if engine is not None and engine.kind != "sycl":
        return _over_host_array(memory_type, tensor.asnumpy(x), obj, engine, md)
    dt = _clayout_type(x.dtype, obj)
    strides = _element_strides(obj, x.shape, x.strides, 1)
    nbytes = _span_elements(x.shape, strides) * x.itemsize
    md, nbytes = _layout(obj, md, x.shape, dt, strides, nbytes)
    engine = engine or _sycl_engine_of(x.sycl_queue)
    if not nbytes:
        return memory_type(md, engine)  # no bytes to share
    face = x.__sycl_usm_array_interface__
    first = face["data"][0] + int(face.get("offset") or 0) * x.itemsize
    storage, nbytes, events = engine.backend.adopt(md, Span(x, face, first, nbytes))
    return memory_type._wrap(md, engine, storage, nbytes, events)


# SYCL engines made for producers' queues, one per context and device while
# in use: building an engine reads the device's profile.
_SYCL_ENGINES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _sycl_engine_of(queue) -> Any:
    """A SYCL engine (its own in-order queue) on the context and device of
    ``queue``."""
    key = (queue.sycl_context, queue.sycl_device)
    engine = _SYCL_ENGINES.get(key)
    if engine is None:
        engine = _SYCL_ENGINES.setdefault(
            key, Engine("sycl", context=queue.sycl_context, device=queue.sycl_device))
    return engine
