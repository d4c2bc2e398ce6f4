"""The replay of the blocks each work-item moves whole at constant
offsets (gpu/access_replay.py's part for templates/unrolled.cl.mako): an
unrolled block's lines, runs and elements, a run transpose's tiles."""
from __future__ import annotations

import itertools

from .plan_types import KernelPlan, item_loops
from .plan_run_transpose import run_tables
from .render_unrolled import (block_elements, block_lines, consecutive, data_runs,
                              row_pieces)


def item_indices(loops, count: int, item: int) -> list:
    """The loop indices of work-item ``item`` (``loops``: item_loops, fastest first)."""
    a = [0] * count
    for j, steps in loops:
        a[j], item = (item, 0) if steps is None else (item % steps, item // steps)
    return a


def _work_items(plan: KernelPlan, k, local: int, groups):
    """The loop indices of each item the work-items of ``groups`` run, in
    order (work-item t: items t, t + launch, ...), with ``k``'s group and
    lane set to the one running it."""
    loops = item_loops(plan)
    for g in groups:
        k.group = g
        for lane in range(local):
            k.lane = lane
            if g * local + lane >= plan.launch_items:
                continue  # (past the launch: the work-item returns)
            for chunk in range(plan.chunks):
                item = g * local + lane + chunk * plan.launch_items
                if item >= plan.items:
                    break
                yield item_indices(loops, len(plan.levels), item)


def replay_unrolled(plan: KernelPlan, k, local: int, groups) -> None:
    """Work-item t moves block t (and t + launch, ...): the source lines it
    reads whole, then the block's elements in order, one load each (none
    in those lines; one a run consecutive in the source); runs of ``vec``
    all data (or padding) one store, else one each; into 4-bit elements a
    pair's loads and values, then a byte. Offsets as for striped plans.
    A run transpose's work-items move tiles (``_replay_tiles``)."""
    if plan.block:
        _replay_tiles(plan, k, local, groups)
        return
    levels = plan.levels
    inside = [list(range(levels[j].extent)) for j in plan.unrolled]
    width, lanes = block_lines(plan)  # (offsets from the block's base)
    starts, runs = sorted({o - j for o, (_, j) in lanes.items()}), set(data_runs(plan))
    first = next(block_elements(plan))[1]  # (the first element's offset from it)
    k.invariant = set()
    for a in _work_items(plan, k, local, groups):
        elements = []
        for local_a in itertools.product(*inside):
            b = list(a)
            for j, x in zip(plan.unrolled, local_a):
                b[j] = x
            i = k.logical(b)
            elements.append((i, k.src_offset(b, i, shuffled=True), k.dst_offset(b)))
        base = elements[0][1] - first
        for line in starts:
            k.load_src(base + line, width, "line")
        for start in range(0, len(elements), plan.vec):
            run = elements[start:start + plan.vec]
            pads = {k.padding(i) for i, _, _ in run}
            if plan.dst_md.dtype.packed and plan.vec == 2:  # pair(): one byte
                for i, s_off, d_off in run:
                    if not k.padding(i):
                        k.load_src(s_off, 1)
                        if not k.bit_copy:
                            k.attributes(i, 1, d_off)
                k.store_dst(run[0][2], 2)
            elif plan.vec > 1 and pads == {True}:
                k.store_dst(run[0][2], plan.vec, zeros=True)
            elif plan.vec > 1 and pads == {False}:
                offsets = [s_off - base for _, s_off, _ in run]
                whole = start in runs and consecutive(offsets)
                for offset in offsets[:1] if whole else offsets:
                    if whole or start not in runs or offset not in lanes:
                        k.load_src(base + offset, plan.vec if whole else 1)
                k.store_dst(run[0][2], plan.vec)
            else:
                for i, s_off, d_off in run:
                    if k.padding(i):
                        k.store_dst(d_off, 1, zeros=True)
                    else:
                        k.convert(i, s_off, d_off, 1)


def _replay_tiles(plan: KernelPlan, k, local: int, groups) -> None:
    """A run transpose's work-item (templates/unrolled.cl.mako, tile()):
    tile by tile (the source's run outer), B rows of B elements loaded,
    converted, then B columns stored, at the offsets of ``run_tables``
    from the item's bases (those of its block's first element)."""
    rows, columns = run_tables(plan)
    b = plan.block
    _, s_first, d_first = next(block_elements(plan))
    span, kept = len(rows) * len(columns), min(b, len(columns))
    tiles = [(c, r) for c in range(0, len(columns), b) for r in range(0, len(rows), b)]
    k.invariant = set()
    for a in _work_items(plan, k, local, groups):
        i = k.logical(a)
        s_base = k.src_offset(a, i, shuffled=True) - s_first
        d_base = k.dst_offset(a) - d_first
        for n, (c, r) in enumerate(tiles):
            for row in range(b):
                start = rows[r + row] + c
                for at, size in row_pieces(b, len(columns), start, span):
                    k.load_src(s_base + start + at, size, (n, row, at))
                if not (k.bit_copy or k.saturate_only):
                    k.attributes(i, b, None, (n, row))
            for column in range(kept):
                k.store_dst(d_base + columns[c + column] + r, b, (n, column))
