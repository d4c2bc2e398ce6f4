"""Running a reorder for the test_reorder_*.py files: memories filled with
the reference's bytes (padding holding garbage), destinations pre-filled
with a known byte, one execute on a fresh stream."""
import numpy as np

import clayout as cly
from reference import raw_of


def src_memory(engine, dims, dt, tag, values, lib_tag=None, pad_byte=0x5A):
    """A source Memory built from the reference's bytes; padding holds garbage.
    `tag` is the reference's spelling of the layout, `lib_tag` clayout's
    (when it differs, e.g. 'aBx16b' for 'aBcde16b')."""
    md = cly.MemoryDesc(dims, dt, tag=lib_tag or tag)
    raw = raw_of(values, tag, dt, pad_byte)
    assert md.size == raw.size, f"{md!r}: size {md.size}, reference {raw.size}"
    return md, cly.Memory(md, engine, raw=raw)


def prefilled(md, engine, byte=0xAB):
    """A Memory of md whose every byte is `byte`."""
    return cly.Memory(md, engine, raw=np.full(max(md.size, 1), byte, np.uint8))


def execute(engine, src_md, dst_md, src, dst, attr=None):
    """Create the Reorder, execute it once and wait; returns the primitive."""
    r = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
    s = cly.Stream(engine)
    r.execute(s, src, dst)
    s.wait()
    return r
