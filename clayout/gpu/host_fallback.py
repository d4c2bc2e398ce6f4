"""Host work for an OpenCL engine, without blocking the caller.

The source (and, for the sum post-op, the destination) is read on the
caller's queue after its events; a worker thread waits for those reads,
computes with NumPy, and writes back only the bits of the destination's own
elements (a masked write), on a queue of its own that waits on nothing. A
marker on the caller's queue waits for the worker, so the caller's later
commands come after the write, and is the Event returned.
"""
from __future__ import annotations

import atexit
import threading
import traceback
import warnings

import numpy as np
import pyopencl as cl

from ..errors import ExecutionError
from .build import write_masked
from .events import wait_in_python

# Reads of runs that failed to start. A pyopencl read event waits for its
# command when freed, holding the GIL: these are kept until they are done.
_ORPHANS: list = []


class _Exit:
    """At interpreter exit, runs still waiting for their inputs are dropped,
    and the exit waits for those computing or writing: a daemon thread caught
    inside NumPy or pyopencl when the interpreter finalises aborts the process."""

    def __init__(self):
        self.cond = threading.Condition()
        self.exiting = False
        self.busy = 0
        atexit.register(self.wait)

    def start_work(self) -> bool:
        with self.cond:
            if self.exiting:
                return False
            self.busy += 1
            return True

    def end_work(self):
        with self.cond:
            self.busy -= 1
            self.cond.notify_all()

    def wait(self, timeout: float = 60.0):
        with self.cond:
            self.exiting = True
            self.cond.wait_for(lambda: self.busy == 0, timeout)


_EXIT = _Exit()


def _read(queue, buffer, span, wait_for):
    lo, hi = span
    out = np.empty(hi - lo, dtype=np.uint8)
    event = cl.enqueue_copy(queue, out, buffer, src_offset=lo, is_blocking=False,
                            wait_for=wait_for or None)
    return out, event


def run(engine, queue, src_buffer, src_span, dst_buffer, dst_span, read_dst: bool, masked: bool,
        work, wait_for=None):
    """Enqueue host work: ``work(src_bytes, dst_bytes, written)`` fills the
    destination span's bytes and, when ``masked``, sets the bits it wrote in
    ``written`` (else it writes every byte of the span, and ``written`` is None).

    ``*_span`` are (first, end) byte ranges of the buffers; ``read_dst``
    loads the destination's old bytes first. Returns an Event on ``queue``
    that completes once the destination is written (or fails, if the work
    raised); never blocks.
    """
    _ORPHANS[:] = [r for r in _ORPHANS if any(e.command_execution_status > 0 for e in r)]
    src_bytes, src_read = _read(queue, src_buffer, src_span, wait_for)
    reads = [src_read]
    if read_dst:
        dst_bytes, dst_read = _read(queue, dst_buffer, dst_span, wait_for)
        reads.append(dst_read)
    else:
        dst_bytes = np.zeros(dst_span[1] - dst_span[0], dtype=np.uint8)
    done = None
    try:
        done = cl.UserEvent(engine.context)
        finished = cl.enqueue_marker(queue, wait_for=[done])
        queue.flush()  # the reads must start while the worker waits for them
        job = _Job(engine, reads, src_bytes, dst_bytes, dst_buffer, dst_span[0], masked, work,
                   done)
        threading.Thread(target=job.run, name="clayout-host", daemon=True).start()
    except BaseException:
        if done is not None:
            done.set_status(-1)
        _ORPHANS.append(reads)
        raise
    return finished


class _Job:
    """One host-path run on a worker thread; ``done`` tells its end."""

    def __init__(self, engine, reads, src_bytes, dst_bytes, dst_buffer, first, masked, work,
                 done):
        self.engine, self.reads, self.work, self.done = engine, reads, work, done
        self.src_bytes, self.dst_bytes = src_bytes, dst_bytes
        self.dst_buffer, self.first, self.masked = dst_buffer, first, masked

    def run(self):
        status = cl.command_execution_status.COMPLETE
        working = False
        try:
            if not wait_in_python(self.reads):  # an event it waited for failed
                status = -1
                return
            working = _EXIT.start_work()
            if not working:  # the interpreter is exiting: nobody will read the result
                return
            written = np.zeros_like(self.dst_bytes) if self.masked else None
            self.work(self.src_bytes, self.dst_bytes, written)
            write = write_masked(self.engine, self.engine.host_queue, self.dst_buffer,
                                 self.first, self.dst_bytes, written)
            self.engine.host_queue.flush()
            if not wait_in_python([write]):
                raise ExecutionError("writing the host path's result to the device failed")
        except BaseException:  # noqa: BLE001 - the event fails, and says why here
            status = -1
            warnings.warn("clayout: the host path failed; its event reports an error:\n"
                          + traceback.format_exc(), RuntimeWarning, stacklevel=1)
        finally:
            # Free the read events and scratch before the caller may go on
            # (and the interpreter may exit): then tell the event.
            self.reads = self.src_bytes = self.dst_bytes = None
            self.done.set_status(status)
            if working:
                _EXIT.end_work()
