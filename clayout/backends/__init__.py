"""What differs between the runtimes an Engine runs on, behind one interface.

An Engine holds one backend (``engine.backend``): ``OpenCLBackend``
(pyopencl), ``SyclBackend`` (dpctl: SYCL queues, USM memory) or
``HostBackend`` (NumPy). Memories, primitives, the implementations and the
cross-engine reorders ask it to allocate, copy, build and launch, and never
ask which runtime it is. ``Backend`` below lists what a backend does; a
device backend (``is_device``) does all of it, the host backend only what a
host memory needs.

Storage is the runtime's own object (a pyopencl Buffer, a dpctl USM memory,
a NumPy uint8 array); events are the runtime's own (pyopencl Events,
dpctl SyclEvents) and go back to the caller as they are.
"""
from __future__ import annotations


class Backend:
    """The interface (documentation; each method is a backend's own).

    Engine and queues:
      ``kind``; ``is_device`` (False on the host, which runs calls at once);
      ``identity()`` (engines are equal when theirs are);
      ``own_queue(purpose)``, the engine's own queues ("transfer", "host");
      ``new_queue(profiling)``; ``adopt_queue(queue, what)`` (raises
      InvalidArgumentError for a queue of another kind or context);
      ``finish(queue)``.

    Storage:
      ``allocate(md, nbytes, data=None)``; ``adopt(md, buffer)`` ->
      (storage, usable bytes, events) for a foreign object given as
      ``buffer=``; ``address(storage)``; ``upload(values)`` (a read-only
      copy of a NumPy array, for kernel arguments).

    Commands (each returns its event and never blocks unless it says so):
      ``fill_zero(queue, storage, nbytes)``; ``copy(queue, dst, src,
      nbytes, wait_for)``; ``read(queue, storage, first, out)`` and
      ``write(queue, storage, first, data)`` (both block);
      ``read_async`` and ``write_async`` (the same after ``wait_for``,
      without blocking; the caller keeps the array alive until the event
      completes); ``marker(queue,
      wait_for)``; ``run_after(inputs, enqueue, queue)`` (enqueue after
      events that may fail: the event to hand out); ``host_job(queue,
      ready, host_waits, work, upstream)`` (host work ordered with the
      queue: ``enqueue()`` returns its event, ``start()`` lets it run).

    Events:
      ``check_wait_for(wait_for)``; ``status(event)`` (< 0 failed, 0 done,
      > 0 pending); ``recorded(event, queue)`` (the queue it stands for, or
      None); ``in_order(queue)``; ``flush(queue)``; ``wait(events)``
      (raises ExecutionError when one failed); ``unfailing(event)`` (what
      waits for it to end, failed or not: None once it has ended);
      ``seconds(event)``. Each buffer's pending reads and writes are
      ``pending.py``'s.

    Kernels:
      ``kernel_scope`` (what kernels are cached under) and ``device_key``;
      ``build(source, names, key)`` -> the runtime's kernels (``source``: the
      source or a function that renders it; ``key``: what it is made from,
      for the persistent cache), ``has_program(key)`` (the persistent cache
      holds it), ``background_builds`` (a build on another thread leaves
      this one running: the runtime lets go of the GIL); and, needing no
      engine (kernels outlive none): ``work_group_limit(kernel, device)``,
      ``enqueue(queue, kernel, global_size, local_size, args, wait_for,
      offset)`` and ``args_are_state`` (setting arguments and enqueuing
      must then happen under one lock).
    """


def foreign_storage(value) -> str | None:
    """The kind of engine whose runtime made ``value``, when it is device
    storage clayout can adopt: "opencl" for a pyopencl Buffer or Array,
    "sycl" for USM memory or an object with ``__sycl_usm_array_interface__``;
    None for anything else."""
    if hasattr(value, "__sycl_usm_array_interface__"):
        return "sycl"
    try:
        from .opencl import is_cl_array, is_cl_buffer
    except ImportError:  # pragma: no cover - no pyopencl
        return None
    return "opencl" if is_cl_buffer(value) or is_cl_array(value) else None
