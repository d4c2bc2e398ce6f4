"""Kernel families: the groups of problems that share tuned parameters.

``python -m clayout tune`` measures one representative problem per family
on the user's device and keeps the fastest parameters per family; the
planner then plans every problem of that family with them. A family is
decided by the two layouts alone (and whether it is a shuffle), so a plan
and its family can be worked out without a device.
"""
from __future__ import annotations

#: The families, in the order the tuner visits them.
FAMILIES = ("convert", "transpose", "blocked", "weights", "shuffle")


def family_of(problem) -> str:
    """The family of ``problem``: ``shuffle``; ``convert`` (both sides in one
    layout: a type change or a copy); ``weights`` (a side blocked along two
    dims or more, OIhw16i16o); ``blocked`` (a side blocked along one dim,
    nChw16c); else ``transpose`` (plain layouts in different orders)."""
    src, dst = problem.src_md, problem.dst_md
    if problem.kind == "shuffle":
        return "shuffle"
    blocked = max(sum(b > 1 for b in md.blocks) for md in (src, dst))
    if blocked >= 2:
        return "weights"
    if src.strides == dst.strides and src.inner_blks == dst.inner_blks \
            and src.inner_idxs == dst.inner_idxs:
        return "convert"
    return "blocked" if blocked else "transpose"
