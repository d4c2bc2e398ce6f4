"""Host work for an OpenCL engine, without blocking the caller.

The source (and, for the sum post-op, the destination) is read on the
caller's queue after its events; a worker thread waits for those reads,
computes with NumPy, and writes back only the bits of the destination's own
elements (a masked write), on a queue of its own that waits on nothing. A
marker on the caller's queue waits for the worker, so the caller's later
commands come after the write, and is the Event returned.
"""
from __future__ import annotations

import threading
import traceback
import warnings

import numpy as np
import pyopencl as cl

from .build import write_masked

# Reads of runs that failed to start. A pyopencl read event waits for its
# command when freed, holding the GIL: these are kept until they are done.
_ORPHANS: list = []


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
        try:
            try:
                cl.wait_for_events(self.reads)
            except cl.Error:  # an event it waited for failed: so does this run
                status = -1
                return
            written = np.zeros_like(self.dst_bytes) if self.masked else None
            self.work(self.src_bytes, self.dst_bytes, written)
            write_masked(self.engine, self.engine.host_queue, self.dst_buffer, self.first,
                         self.dst_bytes, written).wait()
        except BaseException:  # noqa: BLE001 - the event fails, and says why here
            status = -1
            warnings.warn("clayout: the host path failed; its event reports an error:\n"
                          + traceback.format_exc(), RuntimeWarning, stacklevel=1)
        finally:
            # Free the read events and scratch before the caller may go on
            # (and the interpreter may exit): then tell the event.
            self.reads = self.src_bytes = self.dst_bytes = None
            self.done.set_status(status)
