"""OpenCL events: statuses, the events clayout hands out after events that
may fail, and watching for completion from threads. (The commands still
pending on a buffer are clayout/backends/pending.py's.)"""
from __future__ import annotations

import atexit
import threading
import time

import pyopencl as cl

from ..errors import ExecutionError

_DONE = cl.command_execution_status.COMPLETE
_OUT_OF_ORDER = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
_USER = cl.command_type.USER


def in_order(queue) -> bool:
    return not queue.properties & _OUT_OF_ORDER


def status(event) -> int:
    """An OpenCL event's status: < 0 failed, 0 (COMPLETE) done, > 0 pending."""
    return event.command_execution_status


def recorded(event, queue):
    """The queue a command's ``event``, enqueued on ``queue``, stands for in
    a buffer's pending commands (backends/pending.py): None for a user event
    (it is on no queue: a later command there does not end after it). A
    command clayout enqueued counts as its own from now (see ``doubtful``)."""
    if event.command_type == _USER:
        return None
    if queue is not None:
        mark_own(event)
    return queue


def flush(queue) -> None:
    queue.flush()


def unfailing(event):
    """What a command that must only wait for ``event`` to end, not for it
    to succeed (a write after a read), waits for: None once it has ended;
    ``event`` itself where it cannot fail unseen (a command of clayout's
    own, see ``doubtful``); else (a user event: a settled one, a host job's)
    a user event that a watcher completes once ``event`` has ended. Never
    blocks."""
    state = event.command_execution_status
    if state <= _DONE:
        return None
    if event.command_type != _USER:
        return event
    stand_in = cl.UserEvent(event.context)
    when_complete(event, lambda: stand_in.set_status(_DONE))
    return stand_in


# -- statuses OpenCL does not pass on ------------------------------------------------
#
# Whether a command fails when an event in its wait list failed is left to
# the implementation: PoCL fails it, Intel's OpenCL runs it and reports
# success. So clayout checks the statuses it depends on itself: a command
# enqueued after events that may still fail hands out, instead of its own
# event, a user event that fails when any of them did (``settle``).

# clayout's own commands (kernels, copies, markers) that may be running: their
# status is their own, and no input of theirs may fail unseen (those were
# settled), so a command waiting for them need not check them. By identity.
_OWN: dict = {}
_OWN_LOCK = threading.Lock()
_own_limit = 256


def mark_own(event) -> None:
    """Count ``event`` as a command clayout enqueued (see ``doubtful``)."""
    global _own_limit
    with _OWN_LOCK:
        _OWN[id(event)] = event
        if len(_OWN) > _own_limit:  # drop the finished; the rest stay counted
            for key, kept in list(_OWN.items()):
                if kept.command_execution_status <= _DONE:
                    del _OWN[key]
            _own_limit = max(256, 2 * len(_OWN))


def doubtful(events, statuses=None) -> list:
    """The events in ``events`` (whose ``statuses`` may be given) that are
    still running and are not commands of clayout's own: user events and
    other code's commands, whose failure a command waiting for them may not
    see."""
    if statuses is None:
        statuses = [e.command_execution_status for e in events]
    with _OWN_LOCK:
        return [e for e, status in zip(events, statuses)
                if status > _DONE and _OWN.get(id(e)) is not e]


def failed_status(events) -> int:
    """The first negative status among ``events`` (0 when none failed yet)."""
    return min([status for status in (e.command_execution_status for e in events)
                if status < 0] or [_DONE])


def failed_event(context, status: int = -1):
    """A user event that has already failed with ``status``."""
    event = cl.UserEvent(context)
    event.set_status(status if status < 0 else -1)
    return event


def settle(event, doubt: list, context, caps=None, queue=None):
    """The event to hand out for ``event``, a command enqueued after the
    events in ``doubt`` (see ``doubtful``): ``event`` itself when ``doubt``
    is empty, else a user event that completes once all of them have, with
    the first failed status among them if any failed. A marker on ``queue``
    after it makes the queue's later commands, and its ``finish()``, wait
    for it too. Never blocks."""
    if not doubt:
        return event
    result = cl.UserEvent(context)
    events = [event, *doubt]
    # Held until ``result`` is set: PoCL 3.1 touches the commands waiting on
    # a user event when it fails, so they must not be freed before.
    marker = cl.enqueue_marker(queue, wait_for=[result]) if queue is not None else None

    key = queue.int_ptr if queue is not None else None

    def finish():
        nonlocal marker
        try:
            wait_in_python(events, caps)
            status = failed_status(events)
            result.set_status(status if status < 0 else _DONE)
        finally:
            marker = None
            with _SETTLING_LOCK:
                waiting = _SETTLING.get(key)
                if waiting is not None:
                    waiting.discard(result)
                    if not waiting:
                        del _SETTLING[key]

    if queue is not None:
        with _SETTLING_LOCK:
            _SETTLING.setdefault(key, set()).add(result)
        queue.flush()  # the queue must reach ``event`` while the watcher waits
    _start_watcher(finish)
    return result


