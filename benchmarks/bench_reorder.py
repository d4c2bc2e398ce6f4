"""Reorder throughput: clayout on the default engine against the same device's
copy kernel (timed in alternation, same run), NumPy and, where installed, PyTorch.

GB/s counts bytes read plus bytes written; "% copy" is the median over the
pairs of the case's GB/s over the copy kernel's. Times are medians of --repeats.
Usage: python benchmarks/bench_reorder.py [--repeats N] [--shapes 8x256x56x56]
       [--weights OxIxHxW (one shape for every 4-D weights case)]
       [--f8-shapes 16x256x56x56] [--only TEXT[,TEXT...]] [--narrow]
       [--json PATH (the numbers, for benchmarks/plot.py)]
A second table repeats the narrow-type cases (issue 21) next to their targets.
"""
from __future__ import annotations

import argparse
import math
import re

import ml_dtypes
import numpy as np

from common import (CopyKernel, clayout_run, cly, columns, copy_row, median_seconds, paired,
                    print_table, result_row, shapes, start, write_json)

# name, src type, src tag, dst type, dst tag, attribute ("scale": one src
# scale; "per-channel": src scales with mask 0b10; "groups": f16 src scales
# per 1x32 group, and u4 zero points per group for a u4 source), weight dims
# (None: the activation shapes of --shapes; F8_SHAPE: those of --f8-shapes;
# the 2-D rows and IMAGE_SHAPE's keep their own)
F8_SHAPE = (16, 256, 56, 56)
IMAGE_SHAPE = (8, 3, 224, 224)  # (kept whatever --shapes and --weights say)
CASES = [
    ("nchw->nhwc", "f32", "nchw", "f32", "nhwc", None, None),
    ("nhwc->nchw", "f32", "nhwc", "f32", "nchw", None, None),
    ("nchw->nChw16c", "f32", "nchw", "f32", "nChw16c", None, None),
    ("nChw16c->nchw", "f32", "nChw16c", "f32", "nchw", None, None),
    ("bf16 nhwc->nchw", "bf16", "nhwc", "bf16", "nchw", None, None),
    ("f32->f16", "f32", "nchw", "f16", "nchw", None, None),
    ("f32->bf16", "f32", "nchw", "bf16", "nchw", None, None),
    ("f32->s8 scale", "f32", "nchw", "s8", "nchw", "scale", None),
    ("nchw->s8 nChw16c per-channel", "f32", "nchw", "s8", "nChw16c", "per-channel", None),
    ("s8 nChw16c->nchw per-channel", "s8", "nChw16c", "f32", "nchw", "per-channel", None),
    # An image's 3 channels into the channels-last layout of a first layer.
    ("nchw->nhwc 3 channels", "f32", "nchw", "f32", "nhwc", None, IMAGE_SHAPE),
    ("oihw->OIhw4i16o4i", "f32", "oihw", "f32", "OIhw4i16o4i", None, (256, 256, 3, 3)),
    ("oihw->OIhw16i16o", "f32", "oihw", "f32", "OIhw16i16o", None, (512, 512, 3, 3)),
    # The other weights formats of issue 36: each source and blocked format,
    # grouped and depthwise, back to plain, 1x1, a first layer (3 input
    # channels, padded to a block), 1-D and 3-D kernels, and conversions.
    ("oihw->OIhw8i8o", "f32", "oihw", "f32", "OIhw8i8o", None, (256, 256, 3, 3)),
    ("oihw->IOhw16o16i", "f32", "oihw", "f32", "IOhw16o16i", None, (256, 256, 3, 3)),
    ("iohw->OIhw16i16o", "f32", "iohw", "f32", "OIhw16i16o", None, (256, 256, 3, 3)),
    ("hwio->OIhw16i16o", "f32", "hwio", "f32", "OIhw16i16o", None, (256, 256, 3, 3)),
    ("goihw->gOIhw16i16o", "f32", "goihw", "f32", "gOIhw16i16o", None, (4, 128, 128, 3, 3)),
    ("goihw->Goihw16g depthwise", "f32", "goihw", "f32", "Goihw16g", None, (512, 1, 1, 3, 3)),
    ("goihw->Goihw8g depthwise", "f32", "goihw", "f32", "Goihw8g", None, (512, 1, 1, 3, 3)),
    ("OIhw16i16o->oihw", "f32", "OIhw16i16o", "f32", "oihw", None, (512, 512, 3, 3)),
    ("OIhw4i16o4i->oihw", "f32", "OIhw4i16o4i", "f32", "oihw", None, (256, 256, 3, 3)),
    ("oihw->OIhw16i16o", "f32", "oihw", "f32", "OIhw16i16o", None, (512, 512, 1, 1)),
    ("oihw->OIhw4i16o4i", "f32", "oihw", "f32", "OIhw4i16o4i", None, (512, 512, 1, 1)),
    ("oihw->OIhw16i16o first layer", "f32", "oihw", "f32", "OIhw16i16o", None, (64, 3, 3, 3)),
    ("oiw->OIw16i16o", "f32", "oiw", "f32", "OIw16i16o", None, (256, 256, 3)),
    ("oidhw->OIdhw16i16o", "f32", "oidhw", "f32", "OIdhw16i16o", None, (128, 128, 3, 3, 3)),
    ("oihw->bf16 OIhw16i16o", "f32", "oihw", "bf16", "OIhw16i16o", None, (256, 256, 3, 3)),
    ("oihw->s8 OIhw4i16o4i scale", "f32", "oihw", "s8", "OIhw4i16o4i", "scale",
     (256, 256, 3, 3)),
    # Weight-only quantization of a large language model's matrix.
    ("f32->s4 1x32 groups", "f32", "ab", "s4", "ab", "groups", (4096, 4096)),
    ("u4->f16 1x32 groups", "u4", "ab", "f16", "ab", "groups", (4096, 4096)),
    # 4-bit transposes (issue 36: nibbles paired in registers, not one by one).
    ("s4 ab->ba", "s4", "ab", "s4", "ba", None, (4096, 4096)),
    ("u4 ab->ba", "u4", "ab", "u4", "ba", None, (4096, 4096)),
    # ... and converted on the way: quantize and decompress that transpose.
    ("f32 ab->s4 ba 1x32 groups", "f32", "ab", "s4", "ba", "groups", (4096, 4096)),
    ("u4 ba->f16 ab 1x32 groups", "u4", "ba", "f16", "ab", "groups", (4096, 4096)),
    # 8-bit floats for activations (FP8 inference).
    ("f32->f8_e4m3", "f32", "nchw", "f8_e4m3", "nchw", None, F8_SHAPE),
    ("f8_e5m2->f32", "f8_e5m2", "nchw", "f32", "nchw", None, F8_SHAPE),
]
#: The narrow-type cases of issue 21 and the share of copy each should reach.
NARROW_TARGETS = {
    "u4->f16 1x32 groups": 0.5,
    "f32->s4 1x32 groups": 0.5,
    "f32->f8_e4m3": 0.7,
    "f8_e5m2->f32": 0.7,
    "nchw->s8 nChw16c per-channel": 0.7,
}
GROUP = 32


