"""Format tags: the grammar, the domain aliases and benchdnn's meta-tags.

An abstract tag names logical dims with the letters ``a``..``l`` in physical
order, outermost first; an uppercase letter is a dim split into blocks, and
the trailing ``<N><letter>`` groups are the inner blocks, outermost first:
``ABcd4b16a4b`` is dims a, b outside, then blocks of 4 of b, 16 of a, 4 of b.

Aliases (``nchw``, ``OIhw4i16o4i``, ``ldgoi`` ...) use the letters of a domain
(activations n c d h w, weights g o i d h w, RNN t n c / l d i g o) and are
translated letter by letter. Meta-tags contain ``x``, which stands for every
dim not named otherwise (``abx`` is ``abcd`` for 4 dims, ``aBx16b`` is
``aBcde16b`` for 5).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .errors import InvalidArgumentError, describe

MAX_NDIMS = 12
LETTERS = "abcdefghijkl"

# Each family lists its letters in logical order; a family is recognised by
# its set of letters, and no two families share one.
_FAMILIES = (
    "nc", "ncw", "nchw", "ncdhw",
    "oi", "oiw", "oihw", "oidhw", "goiw", "goihw", "goidhw",
    "tn", "tnc", "ldnc", "ldio", "ldgo", "ldigo",
)
_FAMILY_BY_LETTERS = {frozenset(f): f for f in _FAMILIES}

_TAG_RE = re.compile(r"([A-Za-z]+)((?:[0-9]+[A-Za-z])*)")
_BLOCK_RE = re.compile(r"([0-9]+)([A-Za-z])")


@dataclass(frozen=True)
class TagLayout:
    """A parsed abstract tag: the order of the outer dims and the inner blocks."""

    outer: tuple[int, ...]                   # logical dims, outermost first
    blocks: tuple[tuple[int, int], ...]      # (dim, size), outermost first


def _bad(tag, why):
    return InvalidArgumentError(f"format tag {tag!r}: {why}")


def _split(tag: str):
    m = _TAG_RE.fullmatch(tag)
    if not m:
        raise _bad(tag, "expected letters for the dims followed by "
                        "<size><letter> inner blocks, e.g. 'aBcd16b'")
    blocks = [(int(n), letter) for n, letter in _BLOCK_RE.findall(m.group(2))]
    return m.group(1), blocks


def _letter_map(tag: str, outer: str, ndims: int) -> dict[str, str]:
    """Map each lowercase letter of ``tag`` to the abstract letter it stands for."""
    letters = [c.lower() for c in outer]
    if "x" in letters:
        named = [c for c in letters if c != "x"]
        if letters.count("x") > 1 or any(c not in LETTERS for c in named):
            raise _bad(tag, "a meta-tag has one 'x' among the letters a-l")
        first = max((LETTERS.index(c) for c in named), default=-1) + 1
        if first > ndims:
            raise _bad(tag, f"names dim {LETTERS[first - 1]!r} but there are only {ndims} dims")
        mapping = {c: c for c in named}
        mapping["x"] = LETTERS[first:ndims]
        return mapping
    present = frozenset(letters)
    if present == frozenset(LETTERS[: len(present)]):
        return {c: c for c in present}
    family = _FAMILY_BY_LETTERS.get(present)
    if family is None:
        raise _bad(tag, "neither an abstract tag (letters a-l), a meta-tag "
                        "with 'x', nor an alias of a known family "
                        f"({', '.join(_FAMILIES)})")
    return {c: LETTERS[i] for i, c in enumerate(family)}


def expand_tag(tag: str, ndims: int) -> str:
    """The abstract tag that ``tag`` (abstract, alias or meta-tag) means for ``ndims`` dims.

    Raises InvalidArgumentError if the tag cannot be parsed or does not fit.
    """
    if not isinstance(tag, str) or not tag:
        raise InvalidArgumentError(f"format tag {describe(tag)}: expected a non-empty string")
    return _expand(tag, ndims)


# Tags are parsed again for every descriptor made from one, and a handful of
# tags serve a whole program: the answers are kept (errors are not).
@functools.lru_cache(maxsize=1024)
def _expand(tag: str, ndims: int) -> str:
    outer, blocks = _split(tag)
    mapping = _letter_map(tag, outer, ndims)

    def translate(c: str) -> str:
        if c.lower() not in mapping:
            raise _bad(tag, f"block letter {c!r} names no dim of the tag")
        new = mapping[c.lower()]
        return new.upper() if c.isupper() else new

    abstract = "".join(translate(c) for c in outer)
    abstract += "".join(f"{n}{translate(c)}" for n, c in blocks)
    parse_tag(abstract, ndims, shown_as=tag)  # validate the result
    return abstract


def parse_tag(tag: str, ndims: int, shown_as: str | None = None) -> TagLayout:
    """Parse an abstract tag (letters a-l only) for ``ndims`` dims.

    Raises InvalidArgumentError naming the tag and the rule it breaks.
    """
    return _parse(tag, ndims, tag if shown_as is None else shown_as)


@functools.lru_cache(maxsize=1024)
def _parse(tag: str, ndims: int, name: str) -> TagLayout:
    outer, blocks = _split(tag)
    # Messages use the letters the user wrote: ``name``'s, where they line up
    # with the abstract tag's (an alias; a meta-tag's 'x' stands for several).
    written_outer, written_blocks = _split(name) if name != tag else (outer, blocks)
    if len(written_outer) != len(outer) or len(written_blocks) != len(blocks):
        written_outer, written_blocks = outer, blocks
    if not 1 <= ndims <= MAX_NDIMS:
        raise _bad(name, f"{ndims} dims is outside 1..{MAX_NDIMS}")
    lower = [c.lower() for c in outer]
    for c, w in zip(lower, written_outer):
        if c not in LETTERS:
            raise _bad(name, f"letter {w!r} is not a dim (a-l)")
    dims = [LETTERS.index(c) for c in lower]
    if sorted(dims) != list(range(ndims)):
        raise _bad(name, f"the outer letters must name each of the {ndims} dims "
                         f"({LETTERS[:ndims]}) exactly once, got {written_outer!r}")
    block_list = []
    for (size, c), (_, w) in zip(blocks, written_blocks):
        if c.isupper():
            raise _bad(name, f"inner block {size}{w} must use a lowercase letter")
        if c not in LETTERS[:ndims]:
            raise _bad(name, f"inner block {size}{w} names no dim of a {ndims}-d tensor")
        if size < 1:
            raise _bad(name, f"inner block {size}{w} must have a size of at least 1")
        block_list.append((LETTERS.index(c), size))
    if len(block_list) > MAX_NDIMS:
        raise _bad(name, f"{len(block_list)} inner blocks, at most {MAX_NDIMS} allowed")
    blocked = {d for d, _ in block_list}
    for c, w, d in zip(outer, written_outer, dims):
        if c.isupper() != (d in blocked):
            rule = ("is uppercase (blocked) but has no inner block" if c.isupper() else
                    "has inner blocks, so it must be written in uppercase")
            fixed = "".join(u.upper() if e in blocked else u.lower()
                            for u, e in zip(written_outer, dims))
            fixed += "".join(f"{size}{u}" for size, u in written_blocks)
            raise _bad(name, f"dim {w!r} {rule}: did you mean {fixed!r}?")
    return TagLayout(tuple(dims), tuple(block_list))


def format_tag(layout: TagLayout) -> str:
    """The abstract tag string of a parsed layout (inverse of parse_tag)."""
    blocked = {d for d, _ in layout.blocks}
    outer = "".join(LETTERS[d].upper() if d in blocked else LETTERS[d]
                    for d in layout.outer)
    return outer + "".join(f"{size}{LETTERS[d]}" for d, size in layout.blocks)
