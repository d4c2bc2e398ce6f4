"""Local memory's layout for a tile: replaying a work-group's local-memory
accesses against the banks, and choosing the padding that spreads them.

``phase_elements`` lists the elements each warp-level access of a phase
touches (numpy arrays, no kernel run), ``bank_conflicts`` counts them as
gpusim does (wavefronts: the most distinct 4-byte words one of the 32
banks serves, over the fewest), and ``choose_padding`` picks the local
order and the spare elements (``Tile.pad_every``, ``Tile.pad_by``) that
conflict least. Nothing here touches OpenCL.
"""
from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np

from .tile import BANKS, ROTATED, WARP, WORD, Phase, Tile, shuffle_target


def phase_elements(tile: Tile, phase: Phase, group: int, reading: bool, laps: int | None = None,
                   shuffle=None):
    """The local-memory elements a work-group of ``group`` work-items
    touches in ``phase``, as arrays: (warp access, one per warp and lap of
    the loop; each lane's vector of elements, in the box's local order,
    before padding). ``laps``: only the loop's first so many laps.
    ``shuffle``: (((level, mult), ...) of the shuffled axis, rows, group):
    the read phase puts the element read at axis position i where the
    destination wants it, at (i % group) * rows + i / group."""
    count = phase.count if laps is None else min(phase.count, laps * group)
    r = np.arange(count, dtype=np.int64)
    first, row, keep = phase.walk(r)
    r, first, row = r[keep], first[keep], row[keep]
    access = (r % group) // WARP + (r // group) * -(-group // WARP)
    elements = first[:, None] + np.arange(phase.vec)[None, :]
    digits = tile.digits(phase, elements, np.broadcast_to(row[:, None], elements.shape))
    if reading and shuffle is not None:
        axis, rows, group_size = shuffle
        i = sum(digits.get(level, 0) * mult for level, mult in axis)
        c = shuffle_target(i, rows, group_size)
        for level, mult in axis:
            if level in digits:
                digits[level] = (c // mult) % tile.box[level]
    k = np.zeros_like(elements)
    for level, digit in digits.items():
        k += digit * tile.local_stride(level)
    if phase.vec in ROTATED:
        # (the lane's elements in the order a rotated phase moves them: see Tile.rotate)
        turn = (np.arange(phase.vec)[None, :] + r[:, None]) % phase.vec
        return access, k, np.take_along_axis(k, turn, axis=1)
    return access, k, k


def bank_conflicts(tile: Tile, element_bytes: int, group: int, phases=None) -> float:
    """Local-memory wavefronts over the fewest possible, for one work-group
    of ``group`` work-items moving ``tile``'s box (warps of 32, banks of 4
    bytes, as gpusim counts them). ``phases`` are phase_elements' arrays
    for the read and the write phase (computed when not given)."""
    if phases is None:
        phases = [phase_elements(tile, tile.read, group, True),
                  phase_elements(tile, tile.write, group, False)]
    waves = ideal = 0
    for phase, (access, k, turned) in zip((tile.read, tile.write), phases):
        # A lane's vector is one access where it is one aligned vector in
        # local memory, else each element is an access of its own (in a
        # rotated order where the tile says so).
        if tile.contiguous(phase):
            access = np.broadcast_to(access[:, None], k.shape).ravel()
        else:
            access = (access[:, None] * phase.vec + np.arange(phase.vec)[None, :]).ravel()
            if tile.rotates(phase):
                k = turned
        k = k.ravel()
        start = tile.local_index(k) * element_bytes
        if element_bytes >= WORD:  # each element its own words: none counted twice
            ids = np.concatenate([access] * (element_bytes // WORD))
            word = np.concatenate([start // WORD + w for w in range(element_bytes // WORD)])
        else:  # several elements to a word
            pairs = np.unique(access * (1 << 32) + start // WORD)
            ids, word = pairs >> 32, pairs & ((1 << 32) - 1)
        ideal += int(np.sum(-(-np.bincount(ids) // BANKS)))
        banks = np.bincount(ids * BANKS + word % BANKS, minlength=(ids.max() + 1) * BANKS)
        waves += int(banks.reshape(-1, BANKS).max(axis=1).sum())
    return waves / ideal if ideal else 1.0


@functools.lru_cache(maxsize=1024)
def choose_padding(tile: Tile, element_bytes: int, group: int, local_bytes: int,
                   shuffle=None) -> Tile:
    """``tile`` with the local-memory layout (the destination's order or the
    source's) and padding (spare elements after every so many) whose
    replayed accesses conflict least; among equals, one where the write
    phase's vectors are whole and aligned in local memory (then loaded as
    one vector and stored by one typed 16-byte store, where a gathered one
    is stored by vstoreN, which compilers split), then the smallest. The
    first two laps of each phase's loop are replayed (the later ones repeat
    them). ``shuffle``: as for phase_elements."""
    best = None
    for order in ("dst", "src"):
        tile = replace(tile, local_order=order)
        phases = [phase_elements(tile, tile.read, group, True, laps=2, shuffle=shuffle),
                  phase_elements(tile, tile.write, group, False, laps=2)]
        # Spare elements after every power of two, or after every step of
        # a level (rows of 49 or 144 elements), so many at a time.
        strides = {tile.local_stride(level) * tile.box[level] for level in tile.layout}
        everies = {1 << n for n in range(3, tile.elements.bit_length() + 1)}
        if element_bytes >= WORD:  # (narrow elements: powers of two, each replay costs more)
            everies |= strides | {32 * n for n in range(1, min(16, tile.elements // 32) + 1)}
        for every in sorted(everies):
            if best is not None and best[0][:2] == (1.0, False):
                break  # no conflict left, whole write vectors
            for by in (1, 2, 4, 8, 16):
                if by % max(1, WORD // element_bytes):
                    continue  # (a spare byte or two moves no bank)
                for rotate in (False, True):
                    trial = replace(tile, pad_every=every, pad_by=by, rotate=rotate)
                    size = trial.local_elements * element_bytes
                    if size > local_bytes or rotate and not (
                            trial.rotates(trial.read) or trial.rotates(trial.write)):
                        continue
                    key = (round(bank_conflicts(trial, element_bytes, group, phases), 3),
                           trial.write.vec > 1 and not trial.contiguous(trial.write), rotate,
                           size)
                    if best is None or key < best[0]:
                        best = (key, trial)
    return replace(tile, local_order="dst") if best is None else best[1]
