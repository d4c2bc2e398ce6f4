"""Host work for a device engine, without blocking the caller where the
runtime allows it.

The engine's backend orders the work with the caller's queue (``host_job``):
on OpenCL, a marker after the caller's ``wait_for`` tells when the inputs are
ready, a worker thread waits for it, and a user event behind a second marker
is the Event returned; on SYCL, which has no user events, the work runs in
the caller once its inputs are ready. Either way, region by region, the
bytes needed come from the device, NumPy computes, and only the bits of the
destination's own elements go back (a masked write) on a queue of the
engine's that waits on nothing. Host memory stays bounded by the region size.
"""
from __future__ import annotations

import numpy as np

from .build import write_masked


def run(engine, queue, src_buffer, dst_buffer, regions, read_dst: bool, work, wait_for=None):
    """Enqueue host work on ``queue`` after ``wait_for``; returns its event.

    ``regions()`` yields (region, src span, dst span, fills) as
    ``clayout.host.reorder.staging_regions`` does; for each, the worker calls
    ``work(region, src_bytes, src_first_element, dst_bytes, dst_first_element,
    written)``, which fills the destination span's bytes and, unless the
    region ``fills`` its span, sets the bits it wrote in ``written``.
    ``read_dst`` loads the destination's old bytes first. The event
    completes once the destination is written, or fails if an event waited
    for failed or the work raised (see the backend's ``host_job``).
    """
    backend = engine.backend
    queue_for_host = engine.host_queue

    def read(buffer, span):
        first, end, _ = span
        out = np.empty(end - first, dtype=np.uint8)
        backend.read(queue_for_host, buffer, first, out)
        return out

    def all_regions():
        for region, src_span, dst_span, fills in regions():
            src_bytes = read(src_buffer, src_span) if src_span else None
            if read_dst:
                dst_bytes = read(dst_buffer, dst_span)
            else:
                dst_bytes = np.zeros(dst_span[1] - dst_span[0], dtype=np.uint8)
            written = None if fills else np.zeros_like(dst_bytes)
            work(region, src_bytes, src_span[2] if src_span else 0, dst_bytes, dst_span[2],
                 written)
            backend.wait([write_masked(engine, queue_for_host, dst_buffer, dst_span[0],
                                       dst_bytes, written)])

    job = backend.host_job(queue, list(wait_for or ()), [], all_regions)
    try:
        return job.enqueue()
    finally:
        job.start()
