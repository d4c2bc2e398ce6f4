"""What clayout enqueued on one buffer and may still run: the writes, which
every later command touching their bytes waits for, and the reads, which
every later write of their bytes waits for.

One ``Pending`` per buffer, whichever Memory objects share it (device
buffers by their address, host ones by their data pointer), so that
submemories and memories adopted from the same pyopencl Buffer, USM
allocation or NumPy array see each other's commands; an entry keeps the
descriptor it touched, so that provably disjoint windows of one layout
(the halves of an in-place concat) do not wait for each other.

Runtime-neutral: each entry carries its runtime's event operations
(``ops``, a backend: ``status``, ``recorded``, ``in_order``, ``flush``,
``wait`` and ``unfailing``; see clayout/backends).
"""
from __future__ import annotations

import threading
import weakref

from ..errors import ExecutionError
from ..md_addressing import may_overlap

#: A status (see the backends' ``status``): < 0 failed, 0 done, > 0 pending.
_DONE = 0


class PendingWrites:
    """The writes clayout enqueued on one buffer that may still run.

    Each entry keeps its event, the queue its command went to (None for a
    user event), the descriptor it wrote (None: anywhere) and the runtime's
    event operations (``ops``), so that a command waits only for writes that
    may touch what it touches. An event on an in-order queue supersedes the
    earlier ones of that queue (they finish first); a queue is flushed
    before another waits on it (OpenCL needs that for progress across
    queues). A failed write is reported once, by the next call that would
    have waited for it.

    ``lock`` (shared with the buffer's reads, see ``Pending``) is held by a
    command from building its wait list to recording its event, so that
    events are recorded in the order they were enqueued. Safe to use from
    any thread.
    """

    #: Whether a failed entry is kept to be reported (a failed write left
    #: the bytes undefined; a failed read changed nothing).
    keeps_failed = True

    def __init__(self, events=(), ops=None, lock=None):
        self.lock = threading.RLock() if lock is None else lock
        self.ops = ops
        self._entries = [(e, None, None, ops) for e in events]
        self._failed = []

    def _running(self, entry) -> bool:
        """Whether ``entry``'s command is still running; a failed one is
        kept aside to be reported (where ``keeps_failed``)."""
        state = entry[3].status(entry[0])
        if state < 0 and self.keeps_failed:
            self._failed.append(entry)
        return state > _DONE

    def _prune(self):
        self._entries = [entry for entry in self._entries if self._running(entry)]

    def add(self, event, queue=None, md=None, ops=None):
        """Record a command on ``md`` (None: anywhere), enqueued on ``queue``
        (``ops``: the runtime's event operations, when not this buffer's)."""
        ops = ops or self.ops
        self.add_recorded(event, ops.recorded(event, queue), md, ops)

    def add_recorded(self, event, queue, md, ops):
        """``add``, with ``queue`` what ``ops.recorded`` made of it (see
        ``record``: one event recorded on several buffers asks once)."""
        same = queue if queue is not None and ops.in_order(queue) else None
        with self.lock:
            # One pass: drop the finished, keep the failed for the next
            # reader, and let this event stand for its queue's earlier ones.
            kept = []
            for entry in self._entries:
                if not self._running(entry):
                    continue
                if same is not None and (entry[1] is same or entry[1] == same):
                    if entry[2] is None or entry[2] != md:
                        md = None  # now stands for commands elsewhere too
                else:
                    kept.append(entry)
            kept.append((event, queue, md, ops))
            self._entries = kept
            self._added()

    def _added(self):
        """Called under the lock after each ``add`` (see PendingReads)."""

    def wait_list(self, queue=None, md=None) -> list:
        """The pending events that may touch ``md`` (None: anywhere), for a
        command about to be enqueued on ``queue`` (None: the host waits).
        Flushes the other queues they are on. Raises ExecutionError once for
        a failed write among them."""
        with self.lock:
            if not self._entries and not self._failed:
                return []
            self._prune()
            failed = [e for e in self._failed if may_overlap(e[2], md)]
            if failed:
                self._failed = [e for e in self._failed if e not in failed]
                state = failed[0][3].status(failed[0][0])
                raise ExecutionError(
                    f"a write clayout enqueued on this memory failed (status {state}); "
                    f"its values are undefined until written again")
            # A command on an in-order queue starts after that queue's
            # earlier commands: their events need not be waited for (a
            # shorter list also enqueues faster).
            same = queue if queue is not None and self.ops.in_order(queue) else None
            entries = [e for e in self._entries
                       if (same is None or e[1] is None or e[1] != same)
                       and may_overlap(e[2], md)]
            events = self._events(entries)
        flushed = []
        for _, q, _, ops in entries:
            if q is not None and q != queue and q not in flushed:
                ops.flush(q)
                flushed.append(q)
        return events

    def _events(self, entries) -> list:
        """What a command waits for in place of ``entries`` (under the lock)."""
        return [e[0] for e in entries]

    def wait(self, md=None) -> None:
        """Block until the pending events that may touch ``md`` (None:
        anywhere) have completed. Raises ExecutionError when one failed."""
        with self.lock:
            entries = [(e, ops) for e, _, m, ops in self._entries if may_overlap(m, md)]
        for event, ops in entries:
            ops.wait([event])