def blocked(a, block, axis=1):
    """``a`` (n, c, h, w) with ``axis`` split into blocks moved innermost (nChw16c)."""
    n, c, h, w = a.shape
    return np.ascontiguousarray(a.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def _letters(tag):
    """The logical order of ``tag``'s dims: oneDNN's g o i d h w for
    weights, n c d h w for activations (those present)."""
    plain = re.match(r"[A-Za-z]+", tag).group(0).lower()
    order = "goidhw" if set(plain) & set("oi") else "ncdhw"
    return [c for c in order if c in plain]


def _blocks(tag):
    """'OIhw4i16o4i' -> [(4, 'i'), (16, 'o'), (4, 'i')], outermost first."""
    return [(int(n), c) for n, c in re.findall(r"(\d+)([a-z])", tag)]


def _split(logical, tag):
    """``logical`` (any strides) as a view whose C order is ``tag``'s bytes:
    each blocked dim padded to its block (a copy, only then) and split."""
    letters, blocks = _letters(tag), _blocks(tag)
    pads = [(0, -logical.shape[k] % math.prod(n for n, b in blocks if b == c))
            for k, c in enumerate(letters)]
    if any(p for _, p in pads):
        logical = np.pad(logical, pads)
    shape, axes = [], []
    for k, c in enumerate(letters):
        sizes = [n for n, b in blocks if b == c]
        shape.append(logical.shape[k] // math.prod(sizes))
        axes.append((c, -1))
        for j, n in enumerate(sizes):
            shape.append(n)
            axes.append((c, j))
    order = [axes.index((c.lower(), -1)) for c in re.match(r"[A-Za-z]+", tag).group(0)]
    seen = {}
    for _, c in blocks:
        seen[c] = seen.get(c, -1) + 1
        order.append(axes.index((c, seen[c])))
    return logical.reshape(shape).transpose(order)


def _plain_logical(physical, tag):
    """A plain layout's bytes (C order ``tag``) as the logical view."""
    return physical.transpose([tag.index(c) for c in _letters(tag)])


def numpy_layout(a, stag, ddt, dtag, scale=None):
    """The same work in NumPy for a weights row between a plain layout and
    a blocked one (either way), from ``a`` (logical) stored as ``stag``:
    one copy through strided views, then the conversion (a scale: s8)."""
    out_type = cly.MemoryDesc((1,), ddt).dtype.numpy
    if _blocks(stag):  # blocked -> plain: write the source into a view of the destination
        source = np.ascontiguousarray(_split(a, stag))
        out = np.empty([a.shape[_letters(dtag).index(c)] for c in dtag], out_type)
        view = _split(_plain_logical(out, dtag), stag)

        def back():
            view[...] = source
            return out

        return back
    source = np.ascontiguousarray(a.transpose([_letters(stag).index(c) for c in stag]))
    if scale is not None:
        return lambda: np.clip(np.rint(np.ascontiguousarray(_split(
            _plain_logical(source, stag), dtag)) * scale), -128, 127).astype(out_type)
    return lambda: np.ascontiguousarray(_split(_plain_logical(source, stag), dtag)).astype(
        out_type, copy=False)


#: The rows numpy_version writes out by hand (the others: numpy_layout).
HAND_WRITTEN = {"nchw->nhwc", "nhwc->nchw", "nchw->nChw16c", "nChw16c->nchw", "bf16 nhwc->nchw",
                "f32->f16", "f32->bf16", "f32->f8_e4m3", "f8_e5m2->f32", "f32->s8 scale",
                "nchw->s8 nChw16c per-channel", "s8 nChw16c->nchw per-channel",
                "oihw->OIhw4i16o4i", "oihw->OIhw16i16o"}


def numpy_version(name, a, scales, zero_points=None):
    """The same work in NumPy, on a logical (n, c, h, w) / (o, i, h, w) array
    (a 2-D one for the grouped cases; 4-bit results one per byte)."""
    if a.ndim == 2 and "ab->ba" in name:  # 4-bit transposes: one element per byte
        return lambda: np.ascontiguousarray(a.T)
    if a.ndim == 2:
        per_element = np.repeat(scales.reshape(a.shape[0], -1), GROUP, axis=1)
        # (the transposing cases: the same work, then a transposed copy)
        order = (lambda x: np.ascontiguousarray(x.T)) if " ba" in name else (lambda x: x)
        if name.startswith("f32"):
            return lambda: order(np.clip(np.rint(a * per_element), -8, 7).astype(np.int8))
        zp = np.repeat(zero_points.reshape(a.shape[0], -1), GROUP, axis=1)
        return lambda: order(((a.astype(np.float32) - zp) * per_element).astype(np.float16))
    o, i, h, w = a.shape
    return {
        "nchw->nhwc": lambda: np.ascontiguousarray(a.transpose(0, 2, 3, 1)),
        "nhwc->nchw": lambda: np.ascontiguousarray(a.transpose(0, 2, 3, 1)),
        "nchw->nChw16c": lambda: blocked(a, 16),
        "nChw16c->nchw": lambda: blocked(a, 16),
        "bf16 nhwc->nchw": lambda: np.ascontiguousarray(a.transpose(0, 2, 3, 1)),
        "f32->f16": lambda: a.astype(np.float16),
        "f32->bf16": lambda: a.astype(ml_dtypes.bfloat16),
        "f32->f8_e4m3": lambda: a.astype(ml_dtypes.float8_e4m3fn),
        "f8_e5m2->f32": lambda: a.astype(np.float32),
        "f32->s8 scale": lambda: np.clip(np.rint(a * scales[0]), -128, 127).astype(np.int8),
        "nchw->s8 nChw16c per-channel": lambda: blocked(np.clip(np.rint(
            a * scales[None, :, None, None]), -128, 127).astype(np.int8), 16),
        "s8 nChw16c->nchw per-channel": lambda: blocked(a, 16).astype(np.float32),
        "oihw->OIhw4i16o4i": lambda: np.ascontiguousarray(
            a.reshape(o // 16, 16, i // 16, 4, 4, h, w).transpose(0, 2, 5, 6, 3, 1, 4)),
        "oihw->OIhw16i16o": lambda: np.ascontiguousarray(
            a.reshape(o // 16, 16, i // 16, 16, h, w).transpose(0, 2, 4, 5, 3, 1)),
    }[name]


def torch_version(torch, name, a, scales):
    """The same work in PyTorch (None for the rows it is not written for)."""
    if name not in HAND_WRITTEN:
        return None
    t = torch.from_numpy(a)
    o, i, h, w = a.shape
    s = torch.from_numpy(scales)
    return {
        "nchw->nhwc": lambda: t.permute(0, 2, 3, 1).contiguous(),
        "nhwc->nchw": lambda: t.permute(0, 2, 3, 1).contiguous(),
        "nchw->nChw16c": lambda: t.reshape(o, i // 16, 16, h, w).permute(0, 1, 3, 4, 2).contiguous(),
        "nChw16c->nchw": lambda: t.reshape(o, i // 16, 16, h, w).permute(0, 1, 3, 4, 2).contiguous(),
        "bf16 nhwc->nchw": lambda: t.permute(0, 2, 3, 1).contiguous(),
        "f32->f16": lambda: t.to(torch.float16),
        "f32->bf16": lambda: t.to(torch.bfloat16),
        "f32->s8 scale": lambda: torch.clamp(torch.round(t * scales[0]), -128, 127).to(torch.int8),
        "nchw->s8 nChw16c per-channel": lambda: torch.clamp(torch.round(
            t * s[None, :, None, None]), -128, 127).to(torch.int8).reshape(
                o, i // 16, 16, h, w).permute(0, 1, 3, 4, 2).contiguous(),
        "s8 nChw16c->nchw per-channel": lambda: t.reshape(o, i // 16, 16, h, w).permute(
            0, 1, 3, 4, 2).contiguous().to(torch.float32),
        "oihw->OIhw4i16o4i": lambda: t.reshape(o // 16, 16, i // 16, 4, 4, h, w).permute(
            0, 2, 5, 6, 3, 1, 4).contiguous(),
        "oihw->OIhw16i16o": lambda: t.reshape(o // 16, 16, i // 16, 16, h, w).permute(
            0, 2, 4, 5, 3, 1).contiguous(),
    }.get(name)


def source_values(dims, sdt, rng):
    if sdt in ("s4", "u4"):
        dt = cly.MemoryDesc(dims, sdt).dtype
        return rng.integers(dt.min, dt.max + 1, dims).astype(dt.numpy)
    a = rng.standard_normal(dims, dtype=np.float32) * 64
    if sdt == "s8":
        return np.clip(np.rint(a), -128, 127).astype(np.int8)
    return a.astype(cly.MemoryDesc(dims, sdt).dtype.numpy)


def run_case(case, dims, engine, stream, copies, torch, repeats):
    name, sdt, stag, ddt, dtag, attr_kind, _ = case
    rng = np.random.default_rng(0)
    a = source_values(dims, sdt, rng)
    scales = (rng.uniform(0.5, 2.0, dims[1]) if attr_kind == "per-channel"
              else np.array([0.5])).astype(np.float32)
    attr = zero_points = None
    if attr_kind == "groups":
        groups = dims[0] * dims[1] // GROUP
        scales = rng.uniform(0.01, 0.1, groups).astype(np.float16).astype(np.float32)
        scale = cly.Scales(scales, mask=0b11, groups=(1, GROUP), data_type="f16")
        if sdt == "u4":
            zero_points = rng.integers(0, 16, groups).astype(np.int32)
            attr = cly.Attr(src_scales=scale, src_zero_points=cly.ZeroPoints(
                zero_points, mask=0b11, groups=(1, GROUP), data_type="u4"))
        else:
            attr = cly.Attr(src_scales=scale)
    elif attr_kind == "scale":
        attr = cly.Attr(src_scales=float(scales[0]))
    elif attr_kind == "per-channel":
        attr = cly.Attr(src_scales=cly.Scales(scales, mask=0b10))
    src_md = cly.MemoryDesc(dims, sdt, tag=stag)
    dst_md = cly.MemoryDesc(dims, ddt, tag=dtag)
    prim = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
    src = cly.Memory.from_numpy(src_md, engine, a)
    dst = cly.Memory(dst_md, engine)
    moved = src_md.size + dst_md.size
    copy = None
    if engine.is_opencl:  # a copy moving as many bytes: small cases pay the same launch cost
        nbytes = max(16, moved // 32 * 16)
        copy = copies.setdefault(nbytes, CopyKernel(engine, nbytes))
    t, share = paired(clayout_run(prim, stream, src, dst), copy, moved, repeats)
    if name in HAND_WRITTEN or a.ndim == 2:
        work = numpy_version(name, a, scales, zero_points)
    else:
        work = numpy_layout(a, stag, ddt, dtag, scales[0] if attr_kind == "scale" else None)
    t_np = median_seconds(work, repeats)
    t_pt = None
    # torch.from_numpy takes no ml_dtypes array
    if torch and sdt in ("f32", "s8") and ddt in ("f32", "s8", "f16", "bf16") and a.ndim == 4:
        work = torch_version(torch, name, a, scales)
        t_pt = median_seconds(work, repeats) if work else None
    return result_row(f"{name} {'x'.join(map(str, dims))}", prim.impl, t, moved, share,
                      t_np, t_pt)


def narrow_rows(rows):
    """The rows of the narrow-type cases, each with its target share and
    whether the median of pairs reached it (the target also goes to --json)."""
    out = []
    for row in rows:
        target = next((t for name, t in NARROW_TARGETS.items()
                       if row["case"].startswith(name + " ")), None)
        if target is None or "data" not in row:
            continue
        row["data"]["target_share"] = target
        share = row["data"]["share_of_copy"]
        out.append({**row, "target": f"{100 * target:.0f}%",
                    "met": "-" if share is None else ("yes" if share >= target else "no")})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="8x256x56x56")
    parser.add_argument("--weights", default=None)
    parser.add_argument("--f8-shapes", default="16x256x56x56",
                        help="shapes of the 8-bit float cases")
    parser.add_argument("--only", default=None,
                        help="run the cases whose name holds TEXT (several: TEXT,TEXT)")
    parser.add_argument("--narrow", action="store_true",
                        help="run only the narrow-type cases of issue 21")
    args, engine, stream, torch = start(parser)
    activations = shapes(args.shapes)
    copies = {}
    rows = []
    for case in CASES:
        if args.only and not any(text in case[0] for text in args.only.split(",")):
            continue
        if args.narrow and case[0] not in NARROW_TARGETS:
            continue
        weights = case[-1]
        if weights == F8_SHAPE:
            cases = shapes(args.f8_shapes)
        elif weights is None:
            cases = activations
        elif weights == IMAGE_SHAPE:
            cases = [weights]
        else:
            cases = [shapes(args.weights)[0] if args.weights and len(weights) == 4 else weights]
        for dims in cases:
            rows.append(run_case(case, dims, engine, stream, copies, torch, args.repeats))
    for nbytes, copy in sorted(copies.items()):
        row = copy_row(copy)
        row["case"] += f" {2 * nbytes / 1e6:.1f} MB moved"
        rows.insert(0, row)
    print_table("reorder, each case against a copy kernel moving as many bytes", rows,
                columns(torch is not None))
    narrow = narrow_rows(rows)
    if narrow:
        # The targets are for PoCL's own (CPU) strategy.
        strategy = engine.profile.strategy if engine.is_opencl else "host"
        print_table(f"narrow types (issue 21), {strategy} strategy: share of copy against the "
                    "target", narrow, ["case", "impl", "GB/s", "% copy", "target", "met"])
    write_json(args.json, "reorder", engine, rows, copies.values())


if __name__ == "__main__":
    main()
