"""Memory: a descriptor plus storage on an engine, with NumPy in and out."""
from __future__ import annotations

import numpy as np

from .engine import Engine, cl
from .errors import InvalidArgumentError
from .host.layout import gather, scatter
from .memory_desc import MemoryDesc


def _as_dtype(md: MemoryDesc, array) -> np.ndarray:
    array = np.asarray(array)
    target = md.dtype.numpy
    if array.shape != md.dims:
        raise InvalidArgumentError(
            f"array of shape {array.shape} does not match dims {md.dims!r} of {md!r}")
    if array.dtype != target and not np.can_cast(array.dtype, target, "safe"):
        raise InvalidArgumentError(
            f"array of dtype {array.dtype} cannot be stored as {md.data_type} without "
            f"loss; convert it first (e.g. array.astype(clayout.dtypes.DATA_TYPES"
            f"[{md.data_type!r}].numpy)) or reorder from a {array.dtype} memory")
    return array.astype(target, copy=False)


class Memory:
    """A tensor: a MemoryDesc and the storage that holds it on an engine.

    ``Memory(md, engine)`` allocates ``md.size`` zero bytes; ``raw=`` copies a
    physical buffer in; ``buffer=`` shares the storage of another Memory, a
    pyopencl Buffer or a pyopencl Array (no copy), which is how a submemory
    descriptor is used. Raises InvalidArgumentError for a buffer too small.
    """

    def __init__(self, md: MemoryDesc, engine: Engine, raw=None, buffer=None):
        if not isinstance(md, MemoryDesc):
            raise InvalidArgumentError(f"{md!r} is not a MemoryDesc")
        if md.format_kind != "blocked":
            raise InvalidArgumentError(
                f"{md!r}: memory cannot be created for format 'any'; give a layout")
        if raw is not None and buffer is not None:
            raise InvalidArgumentError("give raw= or buffer=, not both")
        self.md = md
        self.engine = engine
        need = md.size + md.dtype.nbytes(md.offset0)
        if buffer is not None:
            self.storage, nbytes = self._adopt(buffer)
        elif raw is not None:
            data = np.frombuffer(memoryview(raw).cast("B"), dtype=np.uint8).copy()
            nbytes = data.nbytes
            if nbytes < need:
                raise InvalidArgumentError(
                    f"raw buffer of {nbytes} bytes is smaller than the {need} bytes of {md!r}")
            self.storage = self._upload(data)
        else:
            nbytes = need
            self.storage = self._upload(np.zeros(need, dtype=np.uint8))
        if nbytes < need:
            raise InvalidArgumentError(
                f"buffer of {nbytes} bytes is smaller than the {need} bytes of {md!r}")
        self.nbytes = nbytes

    def _upload(self, data: np.ndarray):
        if not self.engine.is_opencl:
            return data
        limit = self.engine.caps.max_alloc
        if data.nbytes > limit:
            raise InvalidArgumentError(
                f"{self.md!r} needs {data.nbytes} bytes, more than the {limit} bytes "
                f"{self.engine.caps.name} allows in one buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
        # OpenCL has no empty buffers; a zero-size tensor still gets one byte.
        data = data if data.size else np.zeros(1, dtype=np.uint8)
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        return cl.Buffer(self.engine.context, flags, hostbuf=data)

    def _adopt(self, buffer):
        if isinstance(buffer, Memory):
            if buffer.engine is not self.engine:
                raise InvalidArgumentError(
                    f"buffer of {buffer!r} lives on {buffer.engine!r}, not {self.engine!r}")
            return buffer.storage, buffer.nbytes
        if self.engine.is_opencl:
            if cl is not None and hasattr(buffer, "base_data"):  # pyopencl.array.Array
                if buffer.offset:
                    raise InvalidArgumentError(
                        f"pyopencl Array with offset {buffer.offset}: only arrays that start "
                        f"at their buffer's first byte can be shared")
                return buffer.base_data, buffer.nbytes
            if cl is not None and isinstance(buffer, cl.Buffer):
                if buffer.context != self.engine.context:
                    raise InvalidArgumentError(
                        f"pyopencl Buffer of another context than {self.engine!r}")
                return buffer, buffer.size
        elif isinstance(buffer, np.ndarray) and buffer.dtype == np.uint8 and buffer.ndim == 1:
            return buffer, buffer.nbytes
        raise InvalidArgumentError(
            f"buffer {buffer!r}: expected a Memory, "
            + ("a pyopencl Buffer or Array" if self.engine.is_opencl else "a 1-d uint8 NumPy array"))

    @classmethod
    def from_numpy(cls, md: MemoryDesc, engine: Engine, array) -> "Memory":
        """A new Memory holding ``array`` (shape md.dims, logical order) in md's layout.

        The array is converted to md's type only where NumPy calls that safe;
        padding is written with zeros. Raises InvalidArgumentError otherwise.
        """
        if not isinstance(md, MemoryDesc) or md.format_kind != "blocked":
            raise InvalidArgumentError(f"{md!r}: from_numpy needs a descriptor with a layout")
        array = _as_dtype(md, array)
        raw = np.zeros(md.size + md.dtype.nbytes(md.offset0), dtype=np.uint8)
        if array.size:
            scatter(md, array, raw)
        return cls(md, engine, raw=raw)

    def raw(self) -> np.ndarray:
        """A copy of the whole physical buffer as uint8 (blocks until it is read)."""
        if not self.engine.is_opencl:
            return self.storage.copy()
        out = np.empty(self.storage.size, dtype=np.uint8)
        cl.enqueue_copy(self.engine.queue, out, self.storage, is_blocking=True)
        return out[: self.nbytes]

    def to_numpy(self) -> np.ndarray:
        """The tensor as a NumPy array of shape md.dims in logical order.

        Reads through the engine's own queue: wait for streams that write this
        memory (``stream.wait()``) first.
        """
        if self.md.nelems() == 0:
            return np.zeros(self.md.dims, dtype=self.md.dtype.numpy)
        return gather(self.md, self.raw())

    def __repr__(self):
        return f"<Memory {self.md!r} on {self.engine!r}>"
