"""One exit guard for all of clayout's host-side work on worker threads."""
from __future__ import annotations

import atexit
import threading


class ExitGuard:
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


EXIT = ExitGuard()
