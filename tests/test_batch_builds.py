"""Kernels created inside batch_builds() share one OpenCL program."""
import numpy as np

import clayout as cly
from clayout.gpu import build


def test_kernels_of_one_block_are_built_as_one_program(cl_engine, monkeypatch):
    programs = []
    real = build._build

    def counting(engine, source, names):
        programs.append(list(names))
        return real(engine, source, names)

    monkeypatch.setattr(build, "_build", counting)
    cly.kernel_cache.clear()
    shapes = [(2, 16, 3, n) for n in (5, 6, 7)]
    with build.batch_builds():
        prims = [cly.Reorder(cly.MemoryDesc(s, "f32", tag="abcd"),
                             cly.MemoryDesc(s, "bf16", tag="acdb"), engine=cl_engine)
                 for s in shapes]
        assert programs == []  # nothing is built inside the block
    assert len(programs) == 1 and len(programs[0]) == 3
    stream = cly.Stream(cl_engine)
    for shape, prim in zip(shapes, prims):
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 7
        src = cly.Memory.from_numpy(prim.src_md, cl_engine, x)
        dst = cly.Memory(prim.dst_md, cl_engine)
        prim.execute(stream, src, dst)
        got = dst.to_numpy().astype(np.float32)
        assert np.array_equal(got, x.astype(dst.md.dtype.numpy).astype(np.float32))
    assert len(programs) == 1
