"""The kernel cache: built kernels per pyopencl Context, held weakly."""
from __future__ import annotations

import threading
import weakref


class _Slot:
    """One kernel, built once by whichever thread asks first."""

    def __init__(self):
        self.lock = threading.Lock()
        self.kernel = None


class KernelCache:
    """Kernels by (context, key), as pyopencl memoizes per context.

    A context is held weakly: once its last user drops it, its kernels go
    too. Two threads asking for the same kernel build it once; other kernels
    are served meanwhile. ``builds`` counts the programs built so far.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._by_context = weakref.WeakKeyDictionary()
        self.builds = 0

    def get(self, context, key, build):
        """The kernel for ``key`` on ``context``; ``build()`` makes it on first use."""
        kernels = self._by_context.get(context)  # a built kernel is found without a lock
        slot = kernels.get(key) if kernels is not None else None
        if slot is not None and slot.kernel is not None:
            return slot.kernel
        with self._lock:
            slot = self._by_context.setdefault(context, {}).setdefault(key, _Slot())
        with slot.lock:
            if slot.kernel is None:
                slot.kernel = build()
                with self._lock:
                    self.builds += 1
            return slot.kernel

    def peek(self, context, key):
        """The kernel for ``key`` on ``context`` if built already, else None (never builds)."""
        kernels = self._by_context.get(context)
        slot = kernels.get(key) if kernels is not None else None
        return slot.kernel if slot is not None else None

    def clear(self):
        """Forget every kernel (they are rebuilt on next use)."""
        with self._lock:
            self._by_context = weakref.WeakKeyDictionary()

    def __len__(self):
        with self._lock:
            return sum(len(kernels) for kernels in self._by_context.values())

    def __repr__(self):
        return f"<KernelCache: {len(self)} kernels, {self.builds} built>"


#: The process's kernel cache (``clayout.kernel_cache``).
kernel_cache = KernelCache()
