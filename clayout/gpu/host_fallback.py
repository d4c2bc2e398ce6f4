"""Host work for an OpenCL engine, without blocking the caller.

A marker on the caller's queue (after its ``wait_for``) tells when the inputs
are ready. A worker thread waits for it, then region by region copies the
bytes it needs from the device, computes with NumPy, and writes back only
the bits of the destination's own elements (a masked write), on a queue of
the engine's that waits on nothing. A second marker on the caller's queue
waits for the worker, so the caller's later commands come after the write,
and is the Event returned. Host memory stays bounded by the region size.
"""
from __future__ import annotations

import atexit
import threading
import traceback
import warnings

import numpy as np
import pyopencl as cl

from .build import write_masked
from .events import wait_in_python


class _Exit:
    """At interpreter exit, runs still waiting for their inputs are dropped,
    and the exit waits for those copying, computing or writing: a daemon
    thread caught inside NumPy or pyopencl when the interpreter finalises
    aborts the process ("terminate called without an active exception")."""

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


def run(engine, queue, src_buffer, dst_buffer, regions, read_dst: bool, work, wait_for=None):
    """Enqueue host work on ``queue`` after ``wait_for``; never blocks.

    ``regions()`` yields (region, src span, dst span, fills) as
    ``clayout.host.reorder.staging_regions`` does; for each, the worker calls
    ``work(region, src_bytes, src_first_element, dst_bytes, dst_first_element,
    written)``, which fills the destination span's bytes and, unless the
    region ``fills`` its span, sets the bits it wrote in ``written``.
    ``read_dst`` loads the destination's old bytes first. Returns a user
    event that completes once the destination is written, or fails if an
    event waited for failed or the work raised (a marker on ``queue`` after
    it keeps the queue's later commands behind the work; the marker's own
    status after a failure is up to the implementation).
    """
    inputs = [cl.enqueue_marker(queue, wait_for=wait_for or None), *(wait_for or ())]
    done = cl.UserEvent(engine.context)
    if engine.caps.runs_when_waited:
        # A simulator that runs commands only when the host waits or flushes
        # (in the calling thread, spinning on user events): run here, which
        # blocks, before anything waits on ``done``.
        _Job(engine, inputs, src_buffer, dst_buffer, regions, read_dst, work, done).run()
        cl.enqueue_marker(queue, wait_for=[done])
        return done
    try:
        finished = cl.enqueue_marker(queue, wait_for=[done])
        queue.flush()  # the caller's queue must reach the marker while the worker waits
        job = _Job(engine, inputs, src_buffer, dst_buffer, regions, read_dst, work, done,
                   finished)
        threading.Thread(target=job.run, name="clayout-host", daemon=True).start()
    except BaseException:
        done.set_status(-1)
        raise
    return done


class _Job:
    """One host-path run on a worker thread; ``done`` tells its end."""

    def __init__(self, engine, inputs, src_buffer, dst_buffer, regions, read_dst, work, done,
                 finished=None):
        # ``inputs``: the marker after the queue's earlier commands, and the
        # events waited for themselves (whose failure the marker may not show).
        self.engine, self.inputs, self.done = engine, inputs, done
        # PoCL 3.1 keeps a failed command in the lists of the events it waits
        # for: were the caller to free ``finished`` before ``done`` is set,
        # setting it would touch freed memory (an abort). Held until then.
        self.finished = finished
        self.src_buffer, self.dst_buffer = src_buffer, dst_buffer
        self.regions, self.read_dst, self.work = regions, read_dst, work

    def _read(self, buffer, span):
        first, end, _ = span
        out = np.empty(end - first, dtype=np.uint8)
        if end > first:
            cl.enqueue_copy(self.engine.host_queue, out, buffer, src_offset=first,
                            is_blocking=True)
        return out

    def _one(self, region, src_span, dst_span, fills):
        src_bytes = self._read(self.src_buffer, src_span) if src_span else None
        if self.read_dst:
            dst_bytes = self._read(self.dst_buffer, dst_span)
        else:
            dst_bytes = np.zeros(dst_span[1] - dst_span[0], dtype=np.uint8)
        written = None if fills else np.zeros_like(dst_bytes)
        self.work(region, src_bytes, src_span[2] if src_span else 0, dst_bytes, dst_span[2],
                  written)
        write_masked(self.engine, self.engine.host_queue, self.dst_buffer, dst_span[0],
                     dst_bytes, written).wait()

    def run(self):
        status = cl.command_execution_status.COMPLETE
        working = False
        try:
            if not wait_in_python(self.inputs, self.engine.caps):  # an input failed
                status = -1
                return
            working = _EXIT.start_work()
            if not working:  # the interpreter is exiting: nobody will read the result
                return
            for region, src_span, dst_span, fills in self.regions():
                self._one(region, src_span, dst_span, fills)
        except BaseException:  # noqa: BLE001 - the event fails, and says why here
            status = -1
            warnings.warn("clayout: the host path failed; its event reports an error:\n"
                          + traceback.format_exc(), RuntimeWarning, stacklevel=1)
        finally:
            self.done.set_status(status)
            self.inputs = self.finished = None
            if working:
                _EXIT.end_work()
