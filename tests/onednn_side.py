"""oneDNN's side of the differential suite (tests/test_onednn.py): a
problem (tests/sweep_cases.py's Case) run by oneDNN's CPU engine through
tests/dnnl.py, in a process of its own (`OneDNNWorker`).

A process of its own, because some oneDNN defects do not stay inside one
problem: a failed jit kernel (an f8 destination whose primitive creation
returns dnnl_runtime_error) leaves every later primitive creation of the
process failing the same way, and a few problems corrupt its heap. The
worker is started again after either, and the problem counts as not run,
with the reason. Nothing here imports clayout.
"""
import multiprocessing
import os
import sys

import numpy as np

import dnnl
from sweep_cases import NIBBLES


class OneDNNRefuses(Exception):
    """oneDNN's CPU engine does not run this problem: ``reason`` says why
    (no implementation, a layout its C API cannot describe, ...)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def onednn_desc(lib, case, layout, dt):
    try:
        return lib.memory_desc(case.dims, dt, tag=layout.tag, strides=layout.strides,
                               parent=layout.parent, offsets=layout.offsets)
    except dnnl.Undescribable as e:
        raise OneDNNRefuses(f"undescribable: {e}") from None
    except dnnl.DnnlError as e:
        raise OneDNNRefuses(f"descriptor: {e.status}") from None


def _attr_entries(case):
    """(scales, zero points, execute values) for tests/dnnl.py: each as
    (argument, mask, groups, stored type) and (argument, kind, values, type)."""
    scales, zero_points, values = [], [], []
    for name in ("src_scales", "dst_scales", "src_zero_points", "dst_zero_points"):
        v = getattr(case, name)
        if v is None:
            continue
        arg = name.split("_")[0]
        if "scales" in name:
            dt = v.data_type or "f32"
            scales.append((arg, v.mask, v.groups, dt))
            values.append((arg, "scales", v.values, dt))
        else:
            zero_points.append((arg, v.mask, v.groups, "s32"))
            values.append((arg, "zero_points", v.values, "s32"))
    return scales, zero_points, values


#: Bytes after the destination buffer (the parent's, for a window), and
#: their value: oneDNN must leave them as they are.
GUARD, GUARD_BYTE = 64, 0xA5


def run_onednn(lib, case, src_raw, dst_raw):
    """(oneDNN's destination buffer (uint8), its implementation's name, how
    many of the GUARD bytes after the buffer it changed), from the source
    bytes ``src_raw`` and the prefilled destination bytes ``dst_raw``.
    Raises OneDNNRefuses."""
    if case.kind == "shuffle" and case.sdt in NIBBLES:
        raise OneDNNRefuses("crashes: oneDNN's CPU shuffle of a 4-bit type corrupts the heap "
                            "(test_onednn.py: test_onednn_shuffle_of_4_bit_types_crashes)")
    dst_layout = case.dst_layout
    src = onednn_desc(lib, case, case.src, case.sdt)
    dst = onednn_desc(lib, case, dst_layout, case.ddt)
    for what, desc, raw in (("src", src, src_raw), ("dst", dst, dst_raw)):
        if desc.size != raw.size and desc.size != 0:
            raise AssertionError(f"{what}: oneDNN's size is {desc.size} bytes, clayout's "
                                 f"{raw.size}")
    bound_values = []
    try:
        if case.kind == "shuffle":
            axis, group, backward = case.shuffle
            prim = lib.shuffle(src, dst, axis, group, backward)
        else:
            scales, zero_points, values = _attr_entries(case)
            attr = lib.attr(scales, zero_points, case.sum_beta) \
                if (scales or zero_points or case.sum_beta is not None) else None
            prim = lib.reorder(src, dst, attr)
            bound_values = [(arg, kind, lib.values_memory(v, dt)) for arg, kind, v, dt in values]
    except dnnl.DnnlError as e:
        raise OneDNNRefuses(f"{e.status.replace('dnnl_', '')}: {e.call}") from None
    src_mem = _memory(lib, src, src_raw)
    guarded = lib.memory(lib.memory_desc((dst_raw.size + GUARD,), "u8", "a"),
                         np.concatenate([dst_raw, np.full(GUARD, GUARD_BYTE, np.uint8)]))
    dst_mem = lib.memory(dst, like=guarded)
    prim.execute(prim.bind(src_mem, dst_mem, bound_values))
    whole = guarded.read()
    past = int(np.count_nonzero(whole[dst_raw.size:] != GUARD_BYTE))
    return whole[:dst_raw.size].copy(), prim.impl, past


def _memory(lib, desc, raw):
    """A memory of ``desc`` holding ``raw`` (a window's: in its parent's buffer)."""
    if desc.parent is None:
        return lib.memory(desc, raw if raw.size else None)
    parent = lib.memory(desc.parent, raw)
    return lib.memory(desc, like=parent)



# -- the worker process ------------------------------------------------------------

def _serve(conn, tests):
    """The worker's loop: (case, src_raw, dst_raw) in; ("ran", bytes, impl),
    ("refused", reason) or ("error", text) out."""
    sys.path.insert(0, tests)
    try:
        lib = dnnl.onednn()
    except dnnl.Unavailable as e:
        conn.send(("unavailable", str(e)))
        return
    conn.send(("ready", lib.version))
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        try:
            conn.send(("ran", *run_onednn(lib, *request)))
        except OneDNNRefuses as e:
            conn.send(("refused", e.reason))
        except Exception as e:  # noqa: BLE001 - a bug of the binding: the test shows it
            conn.send(("error", f"{type(e).__name__}: {e}"))


#: How long a worker may take to load oneDNN and make its engine.
START_SECONDS = 120


class OneDNNWorker:
    """oneDNN in a child process: `run` a problem there; started again after
    a problem that crashes it, hangs past ``timeout`` seconds or leaves its
    primitive creation failing. Raises dnnl.Unavailable when oneDNN does not
    load."""

    def __init__(self, timeout=120.0):
        self.restarts, self.timeout = 0, timeout  # seconds one problem may take
        self._start()

    def _start(self):
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        tests = os.path.dirname(os.path.abspath(__file__))
        self.process = context.Process(target=_serve, args=(child, tests), daemon=True)
        self.process.start()
        child.close()
        if not self.conn.poll(START_SECONDS):
            raise dnnl.Unavailable(f"oneDNN's worker did not start in {START_SECONDS} s")
        kind, text = self.conn.recv()
        if kind != "ready":
            raise dnnl.Unavailable(text)
        self.version = text

    def restart(self):
        self.close()
        self.restarts += 1
        self._start()

    def close(self):
        self.conn.close()
        self.process.kill()
        self.process.join()

    def run(self, case, src_raw, dst_raw):
        """oneDNN's destination bytes, implementation and bytes written past
        the buffer (run_onednn) for ``case``. Raises OneDNNRefuses,
        AssertionError for a binding error."""
        try:
            self.conn.send((case, src_raw, dst_raw))
            if not self.conn.poll(self.timeout):
                self.restart()
                raise OneDNNRefuses(f"hangs: oneDNN gave no answer in {self.timeout} s")
            answer = self.conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self.restart()
            raise OneDNNRefuses("crashes: oneDNN's process died on this problem") from None
        if answer[0] == "ran":
            return answer[1:]
        if answer[0] == "refused":
            if answer[1].startswith("runtime_error"):
                self.restart()  # the process creates no primitive after this one
            raise OneDNNRefuses(answer[1])
        raise AssertionError(f"the oneDNN binding failed: {answer[1]}")