class PendingReads(PendingWrites):
    """The commands clayout enqueued that read one buffer and may still run:
    a later write of the bytes they read waits for them (a later read need
    not). A failed read changed nothing, so it is dropped, never reported,
    and what a write waits for in its place is an event that completes once
    the read has ended, whatever its status (the runtime's ``unfailing``):
    where a command after a failed event fails (PoCL), a failed read must
    not fail the write after it."""

    keeps_failed = False

    def __init__(self, events=(), ops=None, lock=None):
        super().__init__(events, ops, lock)
        self._stand_ins = {}  # id(event) -> (event, the event that stands in for it)

    def _prune(self):
        self._entries = [e for e in self._entries if e[3].status(e[0]) > _DONE]
        self._added()

    def _added(self):
        if self._stand_ins:  # keep the stand-ins of the entries still pending
            live = {id(e[0]) for e in self._entries}
            self._stand_ins = {k: v for k, v in self._stand_ins.items() if k in live}

    def _events(self, entries) -> list:
        events = []
        for event, _, _, ops in entries:
            known = self._stand_ins.get(id(event))
            if known is not None and known[0] is event:
                events.append(known[1])
                continue
            stand_in = ops.unfailing(event)
            if stand_in is not None:
                if stand_in is not event:  # made once per read, whoever waits
                    self._stand_ins[id(event)] = (event, stand_in)
                events.append(stand_in)
        return events

    def wait(self, md=None) -> None:
        """Block until the pending reads of ``md`` (None: anywhere) have
        ended, whether they completed or failed."""
        with self.lock:
            entries = [(e, ops) for e, _, m, ops in self._entries if may_overlap(m, md)]
        for event, ops in entries:
            try:
                ops.wait([event])
            except ExecutionError:
                pass  # a failed read changed nothing


class Pending:
    """The commands clayout enqueued on one buffer that may still run:
    ``writes`` and ``reads``, under one ``lock`` (see PendingWrites). A
    command takes the lock of each buffer it touches (``hold``), builds its
    wait list (a read: the writes of what it reads; a write: the writes and
    reads of what it writes), enqueues, and records its event as a write of
    its destination and a read of its sources before letting go."""

    def __init__(self, events=(), ops=None):
        self.lock = threading.RLock()
        self.writes = PendingWrites(events, ops, self.lock)
        self.reads = PendingReads((), ops, self.lock)

    def wait_list(self, queue=None, md=None, write: bool = False) -> list:
        """The events a command on ``queue`` that reads (or, ``write``,
        writes) ``md`` waits for. Raises ExecutionError once for a failed
        write among them."""
        events = self.writes.wait_list(queue, md)
        return events + self.reads.wait_list(queue, md) if write else events


def record(event, queue, ops, writes=(), reads=()):
    """Record ``event``, a command of ``ops``' runtime enqueued on
    ``queue``, as a write of each (Pending, descriptor) in ``writes`` and
    a read of each in ``reads`` (under their locks, see ``hold``)."""
    queue = ops.recorded(event, queue)
    for pending, md in writes:
        pending.writes.add_recorded(event, queue, md, ops)
    for pending, md in reads:
        pending.reads.add_recorded(event, queue, md, ops)


class hold:
    """A context manager holding the locks of ``pendings`` (Pending objects or
    None), each once and in one order for the whole process (by identity),
    so that two threads holding overlapping sets never deadlock."""

    __slots__ = ("locks",)

    def __init__(self, *pendings):
        locks = [p.lock for p in pendings if p is not None]
        if len(locks) == 2:  # a source and a destination: the common case
            a, b = locks
            self.locks = [a] if a is b else [a, b] if id(a) < id(b) else [b, a]
        else:
            unique = {id(lock): lock for lock in locks}
            self.locks = [unique[key] for key in sorted(unique)]

    def __enter__(self):
        taken = []
        try:
            for lock in self.locks:
                lock.acquire()
                taken.append(lock)
        except BaseException:
            for lock in reversed(taken):
                lock.release()
            raise
        return self

    def __exit__(self, *exc):
        for lock in reversed(self.locks):
            lock.release()


# One Pending per device buffer, whichever Memory objects use it; the Memory
# objects hold theirs, so a buffer's address is not reused meanwhile.
_BY_BUFFER: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_BY_HOST_BUFFER: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_BY_BUFFER_LOCK = threading.Lock()


def pending_of(backend, storage, events=()) -> Pending:
    """The Pending of a device buffer of ``backend`` (made on first use,
    starting with the writes ``events``, e.g. a pyopencl Array's)."""
    key = (backend.kind, backend.address(storage))
    with _BY_BUFFER_LOCK:
        pending = _BY_BUFFER.get(key)
        if pending is None:
            return _BY_BUFFER.setdefault(key, Pending(events, backend))
    for event in events:
        pending.writes.add(event)
    return pending


def host_pending_of(array) -> Pending:
    """The Pending of a NumPy array's storage (made on first use): the device
    commands of cross-engine reorders that write it (downloads) or read it
    (uploads). Their entries carry their engine's event operations."""
    key = array.__array_interface__["data"][0]
    with _BY_BUFFER_LOCK:
        pending = _BY_HOST_BUFFER.get(key)
        if pending is None:
            pending = _BY_HOST_BUFFER[key] = Pending()
        return pending
