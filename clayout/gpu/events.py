"""Events: the writes still pending on a buffer, and callbacks on completion."""
from __future__ import annotations

import threading

import pyopencl as cl

_DONE = cl.command_execution_status.COMPLETE
_OUT_OF_ORDER = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE


def is_complete(event) -> bool:
    """True once ``event`` has finished (or failed: a negative status)."""
    return event.command_execution_status <= _DONE


def in_order(queue) -> bool:
    return not queue.properties & _OUT_OF_ORDER


class PendingWrites:
    """The events of writes clayout enqueued on some bytes and that may still run.

    Each entry keeps the queue its command went to (None for a user event):
    an event on an in-order queue makes the earlier ones of that queue
    redundant, and a queue is flushed before another queue waits on it
    (OpenCL requires that for events to make progress across queues).
    Safe to use from any thread.
    """

    def __init__(self, entries=()):
        self._lock = threading.Lock()
        self._entries = list(entries)

    def add(self, event, queue=None):
        """Record a write: ``event``, enqueued on ``queue`` (None: not on a queue)."""
        ordered = queue is not None and in_order(queue)
        with self._lock:
            self._entries = [(e, q) for e, q in self._entries
                             if not (ordered and q == queue) and not is_complete(e)]
            self._entries.append((event, queue))

    def entries(self) -> list:
        """The (event, queue) pairs still pending."""
        with self._lock:
            self._entries = [(e, q) for e, q in self._entries if not is_complete(e)]
            return list(self._entries)

    def wait_list(self, queue=None) -> list:
        """The pending events, for a command about to be enqueued on ``queue``
        (None: waited on by the host). Flushes the other queues they are on."""
        entries = self.entries()
        flushed = []
        for _, q in entries:
            if q is not None and q != queue and q not in flushed:
                q.flush()
                flushed.append(q)
        return [e for e, _ in entries]


def when_complete(event, callback):
    """Call ``callback()`` on a daemon thread once ``event`` has completed or failed.

    Not pyopencl's ``Event.set_callback``: its notification thread aborts the
    process ("terminate called without an active exception") when the
    interpreter exits first; a Python daemon thread just stops.
    """
    def watch():
        try:
            event.wait()
        except cl.Error:  # failed: report it all the same
            pass
        callback()

    threading.Thread(target=watch, name="clayout-event", daemon=True).start()


def wait_for_events(events):
    """Block until every event in ``events`` has completed."""
    if events:
        cl.wait_for_events(events)
