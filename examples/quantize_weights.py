"""Quantize a real model's weights on the device three ways, decompress them,
and lay the convolution weights out in blocks.

    make weights                                  # silero-vad's weights, once
    python examples/quantize_weights.py [path.safetensors]

Every weight of two or more dims is quantized by cly.Quantize, which computes
each group's scale (and zero point) from the data on the device, one group
per 1x32 run of a row:

- s4, symmetric: s = absmax/7, q = rint(x / s);
- u4, asymmetric: s = (max - min)/15 over a range that holds 0, a u4 zero
  point zp = rint(-min / s), q = rint(x / s) + zp;
- MXFP4 (OCP MX v1.0): one e8m0 scale 2^(floor(log2 absmax) - 2) per 32
  elements, the elements f4_e2m1.

A 3-D convolution weight (O, I, K) is quantized as its 2-D view (O, I*K),
which is how its bytes already lie in oiw; rows whose length is not a
multiple of 32 are padded with zeros to the next one (the output says so).
1-D biases stay f32. NumPy then does the same on the host, from the same
formulas, for the time it takes and to check the device's bytes.

The script checks what it prints: the device's values, scales and zero
points equal NumPy's bit for bit; each value dequantized by the grouped
decompression reorder lies within half a step of the original (s4, u4);
each blocked weight matches a NumPy build of the layout and reorders back
bit for bit.
"""
import argparse
import pathlib
import statistics
import sys
import time

import ml_dtypes
import numpy as np

import clayout as cly

DEFAULT_PATH = pathlib.Path(__file__).parent / "weights" / "silero_vad_16k.safetensors"
GROUP = 32      # the MX block; the integer formats use the same groups
REPEATS = 5     # times per primitive; the median is printed
# Rounding slack of the half-step bound, in steps: x / s and s * (q - zp)
# each round once in f32, a few units of 2**-24 each.
SLACK = 1e-5
# Blocked layouts for convolution weights (O, I, K): oneDNN's choice for a
# layer with few input channels (the first) blocks only O.
BLOCKED = {"OIw16i16o": ((1, 16), (0, 16)), "Oiw16o": ((0, 16),)}
PER_GROUP = dict(mask=0b11, groups=(1, GROUP))
#: name: (dst type, scheme, scale type, zero-point type)
FORMATS = {"s4": ("s4", "symmetric", "f32", None),
           "u4+zp": ("u4", "asymmetric", "f32", "u4"),
           "MXFP4": ("f4_e2m1", "mx", "e8m0", None)}


