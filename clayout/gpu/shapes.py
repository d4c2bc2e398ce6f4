"""The kernel shapes, one object each, in the order the planner tries them.

``plan_kernel`` (gpu/plan.py) works out the destination's loops once, as
``Loops``; then each shape of the strategy's list either makes its plan
from them or says it does not serve the problem (None), and the first plan
made is the kernel's. A new shape is a new module with its planning
function and one entry here; the last shape of each list serves every
problem. The plan keeps the name of the shape that made it
(``KernelPlan.shape``); the access report (``python -m clayout explain``)
starts with it.

- CPU strategy (a part of the destination per work-item):
  ``nibble_tile`` (gpu/plan_nibble_tile.py: 4-bit types moved bit for bit,
  a tile of up to 512 rows of 128 nibbles a work-item, whole cache lines
  on both sides),
  ``nibble_transpose`` (gpu/plan_cpu.py: 4-bit types moved bit for bit or
  converted, BxB nibbles a work-item), ``register_transpose`` (gpu/plan_cpu.py),
  ``run_transpose`` (gpu/plan_run_transpose.py: BxB tiles over runs
  gathered from several loops, weights formats), ``unrolled``
  (gpu/plan_unrolled.py), ``runs`` (gpu/plan_cpu.py);
- GPU strategy (neighbouring work-items on neighbouring addresses):
  ``tiled`` (gpu/plan_gpu.py, gpu/tile.py), ``nibble_transpose`` (as the
  CPU strategy's, its grid shaped for a warp), ``striped`` (gpu/plan_gpu.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from .plan_cpu import plan_nibble_transpose, plan_register_transpose, plan_runs
from .plan_gpu import plan_striped, plan_tiled
from .plan_nibble_tile import plan_nibble_tile
from .plan_run_transpose import plan_run_transpose
from .plan_types import KernelPlan, Level
from .plan_unrolled import plan_unrolled


@dataclass(frozen=True)
class Loops:
    """What every shape plans from: the problem and the device's profile,
    the destination's loops (outermost first, loops of one step left out,
    linear dims' source steps filled in), the dims whose index the kernel
    needs (``special``) and those the destination pads, and the fields
    every plan shares (``common``: KernelPlan's keyword arguments)."""

    problem: object
    profile: object
    levels: tuple[Level, ...]
    special: frozenset
    padded: frozenset
    common: dict = field(hash=False, compare=False)


@dataclass(frozen=True)
class Shape:
    """A kernel shape: its name and its planning function (Loops -> a
    KernelPlan, or None where the shape does not serve the problem)."""

    name: str
    plan: Callable[[Loops], KernelPlan | None]


#: The shapes of each strategy, best first (measured: plan_cpu.py,
#: plan_unrolled.py and plan_gpu.py say where).
SHAPES = {
    "cpu": (Shape("nibble_tile", plan_nibble_tile),
            Shape("nibble_transpose", plan_nibble_transpose),
            Shape("register_transpose", plan_register_transpose),
            Shape("run_transpose", plan_run_transpose), Shape("unrolled", plan_unrolled),
            Shape("runs", plan_runs)),
    "gpu": (Shape("tiled", plan_tiled), Shape("nibble_transpose", plan_nibble_transpose),
            Shape("striped", plan_striped)),
}


def shape_names(strategy: str) -> frozenset:
    """The names of ``strategy``'s shapes (what its ``Tuning.skip_shapes`` may
    name: another strategy's shape would skip nothing)."""
    return frozenset(shape.name for shape in SHAPES[strategy])


def first_plan(loops: Loops) -> KernelPlan:
    """The plan of the first shape of the strategy's list that serves, past
    those the profile's Tuning skips (``skip_shapes``; never the last)."""
    shapes = SHAPES[loops.profile.strategy]
    skipped = loops.profile.tuning.skip_shapes
    for shape in shapes:
        if shape.name in skipped and shape is not shapes[-1]:
            continue
        plan = shape.plan(loops)
        if plan is not None:
            return replace(plan, shape=shape.name)
    raise AssertionError(f"no {loops.profile.strategy} shape served {loops.problem!r}")