# The settled events of each queue (by its address) not yet set: a queue's
# finish() may return before them (PoCL ends a queue's wait early once a
# command failed), so Stream.wait() waits for them too.
_SETTLING: dict = {}
_SETTLING_LOCK = threading.Lock()


def wait_settled(queue, caps=None) -> None:
    """Block until the events ``settle`` handed out for ``queue`` are set."""
    with _SETTLING_LOCK:
        pending = list(_SETTLING.get(queue.int_ptr, ()))
    if pending:
        wait_in_python(pending, caps)


def run_after(inputs: list, enqueue, engine, queue):
    """Enqueue a command on ``queue`` after the events ``inputs`` and return
    the event to hand out for it: ``enqueue()``'s own, or a settled one (see
    ``settle``) when an input may still fail. When one has already failed,
    nothing is enqueued and the event returned has failed too."""
    if not inputs:
        return enqueue()
    statuses = [e.command_execution_status for e in inputs]
    if min(statuses) < 0:
        return failed_event(engine.context, min(statuses))
    doubt = doubtful(inputs, statuses)
    return settle(enqueue(), doubt, engine.context, engine.caps, queue)


def wait_in_python(events, caps=None) -> bool:
    """Block until every event has completed or failed; True if none failed.

    For clayout's own daemon threads: it polls and sleeps in Python, because a
    daemon thread blocked inside pyopencl when the interpreter exits aborts
    the process ("terminate called without an active exception"), while one
    sleeping in Python just stops. Polls every 10 us at first, 2 ms at most.
    A device whose ``caps.runs_when_waited`` is waited for in OpenCL instead.
    """
    if caps is not None and caps.runs_when_waited:
        for event in events:  # one at a time: they may belong to several contexts
            try:
                event.wait()
            except cl.Error:
                pass
        return all(e.command_execution_status == _DONE for e in events)
    delay = 1e-5
    while any(status_of(e) > _DONE for e in events):
        time.sleep(delay)
        delay = min(2 * delay, 2e-3)
    return all(status_of(e) == _DONE for e in events)


def status_of(event) -> int:
    """The status of an OpenCL event, or of another runtime's (a host
    memory's pending commands may come from a SYCL engine): those have a
    ``execution_status`` that is complete or not, and never fail."""
    if isinstance(event, cl.Event):
        return event.command_execution_status
    return _DONE if event.execution_status.name == "complete" else _DONE + 1


_WATCHERS: set = set()
_WATCHERS_LOCK = threading.Lock()


def when_complete(event, callback, caps=None):
    """Call ``callback()`` on a daemon thread once ``event`` has completed or failed.

    Not pyopencl's ``Event.set_callback``: its notification thread also
    aborts the process when the interpreter exits first. At exit, callbacks
    of work that completes within a second still run.
    """
    def watch():
        wait_in_python([event], caps)
        callback()

    _start_watcher(watch)


def _start_watcher(work):
    """Run ``work()`` on a daemon thread that the exit handler below joins."""
    def run():
        try:
            work()
        finally:
            with _WATCHERS_LOCK:
                _WATCHERS.discard(thread)

    thread = threading.Thread(target=run, name="clayout-event", daemon=True)
    with _WATCHERS_LOCK:
        _WATCHERS.add(thread)
    thread.start()


@atexit.register
def _let_watchers_finish(timeout: float = 1.0):
    deadline = time.monotonic() + timeout
    with _WATCHERS_LOCK:
        watchers = list(_WATCHERS)
    for thread in watchers:
        thread.join(max(0.0, deadline - time.monotonic()))


def device_seconds(event):
    """The device time of a completed command, or None when its queue does
    not profile (or it is a marker of the host path, which has no span)."""
    try:
        return (event.profile.end - event.profile.start) * 1e-9
    except cl.Error:
        return None


def wait_for_events(events):
    """Block until every event in ``events`` has completed. Raises
    ExecutionError when one of them failed."""
    if events:
        try:
            cl.wait_for_events(events)
        except cl.Error as error:
            raise ExecutionError(f"an event waited for failed: {error}") from None

