"""Run under Oclgrind with the CPU strategy forced:

    CLAYOUT_STRATEGY=cpu oclgrind --data-races python quantize_cpu_cases.py

Quantize's CPU-strategy kernels (templates/quantize.cl.mako): the vector
kernel (several groups a work-item, statistics as vectors, the source of a
later work-item fetched ahead) and the loop kernel. Each output lies in a
guarded buffer; the script checks the values, scales and zero points
against the tests' own reference (tests/quantize_reference.py) and that no
byte past them changed. Oclgrind reports any out-of-bounds access or data
race on stderr (the test fails on any). Prints 'ok N' after N cases."""
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import clayout as cly  # noqa: E402
from quantize_reference import reference  # noqa: E402

GUARD = 0x5A

#: (dims, dst, scheme, groups, scale type, zero-point type, kernel): "vector"
#: cases take 2 or 16 groups a work-item (the last work-items fetch no
#: further than the source's end), "loop" the loop kernel. (A group split
#: in chunks, two launches, stops Oclgrind 21.10 on an assertion as the
#: second launch begins: not run here.)
CASES = [
    ((32, 512), "u4", "asymmetric", (1, 128), "f32", "u4", "vector"),
    ((32, 512), "s4", "symmetric", (1, 32), "f16", None, "vector"),
    ((32, 512), "f4_e2m1", "mx", (1, 32), "e8m0", None, "vector"),
    ((32, 512), "s8", "mx", (1, 32), "e8m0", None, "vector"),
    ((64, 4096), "f4_e2m1", "mx", (1, 32), "e8m0", None, "vector"),
    ((16, 4096), "u8", "asymmetric", (1, 256), "bf16", "s32", "vector"),
    ((6, 40), "s8", "symmetric", (1, 8), "f32", None, "loop"),
]


def kernel_of(plan) -> str:
    return "split" if plan.parts > 1 else "vector" if plan.batch else "loop"


def run(engine, rng, case):
    dims, dt, scheme, groups, scale_dt, zp_dt, kernel = case
    x = (rng.standard_normal(dims) * 4).astype(np.float32)
    q = cly.Quantize(cly.MemoryDesc(dims, "f32"), dt, scheme=scheme, mask=3, groups=groups,
                     scale_data_type=scale_dt, zero_point_data_type=zp_dt, engine=engine)
    assert q.plan is not None and kernel_of(q.plan) == kernel, (case, q.impl)
    mds = [q.dst_md, q.scales_md] + ([q.zero_points_md] if q.zero_points_md else [])
    wholes = [cly.Memory(cly.MemoryDesc((md.size + 64,), "u8"), engine,
                         raw=np.full(md.size + 64, GUARD, np.uint8)) for md in mds]
    outs = [cly.Memory(md, engine, buffer=w) for md, w in zip(mds, wholes)]
    q.execute(cly.Stream(engine), cly.Memory.from_numpy(q.src_md, engine, x), *outs).wait()
    values, scales, zps = reference(x, dt, scheme, 3, groups, scale_dt, zp_dt)
    assert np.array_equal(outs[0].to_numpy().astype(np.float32), values), case
    if scheme == "mx":
        assert np.array_equal(outs[1].raw()[:scales.size], scales), case
    else:
        assert np.array_equal(outs[1].to_numpy().astype(np.float32).ravel(), scales), case
    if zps is not None:
        assert np.array_equal(outs[2].to_numpy().astype(np.int64).ravel(), zps), case
    for md, whole in zip(mds, wholes):
        assert (whole.raw()[md.size:] == GUARD).all(), (case, "wrote past the end")


def main():
    assert os.environ.get("CLAYOUT_STRATEGY") == "cpu", "run with CLAYOUT_STRATEGY=cpu"
    engine = cly.Engine("opencl")
    rng = np.random.default_rng(0)
    for case in CASES:
        run(engine, rng, case)
    print("ok", len(CASES), "on", engine.profile.name)


if __name__ == "__main__":
    main()
