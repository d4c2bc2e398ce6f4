"""Kernels created inside batch_builds() share one OpenCL program."""
import numpy as np

import clayout as cly
from clayout.gpu import build


def _count_builds(monkeypatch):
    """(programs built, programs that failed), each a list of kernel names,
    filled as the kernel cache (emptied now) builds from here on."""
    programs, failed = [], []
    real = build._build

    def counting(engine, source, names, key=None, options=()):
        programs.append(list(names))
        try:
            return real(engine, source, names, key, options)
        except Exception:
            failed.append(list(names))
            raise

    monkeypatch.setattr(build, "_build", counting)
    cly.kernel_cache.clear()
    return programs, failed


def test_kernels_of_one_block_are_built_as_one_program(cl_engine, monkeypatch):
    programs = []
    real = build._build

    def counting(engine, source, names, key=None, options=()):
        programs.append(list(names))
        return real(engine, source, names, key, options)

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


def test_kernels_sharing_helpers_build_as_one_program(cl_engine, monkeypatch):
    """Kernels whose sources define helper functions (f8/f4 codecs, nibble
    access, compensation sums) still build as one program: no name clashes."""
    programs, failed = _count_builds(monkeypatch)
    weights = [cly.Extra(compensation_mask=1), cly.Extra(compensation_mask=1,
                                                           asymm_compensation_mask=1)]
    with build.batch_builds():
        for dims in ((20, 8, 3, 3), (32, 16, 1, 1)):
            for extra in weights:
                cly.Reorder(cly.MemoryDesc(dims, "f32", tag="oihw"),
                            cly.MemoryDesc(dims, "s8", tag="OIhw4i16o4i", extra=extra),
                            engine=cl_engine)
            for sdt, ddt in (("f32", "f8_e4m3"), ("f8_e5m2", "f4_e2m1"), ("u4", "s4")):
                cly.Reorder(cly.MemoryDesc(dims, sdt, tag="abcd"),
                            cly.MemoryDesc(dims, ddt, tag="acdb"), engine=cl_engine)
    # Per shape: one data kernel (both extras share it), two compensation
    # kernels, three conversions.
    assert failed == [] and len(programs) == 1 and len(programs[0]) == 6 * 2


def test_tiled_kernels_build_as_one_program(gpu_engine, monkeypatch):
    """The GPU strategy's tiled transposes each define their local-memory
    index function under the kernel's own name, so several build together
    (a shared name made the batch fail and every kernel build alone)."""
    programs, failed = _count_builds(monkeypatch)
    shapes = [(2, 19, 5, n) for n in (7, 9)]
    with build.batch_builds():
        prims = [cly.Reorder(cly.MemoryDesc(s, "f32", tag="nchw"),
                             cly.MemoryDesc(s, "f32", tag="nhwc"), engine=gpu_engine)
                 for s in shapes]
    assert all("tiled" in p.explain() for p in prims), prims[0].explain()
    assert failed == [] and len(programs) == 1 and len(programs[0]) == 2
    for shape, prim in zip(shapes, prims):
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        src = cly.Memory.from_numpy(prim.src_md, gpu_engine, x)
        dst = cly.Memory(prim.dst_md, gpu_engine)
        prim.execute(cly.Stream(gpu_engine), src, dst)
        assert np.array_equal(dst.to_numpy(), x)