def quantized_shape(w: np.ndarray) -> tuple[int, int, int]:
    """(rows, columns, columns padded to whole groups) of w's 2-D view."""
    rows = w.shape[0]
    cols = w.size // rows
    return rows, cols, -(-cols // GROUP) * GROUP


def conv_tag(w: np.ndarray) -> str:
    return "OIw16i16o" if w.shape[1] >= 16 else "Oiw16o"


def load(path: pathlib.Path) -> dict:
    """The tensors of a .safetensors file, as NumPy arrays by name."""
    if not path.exists():
        sys.exit(f"{path} does not exist: run `make weights` to download silero-vad's "
                 f"weights, or give a .safetensors file")
    try:
        from safetensors.numpy import load_file
    except ImportError:
        sys.exit("this example reads weights with safetensors: "
                 "pip install 'clayout[weights]' (make weights does)")
    return load_file(str(path))


# -- the same formulas in NumPy, on the host ----------------------------------------

def numpy_quantize(view: np.ndarray, fmt: str):
    """(values, scales, zero points or None) of the 2-D f32 array ``view``, one
    group per 1xGROUP run, by the formulas of the docstring."""
    g = view.reshape(view.shape[0], -1, GROUP)
    if fmt == "s4":
        absmax = np.abs(g).max(axis=2)
        s = np.where(absmax > 0, absmax / np.float32(7), 1).astype(np.float32)
        q = np.clip(np.rint(g / s[..., None]), -8, 7)
        return q.reshape(view.shape).astype(ml_dtypes.int4), s, None
    if fmt == "u4+zp":
        lo, hi = np.minimum(g.min(axis=2), 0), np.maximum(g.max(axis=2), 0)
        s = np.where(hi > lo, (hi - lo) / np.float32(15), 1).astype(np.float32)
        zp = np.clip(np.rint(-lo / s), 0, 15)
        q = np.clip(np.rint(g / s[..., None]) + zp[..., None], 0, 15)
        return (q.reshape(view.shape).astype(ml_dtypes.uint4), s,
                zp.astype(ml_dtypes.uint4))
    absmax = np.abs(g).max(axis=2)   # MX: 2^(floor(log2 absmax) - emax), f4's emax 2
    k = np.where(absmax > 0, np.floor(np.log2(np.where(absmax > 0, absmax, 1))) - 2, -127)
    k = np.clip(k, -127, 127)
    x = np.clip(g / np.ldexp(np.float32(1), k.astype(int))[..., None], -6, 6)
    return (x.reshape(view.shape).astype(ml_dtypes.float4_e2m1fn),
            np.ldexp(np.float32(1), k.astype(int)).astype(ml_dtypes.float8_e8m0fnu), None)


def timed_host(run) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def timed(primitive, stream, *args) -> tuple[float, str]:
    """Median seconds of REPEATS runs of the primitive, and where they were
    measured: the kernel's own start and end on the device, or the wall clock
    around execute and wait when the host runs it."""
    on_device = primitive.impl.split(":")[0] in ("ocl", "sycl") and \
        stream.engine.kind == "opencl"  # a kernel's event, with profiling
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        event = primitive.execute(stream, *args)
        stream.wait()
        if on_device and hasattr(event, "profile"):
            times.append((event.profile.end - event.profile.start) * 1e-9)
        else:
            times.append(time.perf_counter() - start)
    return statistics.median(times), ("device" if on_device else "wall")


def quantize_roundtrip(engine, stream, name: str, w: np.ndarray, fmt: str) -> str:
    """Quantize w (two or more dims) in format ``fmt`` and back on the engine,
    check it against NumPy, and describe the error and the times."""
    rows, cols, padded = quantized_shape(w)
    view = w.reshape(rows, cols)  # (O, I, K) as (O, I*K): the same bytes in oiw
    notes = [] if w.ndim == 2 else [f"as {rows}x{cols}"]
    if padded != cols:
        view = np.pad(view, ((0, 0), (0, padded - cols)))
        notes.append(f"padded to {padded}")
    dt, scheme, scale_dt, zp_dt = FORMATS[fmt]
    f32 = cly.MemoryDesc((rows, padded), "f32", tag="ab")
    quantize = cly.Quantize(f32, dt, scheme=scheme, engine=engine, **PER_GROUP)
    src = cly.Memory.from_numpy(f32, engine, view)
    values = cly.Memory(quantize.dst_md, engine)
    scales = cly.Memory(quantize.scales_md, engine)
    points = None if zp_dt is None else cly.Memory(quantize.zero_points_md, engine)
    t_quantize, where = timed(quantize, stream, src, values, scales, points)

    # Decompression takes the three memories as they are: grouped src scales
    # (e8m0 for MX) and zero points given at execute.
    attr = cly.Attr(src_scales=cly.Scales(mask=0b11, groups=(1, GROUP), data_type=scale_dt),
                    src_zero_points=None if zp_dt is None else cly.ZeroPoints(
                        mask=0b11, groups=(1, GROUP), data_type=zp_dt))
    dequantize = cly.Reorder(quantize.dst_md, f32, engine=engine, attr=attr)
    back = cly.Memory(f32, engine)
    given = dict(src_scales=scales) if points is None else \
        dict(src_scales=scales, src_zero_points=points)
    dequantize.execute(stream, values, back, **given)
    stream.wait()

    t_numpy = timed_host(lambda: numpy_quantize(view, fmt))
    want_q, want_s, want_zp = numpy_quantize(view, fmt)
    assert np.array_equal(values.to_numpy().view(np.uint8), want_q.view(np.uint8)), \
        f"{name} {fmt}: the device's values differ from NumPy's"
    assert np.array_equal(scales.to_numpy().reshape(want_s.shape).view(np.uint8),
                          want_s.view(np.uint8)), f"{name} {fmt}: scales differ"
    if want_zp is not None:
        assert np.array_equal(points.to_numpy().reshape(want_zp.shape).view(np.uint8),
                              want_zp.view(np.uint8)), f"{name} {fmt}: zero points differ"

    error = np.abs(back.to_numpy() - view)[:, :cols]
    step = np.repeat(want_s.astype(np.float32), GROUP, axis=1)[:, :cols]
    worst = float((error / step).max())
    if fmt != "MXFP4":  # MX saturates at 6 X: its bound is the format's, not half a step
        assert worst <= 0.5 + SLACK, f"{name} {fmt}: an error of {worst} steps"
    x = view[:, :cols].astype(np.float64)
    rel_rms = np.sqrt((error.astype(np.float64) ** 2).mean() / (x ** 2).mean())
    shape = "x".join(map(str, w.shape))
    return (f"{name:<22} {shape:<12} {fmt:<6} {error.max():9.2e} {worst:6.3f} {rel_rms:8.2%}"
            f" {t_quantize * 1e6:8.1f} {t_numpy * 1e6:8.1f}  {where}  same bits as NumPy"
            + (f"  ({', '.join(notes)})" if notes else ""))


def blocked_reference(w: np.ndarray, blocks) -> np.ndarray:
    """The elements of w (O, I, K) in the order of a blocked layout that keeps
    the outer dims in order and has the inner blocks ``blocks`` ((dim, size),
    outermost first), each blocked dim padded with zeros."""
    size = dict(blocks)
    pads = [(0, -n % size.get(d, 1)) for d, n in enumerate(w.shape)]
    padded = np.pad(w, pads)
    split = []  # each dim as (outer, block)
    for d, n in enumerate(padded.shape):
        split += [n // size.get(d, 1), size.get(d, 1)]
    outer = [2 * d for d in range(w.ndim)]
    inner = [2 * d + 1 for d, _ in blocks]
    ones = [2 * d + 1 for d in range(w.ndim) if d not in size]  # blocks of 1, anywhere
    return padded.reshape(split).transpose(outer + inner + ones).ravel()


def block_conv(engine, stream, name: str, w: np.ndarray) -> str:
    """Reorder a convolution weight (O, I, K) from oiw into a blocked layout,
    check its bytes and the way back, and describe it."""
    tag = conv_tag(w)
    plain = cly.MemoryDesc(w.shape, "f32", tag="oiw")
    blocked = cly.MemoryDesc(w.shape, "f32", tag=tag)
    to_blocked = cly.Reorder(plain, blocked, engine=engine)
    to_plain = cly.Reorder(blocked, plain, engine=engine)
    src = cly.Memory.from_numpy(plain, engine, w)
    dst = cly.Memory(blocked, engine)
    back = cly.Memory(plain, engine)
    t_there, where = timed(to_blocked, stream, src, dst)
    t_back, _ = timed(to_plain, stream, dst, back)

    expected = blocked_reference(w, BLOCKED[tag]).view(np.uint32)
    assert np.array_equal(dst.raw().view(np.uint32), expected), f"{name}: {tag} bytes differ"
    assert np.array_equal(back.to_numpy().view(np.uint32), w.view(np.uint32)), \
        f"{name}: {tag} -> oiw is not bit for bit"
    shape = "x".join(map(str, w.shape))
    grown = blocked.size / (w.size * 4)
    return (f"{name:<22} {shape:<12} oiw -> {tag:<10} {grown:5.2f}x bytes "
            f"{t_there * 1e6:8.1f} {t_back * 1e6:8.1f}  {where}  round trip bit for bit")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=pathlib.Path, default=DEFAULT_PATH,
                        help=f"a .safetensors file (default: {DEFAULT_PATH})")
    args = parser.parse_args(argv)
    tensors = load(args.path)
    engine = cly.Engine()
    stream = cly.Stream(engine, profiling=True)
    print(f"{args.path.name} on {engine!r}")

    weights = {k: v for k, v in tensors.items() if v.ndim >= 2 and v.dtype == np.float32}
    skipped = sorted(set(tensors) - set(weights))
    print(f"\nquantized on the device, scales computed there, one per 1x{GROUP} group; "
          f"steps: max |error| / scale; times: median of {REPEATS}, in us")
    print(f"{'tensor':<22} {'shape':<12} {'format':<6} {'max|err|':>9} {'steps':>6} "
          f"{'rel RMS':>8} {'device':>8} {'NumPy':>8}")
    for fmt in FORMATS:
        for name, w in weights.items():
            print(quantize_roundtrip(engine, stream, name, np.ascontiguousarray(w), fmt))
    if skipped:
        print(f"kept f32 (fewer than 2 dims or not f32): {', '.join(skipped)}")

    print(f"\nconvolution weights into blocked layouts; times: median of {REPEATS}, in us")
    print(f"{'tensor':<22} {'shape':<12} {'layouts':<17} {'size':>11} {'to':>8} {'back':>8}")
    for name, w in weights.items():
        if w.ndim == 3:
            print(block_conv(engine, stream, name, np.ascontiguousarray(w)))


if __name__ == "__main__":
    main()
