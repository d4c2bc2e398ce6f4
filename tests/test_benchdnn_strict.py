"""The benchdnn driver against deliberately broken builds of clayout.

Each broken build is a patch applied in a fresh Python process before the
driver runs, so nothing leaks into the other tests. A driver whose PASSED
can be trusted reports every one of them as FAILED (or, for a request the
library cannot serve, UNIMPLEMENTED), never PASSED. Each case also runs
unpatched, so the patch, not the problem, is what fails.
"""
import subprocess
import sys
import textwrap

import pytest

# Runs the real execute, then rewrites the destination's bytes with
# ``mutate(primitive, raw)`` (raw: the whole dst buffer as NumPy bytes).
POST_PROCESS = """
import numpy as np
import clayout.primitives as P
_real = P._Primitive.execute
def execute(self, stream, src, dst, wait_for=None):
    event = _real(self, stream, src, dst, wait_for=wait_for)
    if stream.queue is not None:
        stream.wait()
        import pyopencl as cl
        raw = np.empty(dst.nbytes, np.uint8)
        cl.enqueue_copy(stream.queue, raw, dst.storage).wait()
        mutate(self, dst.md, raw)
        cl.enqueue_copy(stream.queue, dst.storage, raw).wait()
    else:
        mutate(self, dst.md, dst.storage)
    return event
P._Primitive.execute = execute
"""

PADDING_GARBAGE = POST_PROCESS + """
def mutate(primitive, md, raw):
    every = set(md.element_offsets(padded=True).ravel().tolist())
    real = set(md.element_offsets().ravel().tolist())
    size = md.dtype.bits // 8
    for off in sorted(every - real):
        raw[off * size:(off + 1) * size] = 0x5A
"""

NO_OP = """
import clayout.primitives as P
def execute(self, stream, src, dst, wait_for=None):
    return None if stream.queue is None else __import__("pyopencl").enqueue_marker(stream.queue)
P._Primitive.execute = execute
"""

# The host path's conversion, rounding integers toward zero instead of to nearest.
TRUNCATE = """
import numpy as np
import clayout.host.reorder as R
_real = R.convert
def convert(values, dst):
    if dst.is_int:
        values = np.trunc(values)
    return _real(values, dst)
R.convert = convert
"""

def toward_zero(name, uint, saturate_to=None):
    """A patch rounding the host path's ``name`` results toward zero: one step
    back wherever rounding to nearest moved away from zero, and (for f8_e4m3,
    which has no infinity) the largest finite value where it overflowed to NaN."""
    return f"""
import numpy as np
import clayout.host.reorder as R
_real = R.convert
def convert(values, dst):
    out = _real(values, dst)
    if dst.name == "{name}":
        with np.errstate(all="ignore"):
            wide = out.astype(np.float64)
            away = np.abs(wide) > np.abs(values.astype(np.float64))
        bits = out.view(np.{uint}).copy()
        bits[away & ~np.isnan(values)] -= 1
        if {saturate_to!r} is not None:
            overflow = np.isnan(wide) & ~np.isnan(values)
            sign = np.signbit(values[overflow]).astype(np.{uint}) << {8 if uint == "uint8" else 16} - 1
            bits[overflow] = {saturate_to!r} | sign
        out = bits.view(out.dtype)
    return out
R.convert = convert
"""


F16_TOWARD_ZERO = toward_zero("f16", "uint16")
F8_TOWARD_ZERO = toward_zero("f8_e4m3", "uint8", saturate_to=0x7E)

# s4 results off by one where they are odd: a conversion bug the driver's own
# integer reference must see, though ml_dtypes packs the nibbles.
S4_OFF_BY_ONE = """
import numpy as np
import clayout.host.reorder as R
_real = R.convert
def convert(values, dst):
    out = _real(values, dst)
    if dst.name in ("s4", "u4"):
        v = out.astype(np.int64)
        out = np.where(v % 2 == 1, v - 1, v).astype(out.dtype)
    return out
R.convert = convert
"""

# Two inner blocks of ABcd16a16b swapped in clayout's own tag parser: the
# kernel, from_numpy and to_numpy all agree with each other, and are wrong.
SWAPPED_BLOCKS = """
import clayout.tags as T
import clayout.memory_desc as M
_real = T.parse_tag
def parse_tag(tag, ndims, shown_as=None):
    layout = _real(tag, ndims, shown_as)
    if tag == "ABcd16a16b":
        return T.TagLayout(layout.outer, tuple(reversed(layout.blocks)))
    return layout
T.parse_tag = M.parse_tag = parse_tag
"""


