"""One problem (tests/sweep_cases.py's Case) run by clayout and by oneDNN
on the same bytes, for the differential suite (tests/test_onednn.py).

Both start from the bytes tests/sweep_check.py's Expectation makes: the
source buffer (the parent's, for a window) and a destination buffer
prefilled with random non-zero bytes (old values at its elements for a
sum). clayout runs on the pass's device engine; oneDNN on its CPU engine
in a worker process (tests/onednn_side.py), with the same scales and zero
points given at execute. Each returns the destination buffer's bytes, whole.
"""
import dataclasses

import numpy as np

import clayout as cly
from sweep_check import geometry, zero_elements
from sweep_run import Prepared, create


@dataclasses.dataclass
class Run:
    """A problem's two destination buffers and what made them."""
    problem: Prepared
    clayout: np.ndarray
    onednn: np.ndarray
    clayout_impl: str
    onednn_impl: str
    onednn_past: int = 0  # bytes oneDNN wrote past the destination buffer


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


def zero_padding(problem):
    """Zero both buffers' own padding: oneDNN keeps a memory's padding zero
    and its reorders may copy the source's along (clayout never reads it);
    tests/test_sweep.py checks clayout with random bytes there."""
    case, expect = problem.case, problem.expect
    _, src_pad = geometry(case.dims, case.src)
    zero_elements(expect.src_raw, src_pad, case.sdt)
    zero_elements(expect.dst_raw, expect.dst_pad, case.ddt)


def run_both(case, engine, worker):
    """A Run of ``case``. Raises OneDNNRefuses first where oneDNN does not
    run it (clayout is not run then), clayout's errors as they come."""
    problem = Prepared(case)
    zero_padding(problem)
    onednn, onednn_impl, past = worker.run(case, problem.expect.src_raw, problem.expect.dst_raw)
    clayout, clayout_impl = run_clayout(problem, engine)
    return Run(problem, clayout, onednn, clayout_impl, onednn_impl, past)
