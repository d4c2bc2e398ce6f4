"""Quantize a real model's weights to int4 on the device, decompress them,
and lay the convolution weights out in blocks.

    make weights                                  # silero-vad's weights, once
    python examples/quantize_weights.py [path.safetensors]

Every weight of two or more dims is quantized to s4 with one f32 scale per
1x32 group: a 3-D convolution weight (O, I, K) is quantized as its 2-D view
(O, I*K), which is how its bytes already lie in oiw; rows whose length is not
a multiple of 32 are padded with zeros to the next one (the output says so).
1-D biases stay f32. The scales are symmetric, absmax/7 per group: weights
centre on zero, so a zero point would buy little and cost a second value per
group; 7 rather than 8 keeps -absmax and +absmax both in range.

The script checks what it prints: each dequantized value lies within half a
quantization step of the original, and each blocked weight matches a NumPy
build of the layout and reorders back bit for bit.
"""
import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

import clayout as cly

DEFAULT_PATH = pathlib.Path(__file__).parent / "weights" / "silero_vad_16k.safetensors"
GROUP = 32
LEVELS = 7      # s4 holds -8..7; symmetric scales map +-absmax to +-7
REPEATS = 5     # times per primitive; the median is printed
# Rounding slack of the half-step bound, in steps: x*(1/s) and s*q each round
# once in f32 (|q| <= 7), a few units of 2**-24 each.
SLACK = 1e-5
# Blocked layouts for convolution weights (O, I, K): oneDNN's choice for a
# layer with few input channels (the first) blocks only O.
BLOCKED = {"OIw16i16o": ((1, 16), (0, 16)), "Oiw16o": ((0, 16),)}
PER_GROUP = dict(mask=0b11, groups=(1, GROUP))


def quantized_shape(w: np.ndarray) -> tuple[int, int, int]:
    """(rows, columns, columns padded to whole groups) of w's 2-D view."""
    rows = w.shape[0]
    cols = w.size // rows
    return rows, cols, -(-cols // GROUP) * GROUP


def conv_tag(w: np.ndarray) -> str:
    return "OIw16i16o" if w.shape[1] >= 16 else "Oiw16o"


def build_ahead(engine, weights: dict) -> int:
    """Build every kernel the script will run at once, on every core
    (cly.build): the primitives made below then find them built. A kernel
    depends on the scales' kind, not their values: ones stand in. Returns
    how many primitives it made."""
    items = []
    for w in weights.values():
        rows, _, padded = quantized_shape(w)
        f32 = cly.MemoryDesc((rows, padded), "f32", tag="ab")
        s4 = cly.MemoryDesc((rows, padded), "s4", tag="ab")
        attr = cly.Attr(src_scales=cly.Scales(np.ones(rows * padded // GROUP), **PER_GROUP))
        items += [(f32, s4, attr), (s4, f32, attr)]
        if w.ndim == 3:
            plain = cly.MemoryDesc(w.shape, "f32", tag="oiw")
            blocked = cly.MemoryDesc(w.shape, "f32", tag=conv_tag(w))
            items += [(plain, blocked), (blocked, plain)]
    return len(cly.build(items, engine))


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


def group_scales(w: np.ndarray) -> np.ndarray:
    """One f32 scale per 1xGROUP group of the 2-D array w: absmax/7, and 1 for
    an all-zero group (any positive scale keeps its zeros exact)."""
    absmax = np.abs(w.reshape(w.shape[0], -1, GROUP)).max(axis=2)
    return np.where(absmax > 0, absmax / LEVELS, 1).astype(np.float32)


def timed(primitive, stream, src, dst) -> tuple[float, str]:
    """Median seconds of REPEATS runs of the primitive, and where they were
    measured: the kernel's own start and end on the device, or the wall clock
    around execute and wait when the host runs it."""
    on_device = primitive.impl.startswith("ocl:")  # a kernel's event, with profiling
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        event = primitive.execute(stream, src, dst)
        stream.wait()
        if on_device:
            times.append((event.profile.end - event.profile.start) * 1e-9)
        else:
            times.append(time.perf_counter() - start)
    return statistics.median(times), ("device" if on_device else "wall")


def quantize_roundtrip(engine, stream, name: str, w: np.ndarray) -> str:
    """Quantize w (two or more dims) to s4 and back on the engine; check and
    describe the error and the times."""
    rows, cols, padded = quantized_shape(w)
    view = w.reshape(rows, cols)  # (O, I, K) as (O, I*K): the same bytes in oiw
    notes = [] if w.ndim == 2 else [f"as {rows}x{cols}"]
    if padded != cols:
        view = np.pad(view, ((0, 0), (0, padded - cols)))
        notes.append(f"padded to {padded}")

    scales = group_scales(view)
    f32 = cly.MemoryDesc((rows, padded), "f32", tag="ab")
    s4 = cly.MemoryDesc((rows, padded), "s4", tag="ab")
    # Groups apply to the source side only (oneDNN v3), so quantizing, q = x / s,
    # multiplies by grouped source scales 1/s; decompressing multiplies by s.
    quantize = cly.Reorder(f32, s4, engine=engine, attr=cly.Attr(
        src_scales=cly.Scales((1 / scales).ravel(), **PER_GROUP)))
    dequantize = cly.Reorder(s4, f32, engine=engine, attr=cly.Attr(
        src_scales=cly.Scales(scales.ravel(), **PER_GROUP)))

    src = cly.Memory.from_numpy(f32, engine, view)
    packed = cly.Memory(s4, engine)
    back = cly.Memory(f32, engine)
    t_quantize, where = timed(quantize, stream, src, packed)
    t_dequantize, _ = timed(dequantize, stream, packed, back)

    error = np.abs(back.to_numpy() - view)[:, :cols]
    step = np.repeat(scales, GROUP, axis=1)[:, :cols]
    worst = float((error / step).max())
    assert worst <= 0.5 + SLACK, f"{name}: an error of {worst} steps, above half a step"
    x = view[:, :cols].astype(np.float64)
    rel_rms = np.sqrt((error.astype(np.float64) ** 2).mean() / (x ** 2).mean())
    shape = "x".join(map(str, w.shape))
    return (f"{name:<22} {shape:<12} {error.max():9.2e} {worst:6.3f} {rel_rms:8.2%}"
            f" {t_quantize * 1e6:8.1f} {t_dequantize * 1e6:8.1f}  {where}"
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
    start = time.perf_counter()
    made = build_ahead(engine, weights)
    print(f"{made} primitives' kernels built or loaded ahead, in parallel, in "
          f"{time.perf_counter() - start:.2f} s (cly.build)")
    print(f"\nf32 -> s4 -> f32, one f32 scale (absmax/{LEVELS}) per 1x{GROUP} group; "
          f"times: median of {REPEATS}, in us")
    print(f"{'tensor':<22} {'shape':<12} {'max|err|':>9} {'steps':>6} {'rel RMS':>8}"
          f" {'quantize':>8} {'dequant':>8}")
    for name, w in weights.items():
        print(quantize_roundtrip(engine, stream, name, np.ascontiguousarray(w)))
    if skipped:
        print(f"kept f32 (fewer than 2 dims or not f32): {', '.join(skipped)}")

    print(f"\nconvolution weights into blocked layouts; times: median of {REPEATS}, in us")
    print(f"{'tensor':<22} {'shape':<12} {'layouts':<17} {'size':>11} {'to':>8} {'back':>8}")
    for name, w in weights.items():
        if w.ndim == 3:
            print(block_conv(engine, stream, name, np.ascontiguousarray(w)))


if __name__ == "__main__":
    main()
