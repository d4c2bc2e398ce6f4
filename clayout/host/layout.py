"""Moving logical NumPy arrays in and out of physical bytes, for any layout."""
from __future__ import annotations

import numpy as np

from ..memory_desc import MemoryDesc


def scatter(md: MemoryDesc, array: np.ndarray, raw: np.ndarray):
    """Write ``array`` (shape md.dims) into the physical bytes ``raw``; the
    descriptor's own padding gets zeros, every other byte is left alone."""
    dt = md.dtype
    padded = md.element_offsets(padded=True)
    values = np.zeros(padded.shape, dtype=dt.numpy)
    values[tuple(slice(0, n) for n in md.dims)] = array
    padded, values = padded.ravel(), values.ravel()
    if dt.packed:  # two elements a byte, the first in the low nibble
        nibbles = values.astype(np.int8).view(np.uint8) & 0x0F
        for half in (0, 1):
            pick = (padded & 1) == half
            where = padded[pick] >> 1
            keep = np.uint8(0xF0 if half == 0 else 0x0F)
            raw[where] = (raw[where] & keep) | (nibbles[pick] << (4 * half))
    else:
        raw.view(dt.numpy)[padded] = values


def gather(md: MemoryDesc, raw: np.ndarray) -> np.ndarray:
    """The logical array (shape md.dims) held by the physical bytes ``raw``."""
    dt = md.dtype
    offsets = md.element_offsets()
    if not dt.packed:
        return raw.view(dt.numpy)[offsets]
    nibbles = (raw[offsets >> 1] >> ((offsets & 1) * 4).astype(np.uint8)) & 0x0F
    if dt.min < 0:  # sign-extend s4
        nibbles = np.where(nibbles >= 8, nibbles.astype(np.int16) - 16, nibbles)
    return nibbles.astype(dt.numpy)
