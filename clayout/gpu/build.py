"""Build generated kernels once per (context, kernel key) and launch them."""
from __future__ import annotations

import threading
import time

import numpy as np
import pyopencl as cl

from .. import verbose
from .cache import kernel_cache
from .plan import KernelPlan
from .render import render_kernel, render_template


def build_options(device) -> list[str]:
    """Exact division where the device can do it: the formula divides by dst scales."""
    options = []
    if device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
        options.append("-cl-fp32-correctly-rounded-divide-sqrt")
    return options


def _build(engine, source: str, name: str):
    start = time.perf_counter()
    program = cl.Program(engine.context, source).build(options=build_options(engine.device))
    verbose.log("build", name, f"{(time.perf_counter() - start) * 1e3:.2f}ms")
    verbose.log("source", name, "\n" + source, min_level=2)
    return getattr(program, name)


class _LockedKernel:
    """A built kernel whose launches are safe from any thread: OpenCL kernel
    arguments are state of the kernel object until the enqueue captures
    them, so setting them and enqueuing happen under one lock."""

    def __init__(self, engine, source: str, name: str):
        self.kernel = _build(engine, source, name)
        self.source = source
        self._lock = threading.Lock()

    def _enqueue(self, queue, global_size, local_size, args, wait_for=None):
        with self._lock:
            self.kernel.set_args(*args)
            return cl.enqueue_nd_range_kernel(queue, self.kernel, global_size, local_size,
                                              wait_for=wait_for or None)


class Kernel(_LockedKernel):
    """A generated reorder/shuffle kernel and the NDRange its plan needs."""

    def __init__(self, engine, plan: KernelPlan):
        source, name, self.arg_names = render_kernel(plan)
        super().__init__(engine, source, name)
        local = min(256, engine.caps.max_work_group_size)
        self.local = (local,)
        self.global_ = (-(-plan.items // local) * local,)

    def launch(self, queue, src, dst, values: dict, wait_for=None):
        """Enqueue the kernel on buffers src and dst with the named extra
        arguments (see render_kernel); returns its Event."""
        args = (src, dst, *(values[n] for n in self.arg_names))
        return self._enqueue(queue, self.global_, self.local, args, wait_for)


def _kernel_key(engine, key):
    # Per device too: a kernel's NDRange and build options are the device's.
    return (engine.device.int_ptr, key)


def get_kernel(engine, plan: KernelPlan) -> Kernel:
    """The kernel for ``plan`` on ``engine``'s context and device, built on first use only."""
    return kernel_cache.get(engine.context, _kernel_key(engine, plan.key),
                            lambda: Kernel(engine, plan))


class _MaskedWrite(_LockedKernel):
    """The masked byte copy of templates/masked_write.cl.mako."""

    def __init__(self, engine):
        super().__init__(engine, render_template("masked_write.cl.mako"), "masked_write")
        self.local = min(256, engine.caps.max_work_group_size)

    def launch(self, queue, dst, first: int, image, mask, count: int):
        size = -(-count // self.local) * self.local
        args = (dst, image, mask, np.uint64(first), np.uint64(count))
        return self._enqueue(queue, (size,), (self.local,), args)


def upload(engine, values: np.ndarray):
    """A read-only device buffer holding ``values``."""
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    return cl.Buffer(engine.context, flags, hostbuf=np.ascontiguousarray(values))


def write_masked(engine, queue, buffer, first: int, image: np.ndarray, mask=None):
    """Enqueue writing ``image`` into ``buffer`` from byte ``first``: every
    byte, or (with ``mask``) only the bits the mask sets; returns the Event."""
    if mask is None:
        return cl.enqueue_copy(queue, buffer, image, dst_offset=first, is_blocking=False)
    kernel = kernel_cache.get(engine.context, _kernel_key(engine, ("masked_write",)),
                              lambda: _MaskedWrite(engine))
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    image_buffer = cl.Buffer(engine.context, flags, hostbuf=image)
    mask_buffer = cl.Buffer(engine.context, flags, hostbuf=mask)
    return kernel.launch(queue, buffer, first, image_buffer, mask_buffer, image.size)


def copy_buffer(queue, dst, src, nbytes, wait_for=None):
    """Enqueue a plain device copy of ``nbytes``; returns its Event."""
    return cl.enqueue_copy(queue, dst, src, byte_count=nbytes, wait_for=wait_for or None)


def marker(queue, wait_for=None):
    """An Event that completes when everything before it on ``queue`` has."""
    return cl.enqueue_marker(queue, wait_for=wait_for or None)
