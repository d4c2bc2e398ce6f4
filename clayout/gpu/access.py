"""The access report: what a kernel's warps ask of a GPU's memory system.

The report takes every global and local memory access the kernel's
template makes for the work-items of some of its work-groups (replayed
from the plan by gpu/access_replay.py, with the functions the renderer
uses to fill the templates in), and groups them as gpusim does (the
Oclgrind plugin in ../shared/gpu-offline, which watches the real kernel
run): a warp is 32 consecutive work-items of a work-group, and one
warp-level access is one memory instruction of the template run by one
warp, the n-th time each of its lanes runs it (a lane that skips an
instruction falls out of step with the others). Per warp-level access it
counts

- global memory: the distinct bytes asked for, and the 32-byte sectors they
  touch against the fewest they fit in (``ceil(bytes / 32)``);
- local memory: wavefronts, the most distinct 4-byte words one of the 32
  banks serves, against the fewest (``ceil(words / 32)``).

A vector access (``vloadN``, a typed vector, ``vload_halfN``) is one access
of its whole width, as Oclgrind runs the OpenCL C. (clang's NVPTX back end
splits ``vloadN``, which promises element alignment only, into element
loads; typed vectors, ``plan.aligned``, stay whole.) Where the compiler
makes one instruction of two in the template, the replay does too: a value
loaded at every step of a work-item's run at the same index is loaded
once, and a padding's zeros are stored by the same instruction as the
data.

By default the report replays the first work-group: every other but the
last (a tail, or the destination's padding) repeats it at other addresses.
What remains a replay is the templates' loop structure (see
gpu/access_replay.py): tests/test_access.py runs kernels under gpusim and
checks that the replay of every work-group counts what gpusim counts.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InvalidArgumentError
from .access_replay import LaneAccess, replay
from .plan_types import KernelPlan
from .tile import BANKS, WARP, WORD

SECTOR = 32   #: the fewest bytes of global memory a GPU moves


@dataclass(frozen=True)
class Access:
    """One instruction of the kernel (a load or a store of one array, in
    every spelling the template has for it), over its warp-level accesses."""

    instruction: str
    local: bool             # local memory (else global)
    width: int              # bytes one lane moves per access (the widest)
    warp_instructions: int  # warp-level accesses
    bytes: int              # distinct bytes asked for, summed over them
    units: int              # 32-byte sectors touched (global) or wavefronts (local)
    ideal: int              # the fewest sectors or wavefronts those bytes need

    @property
    def store(self) -> bool:
        return self.instruction.startswith("store")

    @property
    def bytes_per_instruction(self) -> float:
        return self.bytes / self.warp_instructions if self.warp_instructions else 0.0

    @property
    def efficiency(self) -> float:
        """Fewest sectors over sectors touched (global; 1.0 is ideal)."""
        return self.ideal / self.units if self.units else 1.0

    @property
    def conflicts(self) -> float:
        """Wavefronts over the fewest (local; 1.0 is no bank conflict)."""
        return self.units / self.ideal if self.ideal else 1.0


@dataclass(frozen=True)
class Report:
    """The accesses of the replayed work-groups (``groups``, of
    ``local_size`` work-items each), and gpusim's per-kernel figures."""

    accesses: tuple[Access, ...]
    local_size: int
    groups: tuple[int, ...]

    def _total(self, store: bool | None, local: bool) -> tuple[int, int, int, int]:
        picked = [a for a in self.accesses
                  if a.local == local and (store is None or a.store == store)]
        return (sum(a.warp_instructions for a in picked), sum(a.bytes for a in picked),
                sum(a.units for a in picked), sum(a.ideal for a in picked))

    def _bytes(self, store: bool) -> float:
        count, moved, _, _ = self._total(store, False)
        return moved / max(count, 1)

    def _efficiency(self, store: bool) -> float:
        _, _, units, ideal = self._total(store, False)
        return ideal / units if units else 1.0

    @property
    def load_bytes(self) -> float:
        """Distinct bytes per warp-level global load (512: 16 bytes a lane)."""
        return self._bytes(False)

    @property
    def store_bytes(self) -> float:
        """Distinct bytes per warp-level global store."""
        return self._bytes(True)

    @property
    def load_efficiency(self) -> float:
        """Fewest sectors over sectors touched, over every global load."""
        return self._efficiency(False)

    @property
    def store_efficiency(self) -> float:
        """Fewest sectors over sectors touched, over every global store."""
        return self._efficiency(True)

    @property
    def bank_conflicts(self) -> float:
        """Local-memory wavefronts over the fewest, loads and stores together."""
        _, _, units, ideal = self._total(None, True)
        return units / ideal if ideal else 1.0

    def figures(self) -> dict[str, float]:
        """The five figures, under gpusim's column names."""
        return {"ld B/wi": self.load_bytes, "st B/wi": self.store_bytes,
                "ld eff": self.load_efficiency, "st eff": self.store_efficiency,
                "lds conf": self.bank_conflicts}


