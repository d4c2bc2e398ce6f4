"""Tags, strides and submemory, with a picture of where each element lands."""
import textwrap

import clayout as cly


def picture(md):
    """For a 2-d tensor: each element's physical offset, in logical position."""
    return md.element_offsets()


for tag in ("ab", "ba", "Ab4a", "AB2a2b", "BA2a4b"):
    md = cly.MemoryDesc((4, 6), "f32", tag=tag)
    print(f"{tag:7} {md!r}  strides={md.strides} inner={md.inner_blks}/{md.inner_idxs} "
          f"padded={md.padded_dims}")
    print(textwrap.indent(str(picture(md)), "        "))

# Strides with a gap: rows of 6 floats, 8 apart.
gapped = cly.MemoryDesc((4, 6), "f32", strides=(8, 1))
print("strides (8, 1):", gapped, "size", gapped.size, "bytes for", gapped.nelems(), "elements")

# Aliases and meta-tags name the same layouts.
assert cly.MemoryDesc((2, 3, 4, 5), "f32", tag="nhwc") == cly.MemoryDesc((2, 3, 4, 5), "f32", tag="acdb")
assert cly.MemoryDesc((2, 32, 4, 5), "f32", tag="aBx16b") == \
    cly.MemoryDesc((2, 32, 4, 5), "f32", tag="nChw16c")
print("nhwc == acdb, aBx16b == nChw16c for 4 dims")

# A submemory is a window that keeps the parent's strides.
parent = cly.MemoryDesc((4, 6), "f32", tag="ab")
window = parent.submemory((2, 3), (1, 2))
print("window (2x3 at (1, 2)) of ab:", window, "element (0, 0) at offset", window.offset((0, 0)))
assert window.offset((0, 0)) == parent.offset((1, 2))
