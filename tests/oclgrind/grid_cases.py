"""Tiled kernels whose boxes lie over NDRange dimensions 1 and 2.

NVIDIA's OpenCL holds at most 65,535 work-groups along dimensions 1 and 2;
a tiled plan with more boxes lays them in rows over both. Here the device's
limit is lowered to a few work-groups (``max_groups_per_dim``), so small
tensors take the same path: transposes, blocked layouts, a shuffle, spare
work-groups past the last box, and a launch split in parts along
dimension 2. Each result is compared bit for bit with NumPy, and the bytes
after each destination must keep their guard value. Run directly (the
tests import ``run``) or under Oclgrind:

    oclgrind --data-races python grid_cases.py

Prints 'ok N' after N cases."""
import dataclasses
import sys

import numpy as np

import clayout as cly
from clayout.gpu import build

GUARD = 0x5A
CASES = [  # dims, src tag, dst tag, shuffle group (None: a reorder), lowered launch limit
    ((2, 64, 9, 7), "nchw", "nhwc", None, None),
    ((3, 40, 5, 6), "nchw", "nChw16c", None, None),
    ((4, 48, 8, 10), "nhwc", "nchw", 4, None),
    ((2, 64, 9, 7), "nchw", "nhwc", None, 256 * 4),  # parts along dimension 2
]


def grid_engine(device=None, max_groups=2):
    """An OpenCL engine with the GPU strategy whose NDRange dimensions 1 and
    2 each hold at most ``max_groups`` work-groups."""
    engine = cly.Engine("opencl", device=device)
    engine.profile = dataclasses.replace(engine.profile.with_strategy("gpu"),
                                         max_groups_per_dim=max_groups)
    return engine


def run(engine) -> int:
    """Run every case on ``engine``; returns how many ran. Raises
    AssertionError on a wrong value, a touched guard byte, or a plan that
    does not use dimension 2."""
    rng = np.random.default_rng(5)
    for dims, stag, dtag, group, limit in CASES:
        src_md = cly.MemoryDesc(dims, "f32", tag=stag)
        dst_md = cly.MemoryDesc(dims, "f32", tag=dtag)
        if group is None:
            primitive = cly.Reorder(src_md, dst_md, engine=engine)
        else:
            primitive = cly.Shuffle(src_md, axis=1, group_size=group, engine=engine,
                                    dst_md=dst_md)
        plan = primitive._implementation.plan
        assert plan.tile is not None and plan.tile.grid[1] > 1, (dims, plan.tile)
        values = rng.standard_normal(dims).astype(np.float32)
        src = cly.Memory.from_numpy(src_md, engine, values)
        dst = cly.Memory(dst_md, engine, raw=np.full(dst_md.size + 64, GUARD, np.uint8))
        saved = build.MAX_LAUNCH_ITEMS
        try:
            if limit is not None:
                build.MAX_LAUNCH_ITEMS = limit
            primitive.execute(cly.Stream(engine), src, dst).wait()
        finally:
            build.MAX_LAUNCH_ITEMS = saved
        want = values
        if group is not None:  # dst(u + v*C/G) = src(u*G + v) along the axis
            c = dims[1]
            order = np.arange(c).reshape(c // group, group).T.reshape(-1)
            want = values[:, order]
        got = dst.to_numpy()
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (dims, stag, dtag)
        assert (dst.raw()[dst_md.size:] == GUARD).all(), (dims, dtag, "guard bytes")
    return len(CASES)


if __name__ == "__main__":
    print(grid_engine(), file=sys.stderr)
    print("ok", run(grid_engine()))