# Grouped scales and zero points read with the two group sizes swapped (1x32
# as 32x1): on 64x128 the value count is the same, so only the values' places
# are wrong.
GROUPS_SWAPPED = """
import clayout.host.reorder as R
_real = R._per_slice
class _Swapped:
    def __init__(self, v):
        self._v = v
    def __getattr__(self, name):
        return getattr(self._v, name)
    def group_sizes(self, ndims):
        sizes = list(self._v.group_sizes(ndims))
        sizes[-2:] = sizes[-1:-3:-1]
        return tuple(sizes)
def _per_slice(v, ndims, dims, index, ct):
    return _real(_Swapped(v) if v.groups is not None else v, ndims, dims, index, ct)
R._per_slice = _per_slice
"""

# Scales kept in f32 whatever their data type says (bf16, f16).
SCALES_NOT_ROUNDED = """
import numpy as np
import clayout.attr as A
_real = A._PerSlice.__init__
def __init__(self, values, mask=0, groups=None, data_type=None):
    _real(self, values, mask, groups, data_type)
    if isinstance(self, A.Scales):
        self.values = np.asarray(values, np.float32).reshape(-1)
A._PerSlice.__init__ = __init__
"""

# One compensation value off by one.
COMPENSATION_OFF_BY_ONE = POST_PROCESS + """
def mutate(primitive, md, raw):
    if md.compensation_offset is not None:
        at = md.compensation_offset
        value = int(np.frombuffer(bytes(raw[at:at + 4]), "<i4")[0]) + 1
        raw[at:at + 4] = np.frombuffer(np.array([value], "<i4").tobytes(), np.uint8)
"""

# The s8s8 and the zero-point compensations stored in each other's place.
COMPENSATIONS_SWAPPED = POST_PROCESS + """
def mutate(primitive, md, raw):
    counts = md.extra.counts(md.padded_dims) if md.extra is not None else ()
    if len(counts) == 2:
        at = md.compensation_offset
        first = 4 * counts[0][2]
        values = bytes(raw[at:at + first + 4 * counts[1][2]])
        swapped = values[first:] + values[:first]
        raw[at:at + len(values)] = np.frombuffer(swapped, np.uint8)
"""

# Garbage in the compensation of the slices in the padding of the masked dims.
COMPENSATION_PADDING_GARBAGE = POST_PROCESS + """
def mutate(primitive, md, raw):
    if md.extra is None:
        return
    at = md.compensation_offset
    for name, mask, count in md.extra.counts(md.padded_dims):
        shape = [n for d, n in enumerate(md.padded_dims) if mask >> d & 1]
        logical = [n for d, n in enumerate(md.dims) if mask >> d & 1]
        for flat in range(count):
            index = np.unravel_index(flat, shape)
            if any(i >= n for i, n in zip(index, logical)):
                raw[at + 4 * flat:at + 4 * flat + 4] = 0x5A
        at += 4 * count
"""

# e8m0 by oneDNN's own rule (the exponent bits of the f32: toward zero)
# instead of clayout's rounding to nearest.
E8M0_TRUNCATED = """
import numpy as np
import clayout.host.reorder as R
_real = R.convert
def convert(values, dst):
    if dst.name == "e8m0":
        bits = np.asarray(values, np.float32).view(np.uint32)
        return ((bits >> 23) & 0xFF).astype(np.uint8).view(dst.numpy)
    return _real(values, dst)
R.convert = convert
"""


def run_driver(patch, *args):
    code = textwrap.dedent(patch) + textwrap.dedent("""
        import sys
        from clayout.benchdnn import main
        sys.exit(main(sys.argv[1:]))
    """)
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=600)
    return done.returncode, done.stdout, done.stderr


def summary(stdout):
    line = [x for x in stdout.splitlines() if x.startswith("tests:")][-1]
    return dict(item.split(":", 1) for item in line.split() if ":" in item)


