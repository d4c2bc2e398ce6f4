"""Launches that fit every vendor's grid (issue 22, part 2).

NVIDIA's OpenCL maps NDRange dimensions 1 and 2 onto CUDA grid dimensions
of at most 65,535 blocks each: a tiled plan with more boxes lays them in
rows over both dimensions. The big shapes are checked through
``python -m clayout.explain`` (a plan, no allocation); the kernels that read
their box from two dimensions run exactly on PoCL and, under Oclgrind,
without out-of-bounds accesses or races, with the limit lowered so that
small tensors take that path (tests/oclgrind/grid_cases.py).
"""
import pathlib
import re
import subprocess
import sys

import pytest

from clayout import explain
from clayout.gpu.plan import plan_kernel
from clayout.gpu.profile import CPU_PROFILE, GPU_PROFILE
from clayout.memory_desc import MemoryDesc
from clayout.problem import Problem

sys.path.insert(0, str(pathlib.Path(__file__).parent / "oclgrind"))
import grid_cases  # noqa: E402

LIMIT = 65535
BIG = [  # src, dst, dims: the launches
    ("f32:nchw", "f32:nhwc", "128x256x56x56"),
    ("f32:nchw", "f32:nChw16c", "64x512x256x256"),
    ("f32:oihw", "f32:OIhw4i16o4i", "2048x2048x3x3"),
]


def _ndrange(text):
    """(global, local) from explain's 'NDRange (...), local (...)' line."""
    found = re.search(r"NDRange \(([\d, ]+)\), local \(([\d, ]+)\)", text)
    assert found, text
    return tuple(tuple(int(n) for n in group.split(",") if n.strip())
                 for group in found.groups())


@pytest.mark.parametrize("src, dst, dims", BIG)
@pytest.mark.parametrize("strategy", ["gpu", "cpu"])
def test_big_launches_fit_every_grid(capsys, src, dst, dims, strategy):
    assert explain.main(["--src", src, "--dst", dst, "--dims", dims,
                         "--strategy", strategy]) == 0
    global_size, local = _ndrange(capsys.readouterr().out)
    assert all(n <= LIMIT * l for n, l in zip(global_size[1:], local[1:])), global_size
    assert 1 <= local[0] <= 256 and all(n == 1 for n in local[1:]), local
    assert all(n % l == 0 for n, l in zip(global_size, local)), (global_size, local)
    # Every box (or work-item) has its work-group, and at most a row's worth spare.
    shape = tuple(int(n) for n in dims.split("x"))
    s_dt, _, s_tag = src.partition(":")
    d_dt, _, d_tag = dst.partition(":")
    plan = plan_kernel(Problem("reorder", MemoryDesc(shape, s_dt, tag=s_tag),
                               MemoryDesc(shape, d_dt, tag=d_tag)),
                       GPU_PROFILE if strategy == "gpu" else CPU_PROFILE)
    if plan.tile is not None:
        groups = global_size[1] * (global_size[2] if len(global_size) > 2 else 1)
        layers = global_size[2] if len(global_size) > 2 else 1
        assert plan.tile.boxes <= groups < plan.tile.boxes + layers, (groups, plan.tile.boxes)
    else:
        assert len(global_size) == 1 and global_size[0] >= plan.launch_items


def test_the_first_big_launch_needs_two_dimensions():
    """The issue's example: 100,352 boxes, which one dimension cannot hold."""
    plan = plan_kernel(Problem("reorder", MemoryDesc((128, 256, 56, 56), "f32", tag="nchw"),
                               MemoryDesc((128, 256, 56, 56), "f32", tag="nhwc")), GPU_PROFILE)
    assert plan.tile.boxes == 100352
    assert plan.ndrange(256) == ((256, 50176, 2), (256, 1, 1))


def test_boxes_over_two_dimensions_are_exact(cl_engine):
    assert grid_cases.run(grid_cases.grid_engine(cl_engine.device)) == len(grid_cases.CASES)


def test_boxes_over_two_dimensions_under_oclgrind(oclgrind):
    done = subprocess.run([oclgrind, "--data-races", sys.executable, grid_cases.__file__],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Oclgrind" in done.stderr and done.stdout.split() == ["ok", str(len(grid_cases.CASES))]
    for report in ("Invalid read", "Invalid write", "data race", "Uninitialized", "barrier"):
        assert report not in done.stderr, done.stderr[-3000:]
