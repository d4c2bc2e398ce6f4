"""The driver's own reading of format tags and strides: physical offsets.

A second, deliberately small implementation of the blocking rules of
DESIGN.md (the memory-formats seed), written apart from clayout's tags.py,
memory_desc.py and md_addressing.py so that the check does not share their
bugs. Offsets are in elements (nibbles for the 4-bit types).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

ABSTRACT = "abcdefghijkl"
# Alias letters in logical order, one string per domain; a tag's letters pick
# the first domain that holds them all (so "nc" is activations, "tnc" RNN).
DOMAINS = ("ncdhw", "goidhw", "tnc", "ldnc", "ldigo")
GRAMMAR = re.compile(r"[A-Za-z]+(?:\d+[A-Za-z])*")


class TagError(ValueError):
    """A tag that cannot describe the problem's dims."""


def check_grammar(tag: str) -> None:
    """Raise TagError unless ``tag`` is a tag's shape: letters, then <N><letter>s."""
    if tag != "any" and not GRAMMAR.fullmatch(tag):
        raise TagError(f"tag {tag!r} is not letters followed by <size><letter> blocks")


def trim_meta_tag(tag: str, ndims: int) -> str:
    """benchdnn's meta-tags name fixed dims (``axb`` names b); on fewer dims the
    plain letters beyond them are dropped: ``axb`` and ``abx`` on 1 dim are ``a``."""
    if "x" not in tag:
        return tag
    head = re.match(r"[A-Za-z]+", tag).group(0)
    kept = "".join(c for c in head if c == "x" or c.isupper() or ABSTRACT.find(c) < ndims)
    return kept + tag[len(head):]


def _abstract(tag: str, ndims: int) -> str:
    """``tag`` (abstract, alias or meta-tag) in the letters a..l."""
    head = re.match(r"[A-Za-z]+", tag).group(0)
    letters = head.lower()
    if "x" in letters:
        named = [ABSTRACT.index(c) for c in letters if c != "x"]
        rest = ABSTRACT[max(named, default=-1) + 1: ndims]
        return tag.replace("x", rest, 1)
    if set(letters) <= set(ABSTRACT[:len(letters)]):
        return tag
    for domain in DOMAINS:
        if set(letters) <= set(domain):
            order = sorted(letters, key=domain.index)
            mapping = {c: ABSTRACT[i] for i, c in enumerate(order)}
            return "".join(mapping[c.lower()].upper() if c.isupper() else mapping.get(c, c)
                           for c in tag)
    raise TagError(f"tag {tag!r} is neither abstract (a-l) nor an alias of {DOMAINS}")


@dataclass(frozen=True)
class Layout:
    """Where each element of a tensor lives: offset = sum(outer digit * stride)
    + inner offset, in elements from the start of the buffer."""

    dims: tuple[int, ...]
    padded: tuple[int, ...]
    strides: tuple[int, ...]                 # of each dim's outer index
    blocks: tuple[tuple[int, int], ...]      # inner (dim, size), outermost first
    size: int                                # oneDNN's size in elements: max(outer extent x stride)

    @property
    def has_padding(self) -> bool:
        return self.padded != self.dims

    def offsets(self, index: tuple[np.ndarray, ...]) -> np.ndarray:
        """Physical offsets of the elements at ``index`` (one int64 array per dim)."""
        outer_size = [math.prod(s for d2, s in self.blocks if d2 == d) for d in range(len(self.dims))]
        out = np.zeros(np.broadcast(*index).shape, np.int64)
        for d, i in enumerate(index):
            out += (i // outer_size[d]) * self.strides[d]
        inner_stride = 1
        below = [1] * len(self.dims)  # product of the blocks of each dim inside this one
        for d, size in reversed(self.blocks):
            out += (index[d] // below[d] % size) * inner_stride
            below[d] *= size
            inner_stride *= size
        return out


def tag_layout(tag: str, dims: tuple[int, ...]) -> Layout:
    """The Layout of a tag on ``dims``. Raises TagError if it does not fit."""
    ndims = len(dims)
    check_grammar(tag)
    text = _abstract(trim_meta_tag(tag, ndims), ndims)
    head = re.match(r"[A-Za-z]+", text).group(0)
    if sorted(head.lower()) != list(ABSTRACT[:ndims]):
        raise TagError(f"tag {tag!r} does not name each of {ndims} dims once")
    blocks = tuple((ABSTRACT.index(c), int(n)) for n, c in re.findall(r"(\d+)([a-z])", text[len(head):]))
    if len(blocks) != len(re.findall(r"\d+[A-Za-z]", text[len(head):])):
        raise TagError(f"tag {tag!r}: inner blocks are written lowercase")
    blocked = {d for d, _ in blocks}
    if any(s < 1 for _, s in blocks) or any(
            (ABSTRACT.index(c.lower()) in blocked) != c.isupper() for c in head):
        raise TagError(f"tag {tag!r}: the uppercase letters must be the blocked dims")
    block_of = [math.prod(s for d, s in blocks if d == dim) for dim in range(ndims)]
    padded = tuple(-(-n // b) * b for n, b in zip(dims, block_of))
    strides = [0] * ndims
    step = math.prod(s for _, s in blocks)
    for c in reversed(head):
        d = ABSTRACT.index(c.lower())
        strides[d] = step
        step *= padded[d] // block_of[d]
    return Layout(tuple(dims), padded, tuple(strides), blocks, 0 if 0 in padded else step)


def strided_layout(strides: tuple[int, ...], dims: tuple[int, ...]) -> Layout:
    """The Layout of plain strides (elements) on ``dims``."""
    if len(strides) != len(dims) or any(s < 0 for s in strides):
        raise TagError(f"strides {strides} do not fit {len(dims)} dims")
    size = 0 if 0 in dims else max(max(n * s for n, s in zip(dims, strides)),
                                   1 + sum((n - 1) * s for n, s in zip(dims, strides)))
    return Layout(tuple(dims), tuple(dims), tuple(strides), (), size)
