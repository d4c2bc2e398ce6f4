"""Run under Oclgrind with the CPU strategy forced:

    CLAYOUT_STRATEGY=cpu oclgrind --data-races python quantize_cpu_cases.py

Quantize's CPU-strategy kernels (templates/quantize.cl.mako): the vector
kernel (several groups a work-item, statistics as vectors; f32, f16 and
bf16 sources; a NaN in each, so its careful function runs too) and the
loop kernel. Each output lies in a guarded buffer; the script checks the
values, scales and zero points against the tests' own reference
(tests/quantize_reference.py) and that no byte past them changed.
Oclgrind reports any out-of-bounds access or data race on stderr (the
test fails on any). Prints 'ok N' after N cases."""
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # gpu_cases, when imported

import clayout as cly  # noqa: E402
from gpu_cases import quantize_guarded  # noqa: E402 - the same check as the GPU strategy's

#: (dims, dst, scheme, groups, scale type, zero-point type, kernel): "vector"
#: cases take 2 or 16 groups a work-item, "loop" the loop kernel. (Oclgrind's
#: prefetch does nothing, so where the vector kernel fetches ahead is not
#: checked here but in test_quantize.py, from the rendered source. A group
#: split in chunks, two launches, stops Oclgrind 21.10 on an assertion as
#: the second launch begins: not run here.)
CASES = [
    ((32, 512), "u4", "asymmetric", (1, 128), "f32", "u4", "vector"),
    ((32, 512), "s4", "symmetric", (1, 32), "f16", None, "vector"),
    ((32, 512), "f4_e2m1", "mx", (1, 32), "e8m0", None, "vector"),
    ((32, 512), "s8", "mx", (1, 32), "e8m0", None, "vector"),
    ((64, 4096), "f4_e2m1", "mx", (1, 32), "e8m0", None, "vector"),
    ((16, 4096), "u8", "asymmetric", (1, 256), "bf16", "s32", "vector"),
    ((6, 40), "s8", "symmetric", (1, 8), "f32", None, "loop"),
]
#: f16 and bf16 sources the vector kernel reads itself: (source type, case)
HALF_CASES = [
    ("f16", ((32, 512), "u4", "asymmetric", (1, 128), "f32", "u4", "vector")),
    ("bf16", ((64, 4096), "f4_e2m1", "mx", (1, 32), "e8m0", None, "vector")),
]


def kernel_of(plan) -> str:
    return "split" if plan.parts > 1 else "vector" if plan.batch else "loop"


def run(engine, rng, case, src_dt="f32"):
    dims, dt, scheme, groups, scale_dt, zp_dt, kernel = case
    md = cly.MemoryDesc(dims, src_dt)
    x = (rng.standard_normal(dims) * 4).astype(md.dtype.numpy)
    x.flat[x.size // 2 + 5] = np.nan  # the vector kernel's careful function runs
    q = cly.Quantize(md, dt, scheme=scheme, mask=3, groups=groups,
                     scale_data_type=scale_dt, zero_point_data_type=zp_dt, engine=engine)
    assert q.plan is not None and kernel_of(q.plan) == kernel, (case, q.impl)
    assert q.plan.src_dt == src_dt, (case, q.impl)
    quantize_guarded(engine, q, x, dt, scheme, groups, scale_dt, zp_dt, case)


def main():
    assert os.environ.get("CLAYOUT_STRATEGY") == "cpu", "run with CLAYOUT_STRATEGY=cpu"
    engine = cly.Engine("opencl")
    rng = np.random.default_rng(0)
    for case in CASES:
        run(engine, rng, case)
    for src_dt, case in HALF_CASES:
        run(engine, rng, case, src_dt)
    print("ok", len(CASES) + len(HALF_CASES), "on", engine.profile.name)


if __name__ == "__main__":
    main()
