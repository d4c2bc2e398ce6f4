"""Host work for an OpenCL engine, without blocking the caller.

The source (and, for the sum post-op, the destination) is read on the
caller's queue after its events; a worker thread waits for those reads,
computes with NumPy, and writes back only the bits of the destination's own
elements (a masked write), on a queue of its own that waits on nothing. A
marker on the caller's queue waits for the worker, so the caller's later
commands come after the write, and is the Event returned.
"""
from __future__ import annotations

import sys
import threading
import traceback

import numpy as np
import pyopencl as cl

from .build import write_masked


def _read(queue, buffer, span, wait_for):
    lo, hi = span
    out = np.empty(hi - lo, dtype=np.uint8)
    event = cl.enqueue_copy(queue, out, buffer, src_offset=lo, is_blocking=False,
                            wait_for=wait_for or None)
    return out, event


def run(engine, queue, src_buffer, src_span, dst_buffer, dst_span, read_dst: bool, work,
        wait_for=None):
    """Enqueue host work: ``work(src_bytes, dst_bytes, written)`` fills the
    destination span's bytes and sets the bits it wrote in ``written``.

    ``*_span`` are (first, end) byte ranges of the buffers; ``read_dst``
    loads the destination's old bytes first. Returns an Event on ``queue``
    that completes once the destination is written; never blocks.
    """
    src_bytes, src_read = _read(queue, src_buffer, src_span, wait_for)
    reads = [src_read]
    if read_dst:
        dst_bytes, dst_read = _read(queue, dst_buffer, dst_span, wait_for)
        reads.append(dst_read)
    else:
        dst_bytes = np.zeros(dst_span[1] - dst_span[0], dtype=np.uint8)
    done = cl.UserEvent(engine.context)
    finished = cl.enqueue_marker(queue, wait_for=[done])
    queue.flush()  # the reads must start while the worker waits for them

    def worker():
        status = cl.command_execution_status.COMPLETE
        try:
            cl.wait_for_events(reads)
            written = np.zeros_like(dst_bytes)
            work(src_bytes, dst_bytes, written)
            write_queue = engine.internal_queue("host")
            write_masked(engine, write_queue, dst_buffer, dst_span[0], dst_bytes, written).wait()
        except BaseException:  # noqa: BLE001 - reported, and the event fails
            status = -1
            print("clayout: the host path failed; its event reports an error:\n"
                  + traceback.format_exc(), file=sys.stderr, flush=True)
        finally:
            done.set_status(status)

    threading.Thread(target=worker, name="clayout-host", daemon=True).start()
    return finished