def _warp_accesses(trace: list[LaneAccess]) -> tuple[Access, ...]:
    """``trace`` grouped into warp-level accesses as gpusim groups them (by
    instruction and its spelling in the template, work-group, warp, and
    the times the lane ran it before), counted per instruction."""
    runs = defaultdict(int)
    grouped = defaultdict(list)
    for access in trace:
        site = (access.instruction, access.local, access.spelling)
        key = (access.group, access.lane, site)
        run = runs[key]
        runs[key] = run + 1
        grouped[(site, access.group, access.lane // WARP, run)].append(access)
    rows = {}
    for (site, *_), accesses in grouped.items():
        name, local, _ = site
        moved = set()
        for a in accesses:
            moved.update(range(a.address, a.address + a.size))
        if local:
            words = {b // WORD for b in moved}
            per_bank = defaultdict(int)
            for w in words:
                per_bank[w % BANKS] += 1
            units, ideal = max(per_bank.values()), -(-len(words) // BANKS)
        else:
            units, ideal = len({b // SECTOR for b in moved}), -(-len(moved) // SECTOR)
        row = rows.setdefault(name, [local, 0, 0, 0, 0, 0])
        row[1] = max(row[1], max(a.size for a in accesses))
        row[2] += 1
        row[3] += len(moved)
        row[4] += units
        row[5] += ideal
    return tuple(Access(name, *row) for name, row in rows.items())


def work_groups(plan: KernelPlan, local: int | None = None) -> int:
    """How many work-groups with any work a launch of ``plan`` runs, with
    ``local`` work-items each (default ``plan.work_group``)."""
    return plan.work_groups(plan.work_group if local is None else local)


def _arguments(plan: KernelPlan, local, groups) -> tuple[int, tuple]:
    local = plan.work_group if local is None else local
    if local < 1:
        raise InvalidArgumentError(f"work-group size {local}: must be at least 1")
    return local, tuple(range(1) if groups is None else groups)


def lane_accesses(plan: KernelPlan, local: int | None = None,
                  groups: Iterable[int] | None = None) -> list[LaneAccess]:
    """Every memory access the work-items of work-groups ``groups`` (default:
    the first) of ``local`` work-items (default ``plan.work_group``) make
    running ``plan``'s kernel, each lane's in the order it makes them."""
    local, groups = _arguments(plan, local, groups)
    return replay(plan, local, groups)


def access_report(plan: KernelPlan, local: int | None = None,
                  groups: Iterable[int] | None = None) -> Report:
    """The memory accesses of ``plan``'s kernel by work-groups ``groups``
    (launch order; default: the first, which is not the last when there
    are several) of ``local`` work-items each (default ``plan.work_group``),
    grouped and counted as gpusim counts them (see the module's text). A
    4-bit destination written in two passes replays both launches.
    Raises InvalidArgumentError for a work-group size below 1."""
    local, groups = _arguments(plan, local, groups)
    return Report(_warp_accesses(replay(plan, local, groups)), local, groups)


def _kind(plan: KernelPlan) -> str:
    if plan.tile is not None:
        tile = plan.tile
        return (f"tiled: a box of {tile.elements} elements per work-group through "
                f"{tile.local_elements * max(1, plan.src_md.dtype.bits // 8)} bytes of local "
                f"memory, read {tile.read.vec} and written {tile.write.vec} per access")
    if plan.shape == "nibble_tile":
        return f"a tile of {plan.vec} rows of {plan.block} nibbles per work-item"
    if plan.block and plan.unrolled:
        return (f"run transposes: {plan.item_elements // plan.block ** 2} tiles of "
                f"{plan.block}x{plan.block} per work-item at constant offsets")
    if plan.block:
        return f"{plan.block}x{plan.block} register transposes"
    if plan.unrolled:
        return (f"unrolled: a block of {plan.item_elements} elements per work-item at "
                f"constant offsets, stored {plan.vec} at a time")
    if plan.strategy == "gpu":
        return (f"striped: {plan.vec} elements per access"
                f"{' (typed: aligned vectors)' if plan.aligned else ''}, "
                f"{plan.chunks} per work-item spaced by the launch")
    return f"a run of {plan.vec} elements per work-item"


def format_report(plan: KernelPlan, work_group: int | None = None,
                  all_groups: bool = False) -> str:
    """The plan's strategy, NDRange, bytes per work-item and access report
    (work-groups of ``work_group`` work-items, default the plan's; the
    first work-group, or with ``all_groups`` every one), as text."""
    local = plan.work_group if work_group is None else work_group
    moved = (plan.src_md.dtype.bits + plan.dst_md.dtype.bits) / 8
    if plan.tile is not None:
        per_item = plan.tile.elements * moved / local
    else:
        per_item = plan.items * plan.item_elements * moved / plan.launch_items
    count = work_groups(plan, local)
    report = access_report(plan, local, range(count) if all_groups else None)
    which = f"all {count} work-groups" if all_groups else f"work-group 0 of {count}"
    lines = [f"strategy {plan.strategy}, shape {plan.shape or '-'}: {_kind(plan)}",
             "NDRange {}, local {}".format(*plan.ndrange(local))
             + f"; {per_item:.0f} bytes read and written per work-item",
             f"memory accesses of {which} ({local} work-items, warps of {WARP}), "
             "as gpusim counts them:",
             f"  {'instruction':<22}{'memory':>7}{'lane B':>7}{'warp instr':>11}"
             f"{'B/instr':>8}{'sectors':>9}{'fewest':>8}  figure"]
    for a in report.accesses:
        figure = f"conf {a.conflicts:.2f}" if a.local else f"eff {a.efficiency:.2f}"
        lines.append(f"  {a.instruction:<22}{'local' if a.local else 'global':>7}{a.width:>7}"
                     f"{a.warp_instructions:>11}{a.bytes_per_instruction:>8.0f}"
                     f"{a.units:>9}{a.ideal:>8}  {figure}")
    lines.append("  (local memory: wavefronts instead of sectors)" if any(
        a.local for a in report.accesses) else "")
    lines.append("kernel: " + ", ".join(
        f"{name} {value:.0f}" if "B/wi" in name else f"{name} {value:.2f}"
        for name, value in report.figures().items()))
    return "\n".join(line for line in lines if line)
