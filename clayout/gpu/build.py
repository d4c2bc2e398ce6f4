"""Build generated kernels once per (context, kernel key) and launch them."""
from __future__ import annotations

import time

import numpy as np
import pyopencl as cl

from .. import verbose
from .plan import KernelPlan
from .render import render_kernel

# context -> {plan key: Kernel}. The context is held so its address is never reused.
_CACHE: dict[int, tuple[object, dict]] = {}

#: How many programs this process has built (tests read it to show caching works).
builds = 0


def build_options(device) -> list[str]:
    """Exact division where the device can do it: the formula divides by dst scales."""
    options = []
    if device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
        options.append("-cl-fp32-correctly-rounded-divide-sqrt")
    return options


class Kernel:
    """A built kernel and the NDRange its plan needs."""

    def __init__(self, engine, plan: KernelPlan):
        global builds
        source, name, self.arg_names = render_kernel(plan)
        start = time.perf_counter()
        program = cl.Program(engine.context, source).build(options=build_options(engine.device))
        builds += 1
        verbose.log("build", name, f"{(time.perf_counter() - start) * 1e3:.2f}ms")
        verbose.log("source", name, "\n" + source, min_level=2)
        self.kernel = getattr(program, name)
        self.source = source
        local = min(256, engine.caps.max_work_group_size)
        self.local = (local,)
        self.global_ = (-(-plan.items // local) * local,)

    def launch(self, queue, src, dst, values: dict, wait_for=None):
        """Enqueue the kernel on buffers src and dst with the named extra
        arguments (see render_kernel); returns its Event."""
        self.kernel.set_args(src, dst, *(values[n] for n in self.arg_names))
        return cl.enqueue_nd_range_kernel(queue, self.kernel, self.global_, self.local,
                                          wait_for=wait_for)


def get_kernel(engine, plan: KernelPlan) -> Kernel:
    """The kernel for ``plan`` on ``engine``'s context, built on first use only."""
    ctx = engine.context
    _, kernels = _CACHE.setdefault(ctx.int_ptr, (ctx, {}))
    kernel = kernels.get(plan.key)
    if kernel is None:
        kernel = kernels[plan.key] = Kernel(engine, plan)
    return kernel


def upload(engine, values: np.ndarray):
    """A read-only device buffer holding ``values``."""
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    return cl.Buffer(engine.context, flags, hostbuf=np.ascontiguousarray(values))


def copy_buffer(queue, dst, src, nbytes, wait_for=None):
    """Enqueue a plain device copy of ``nbytes``; returns its Event."""
    return cl.enqueue_copy(queue, dst, src, byte_count=nbytes, wait_for=wait_for)


def read_buffer(queue, buffer, nbytes, wait_for=None) -> np.ndarray:
    """The first ``nbytes`` of a device buffer, read (blocking) into a new array."""
    out = np.empty(nbytes, dtype=np.uint8)
    if nbytes:
        cl.enqueue_copy(queue, out, buffer, wait_for=wait_for, is_blocking=True)
    return out


def write_buffer(queue, buffer, data: np.ndarray):
    """Write ``data`` to the start of a device buffer; returns the Event."""
    return cl.enqueue_copy(queue, buffer, data, is_blocking=True)


def marker(queue, wait_for=None):
    """An Event that completes when everything before it on ``queue`` has."""
    return cl.enqueue_marker(queue, wait_for=wait_for)