BROKEN = [
    ("padding garbage, reorder", PADDING_GARBAGE, "opencl",
     ["--reorder", "--sdt=f32", "--ddt=s8", "--dtag=aBx16b", "2x17x3x3", "--sdt=f32",
      "--ddt=f32", "--dtag=ABcd16a16b", "17x20x2x2"]),
    ("padding garbage, shuffle", PADDING_GARBAGE, "opencl",
     ["--shuffle", "--tag=aBx16b", "--group=3", "2x12x3x3"]),
    ("padding garbage, host", PADDING_GARBAGE, "host",
     ["--reorder", "--dtag=aBx16b", "2x17x3x3"]),
    ("no-op kernel, reorder", NO_OP, "opencl", ["--reorder", "--dtag=axb", "2x16x3x4"]),
    ("no-op kernel, shuffle", NO_OP, "opencl", ["--shuffle", "--group=4", "2x16x3x4"]),
    ("truncation", TRUNCATE, "host",
     ["--reorder", "--ddt=s8,u8,s32", "--attr-scales=src:common:0.5,dst:common:2",
      "2x16x3x4", "--sdt=s8", "--ddt=u8", "--attr-scales=",
      "--attr-zero-points=src:common:1+dst:common:2", "--attr-post-ops=sum:0.25", "2x16x3x4"]),
    ("round-toward-zero f16", F16_TOWARD_ZERO, "host",
     ["--reorder", "--sdt=f32", "--ddt=f16", "2x16x3x4"]),
    ("round-toward-zero f8_e4m3", F8_TOWARD_ZERO, "host",
     ["--reorder", "--sdt=f32", "--ddt=f8_e4m3", "2x16x3x4"]),
    ("s4 off by one", S4_OFF_BY_ONE, "host",
     ["--reorder", "--sdt=f32", "--ddt=s4,u4", "2x16x3x4"]),
    ("swapped inner blocks", SWAPPED_BLOCKS, "opencl",
     ["--reorder", "--stag=abx", "--dtag=ABcd16a16b", "32x32x2x2", "--stag=ABcd16a16b",
      "--dtag=abx", "32x32x2x2"]),
    ("grouped scales and zero points swapped", GROUPS_SWAPPED, "host",
     ["--reorder", "--sdt=f32", "--ddt=s8,u4", "--attr-scales=src:per_dim_01:f16:1x32",
      "64x128", "--sdt=u4", "--ddt=f32", "--attr-scales=src:per_dim_01:f32:1x32",
      "--attr-zero-points=src:per_dim_01:u4:32x1", "64x128"]),
    ("scales not rounded to their data type", SCALES_NOT_ROUNDED, "host",
     ["--reorder", "--sdt=f32", "--ddt=f32,s32", "--attr-scales=src:common:0.3:f16,"
      "src:common:1.1:bf16,dst:common:0.3:f16", "16x96"]),
    ("compensation off by one", COMPENSATION_OFF_BY_ONE, "opencl",
     ["--reorder", "--ddt=s8", "--dtag=OIhw4i16o4i,oihw", "--oflag=s8s8_comp:1,zp_comp:1",
      "20x17x3x3", "--dtag=gOIhw16i16o", "--oflag=s8s8_comp:3+zp_comp:3", "2x20x17x3x3"]),
    ("compensation off by one, host", COMPENSATION_OFF_BY_ONE, "host",
     ["--reorder", "--sdt=s8", "--ddt=s8", "--dtag=OIhw16i16o", "--oflag=zp_comp:1",
      "20x17x3x3"]),
    ("compensations swapped", COMPENSATIONS_SWAPPED, "host",
     ["--reorder", "--ddt=s8", "--dtag=OIhw4i16o4i", "--oflag=s8s8_comp:1+zp_comp:1",
      "--attr-scales=,src:per_dim_0", "20x17x3x3"]),
    ("compensation padding garbage", COMPENSATION_PADDING_GARBAGE, "opencl",
     ["--reorder", "--ddt=s8", "--dtag=OIhw16i16o", "--oflag=s8s8_comp:1,zp_comp:1",
      "20x17x3x3", "--dtag=gOIhw16i16o", "--oflag=s8s8_comp:3+zp_comp:3", "2x20x17x3x3"]),
    ("e8m0 toward zero", E8M0_TRUNCATED, "host",
     ["--reorder", "--sdt=f32,s8", "--ddt=e8m0", "2x16x3x4"]),
]


@pytest.mark.parametrize("what, patch, engine, args", BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_build_never_passes(cl_engine, what, patch, engine, args):
    rc, out, err = run_driver("", f"--engine={engine}", *args)
    assert rc == 0 and summary(out)["failed"] == "0", out + err  # the problems are fine
    rc, out, err = run_driver(patch, f"--engine={engine}", *args)
    counts = summary(out)
    assert counts["passed"] == "0" and counts["mistrusted"] == "0", out + err
    assert int(counts["failed"]) == int(counts["tests"]) > 0, out + err
    assert rc == 1


