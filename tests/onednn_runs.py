"""One problem (tests/sweep_cases.py's Case) run by clayout and by oneDNN
on the same bytes, for the differential suite (tests/test_onednn.py).

Both start from the bytes tests/sweep_check.py's Expectation makes: the
source buffer (the parent's, for a window) and a destination buffer
prefilled with random non-zero bytes (old values at its elements for a
sum). clayout runs on the pass's device engine; oneDNN on its CPU engine
through tests/dnnl.py, with the same scales and zero points given at
execute. Each returns the destination buffer's bytes, whole.
"""
import dataclasses

import numpy as np

import clayout as cly
import dnnl
from sweep_cases import NIBBLES
from sweep_check import geometry, zero_elements
from sweep_run import Prepared, create


class OneDNNRefuses(Exception):
    """oneDNN's CPU engine does not run this problem: ``reason`` says why
    (no implementation, a layout its C API cannot describe, ...)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


@dataclasses.dataclass
class Run:
    """A problem's two destination buffers and what made them."""
    problem: Prepared
    clayout: np.ndarray
    onednn: np.ndarray
    clayout_impl: str
    onednn_impl: str


def run_clayout(problem, engine):
    """clayout's destination buffer (uint8) and its implementation's name."""
    case, expect = problem.case, problem.expect
    _, src_parent, _, dst_parent, _ = problem.mds
    prim = create(case, engine, problem.mds)
    src_buf = cly.Memory(src_parent or prim.src_md, engine, raw=expect.src_raw)
    dst_buf = cly.Memory(dst_parent or prim.dst_md, engine, raw=expect.dst_raw)
    src = src_buf if src_parent is None else cly.Memory(prim.src_md, engine, buffer=src_buf)
    dst = dst_buf if dst_parent is None else cly.Memory(prim.dst_md, engine, buffer=dst_buf)
    stream = cly.Stream(engine)
    prim.execute(stream, src, dst, **case.execute_values())
    stream.wait()
    return np.ascontiguousarray(dst_buf.raw()).view(np.uint8).reshape(-1), prim.impl


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
    for name in ("src_scales", "dst_scales", "src_zero_point", "dst_zero_point"):
        v = getattr(case, name)
        if v is None:
            continue
        arg = name.split("_")[0]
        if "scales" in name:
            dt = v.data_type or "f32"
            scales.append((arg, v.mask, None, dt))
            values.append((arg, "scales", v.values, dt))
        else:
            zero_points.append((arg, v.mask, None, "s32"))
            values.append((arg, "zero_points", v.values, "s32"))
    return scales, zero_points, values


def run_onednn(problem, lib):
    """oneDNN's destination buffer (uint8) and its implementation's name.
    Raises OneDNNRefuses."""
    case, expect = problem.case, problem.expect
    if case.kind == "shuffle" and case.sdt in NIBBLES:
        raise OneDNNRefuses("crashes: oneDNN's CPU shuffle of a 4-bit type corrupts the heap "
                            "(test_onednn.py: test_onednn_shuffle_of_4_bit_types_crashes)")
    dst_layout = case.dst_layout
    src = onednn_desc(lib, case, case.src, case.sdt)
    dst = onednn_desc(lib, case, dst_layout, case.ddt)
    for what, desc, raw in (("src", src, expect.src_raw), ("dst", dst, expect.dst_raw)):
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
        raise OneDNNRefuses(f"{e.status.replace('dnnl_', '')}") from None
    src_mem = _memory(lib, src, expect.src_raw)
    dst_mem = _memory(lib, dst, expect.dst_raw)
    prim.execute(prim.bind(src_mem, dst_mem, bound_values))
    whole = dst_mem.owner or dst_mem
    return whole.read()[:expect.dst_raw.size].copy(), prim.impl


def _memory(lib, desc, raw):
    """A memory of ``desc`` holding ``raw`` (a window's: in its parent's buffer)."""
    if desc.parent is None:
        return lib.memory(desc, raw if raw.size else None)
    parent = lib.memory(desc.parent, raw)
    return lib.memory(desc, like=parent)


def zero_padding(problem):
    """Zero both buffers' own padding: oneDNN keeps a memory's padding zero
    and its reorders may copy the source's along (clayout never reads it);
    tests/test_sweep.py checks clayout with random bytes there."""
    case, expect = problem.case, problem.expect
    _, src_pad = geometry(case.dims, case.src)
    zero_elements(expect.src_raw, src_pad, case.sdt)
    zero_elements(expect.dst_raw, expect.dst_pad, case.ddt)


def run_both(case, engine, lib):
    """A Run of ``case``. Raises OneDNNRefuses first where oneDNN does not
    run it (clayout is not run then), clayout's errors as they come."""
    problem = Prepared(case)
    zero_padding(problem)
    onednn, onednn_impl = run_onednn(problem, lib)
    clayout, clayout_impl = run_clayout(problem, engine)
    return Run(problem, clayout, onednn, clayout_impl, onednn_impl)
