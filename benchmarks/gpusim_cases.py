"""The GPU strategy's kernels on small shapes, one case per row of issue 22's
table, run under Oclgrind with the gpusim plugin by gpusim_check.py.

    CLAYOUT_STRATEGY=gpu OCLGRIND_PLUGINS=.../libgpusim.so oclgrind python gpusim_cases.py OUT_DIR

Before each case the plugin's output (GPUSIM_OUT, read at every kernel's
end) is pointed at OUT_DIR/<n>.jsonl, so each case's launches land in a
file of their own. Nothing is checked here (the suite checks the bytes);
``CASES`` is also what gpusim_check.py reads the thresholds from.
"""
from __future__ import annotations

import os
import sys

import numpy as np

import clayout as cly

F32_LINE, OTHER_LINE = 256, 128  # distinct bytes per warp-level load and store

#: name, (src type, src tag), (dst type, dst tag), dims, attribute, shuffle group, line
CASES = [
    ("f32 nchw->nhwc", ("f32", "nchw"), ("f32", "nhwc"), (2, 64, 16, 16), None, None, F32_LINE),
    ("f32 nhwc->nchw", ("f32", "nhwc"), ("f32", "nchw"), (2, 64, 16, 16), None, None, F32_LINE),
    ("f32 nchw->nChw16c", ("f32", "nchw"), ("f32", "nChw16c"), (2, 64, 16, 16), None, None,
     F32_LINE),
    ("f32 nChw16c->nchw", ("f32", "nChw16c"), ("f32", "nchw"), (2, 64, 16, 16), None, None,
     F32_LINE),
    ("f32->f16", ("f32", "nchw"), ("f16", "nchw"), (2, 64, 16, 16), None, None, F32_LINE),
    ("f16->f32", ("f16", "nchw"), ("f32", "nchw"), (2, 64, 16, 16), None, None, F32_LINE),
    ("f32->bf16", ("f32", "nchw"), ("bf16", "nchw"), (2, 64, 16, 16), None, None, F32_LINE),
    ("bf16->f32", ("bf16", "nchw"), ("f32", "nchw"), (2, 64, 16, 16), None, None, F32_LINE),
    ("f32->s8 scale", ("f32", "nchw"), ("s8", "nchw"), (2, 64, 16, 16), "scale", None, F32_LINE),
    ("u8->f32 scale", ("u8", "nchw"), ("f32", "nchw"), (2, 64, 16, 16), "scale", None, F32_LINE),
    ("f32->f8_e4m3", ("f32", "nchw"), ("f8_e4m3", "nchw"), (2, 64, 16, 16), None, None,
     F32_LINE),
    ("f8_e5m2->f32", ("f8_e5m2", "nchw"), ("f32", "nchw"), (2, 64, 16, 16), None, None,
     F32_LINE),
    ("f32 nchw->s8 nChw16c per-channel", ("f32", "nchw"), ("s8", "nChw16c"), (2, 64, 16, 16),
     "per-channel", None, F32_LINE),
    ("s8 nChw16c->f32 nchw per-channel", ("s8", "nChw16c"), ("f32", "nchw"), (2, 64, 16, 16),
     "per-channel", None, F32_LINE),
    ("bf16 nhwc->nchw", ("bf16", "nhwc"), ("bf16", "nchw"), (2, 64, 16, 16), None, None,
     OTHER_LINE),
    ("s8 nchw->nhwc", ("s8", "nchw"), ("s8", "nhwc"), (2, 128, 16, 16), None, None, OTHER_LINE),
    ("f32 nChw8c->nChw16c", ("f32", "nChw8c"), ("f32", "nChw16c"), (2, 64, 16, 16), None, None,
     OTHER_LINE),
    ("weights oihw->OIhw4i16o4i", ("f32", "oihw"), ("f32", "OIhw4i16o4i"), (64, 64, 3, 3), None,
     None, OTHER_LINE),
    ("weights oihw->OIhw16i16o", ("f32", "oihw"), ("f32", "OIhw16i16o"), (64, 64, 3, 3), None,
     None, OTHER_LINE),
    ("f32->s4 1x32 groups", ("f32", "ab"), ("s4", "ab"), (256, 512), "groups", None, OTHER_LINE),
    ("u4->f16 1x32 groups + zero points", ("u4", "ab"), ("f16", "ab"), (256, 512), "groups",
     None, OTHER_LINE),
    ("shuffle nchw g4", ("f32", "nchw"), ("f32", "nchw"), (2, 64, 16, 16), None, 4, OTHER_LINE),
    ("shuffle nhwc g4", ("f32", "nhwc"), ("f32", "nhwc"), (2, 64, 16, 16), None, 4, OTHER_LINE),
    ("shuffle nChw16c C=272 g4", ("f32", "nChw16c"), ("f32", "nChw16c"), (1, 272, 8, 8), None, 4,
     OTHER_LINE),
    # Issue 36's families. Weights: 3x3 and 1x1 from oihw, hwio and iohw into
    # each blocked format, grouped and depthwise, back to plain, a first layer
    # of 3 input channels (padded to the block), 1-D and 3-D kernels.
    ("weights hwio->OIhw16i16o", ("f32", "hwio"), ("f32", "OIhw16i16o"), (64, 64, 3, 3), None,
     None, OTHER_LINE),
    ("weights iohw->OIhw16i16o", ("f32", "iohw"), ("f32", "OIhw16i16o"), (64, 64, 3, 3), None,
     None, OTHER_LINE),
    ("weights oihw->OIhw16i16o 1x1", ("f32", "oihw"), ("f32", "OIhw16i16o"), (128, 128, 1, 1),
     None, None, OTHER_LINE),
    ("weights oihw->OIhw8i8o", ("f32", "oihw"), ("f32", "OIhw8i8o"), (64, 64, 3, 3), None, None,
     OTHER_LINE),
    ("weights hwio->OIhw8i8o 1x1", ("f32", "hwio"), ("f32", "OIhw8i8o"), (128, 128, 1, 1), None,
     None, OTHER_LINE),
    ("weights hwio->OIhw4i16o4i", ("f32", "hwio"), ("f32", "OIhw4i16o4i"), (64, 64, 3, 3), None,
     None, OTHER_LINE),
    ("weights iohw->OIhw4i16o4i", ("f32", "iohw"), ("f32", "OIhw4i16o4i"), (64, 64, 3, 3), None,
     None, OTHER_LINE),
    ("weights oihw->OIhw4i16o4i 1x1", ("f32", "oihw"), ("f32", "OIhw4i16o4i"), (128, 128, 1, 1),
     None, None, OTHER_LINE),
    ("weights oihw->IOhw16o16i", ("f32", "oihw"), ("f32", "IOhw16o16i"), (64, 64, 3, 3), None,
     None, OTHER_LINE),
    ("weights hwio->IOhw16o16i", ("f32", "hwio"), ("f32", "IOhw16o16i"), (64, 64, 3, 3), None,
     None, OTHER_LINE),
    ("weights first layer oihw->OIhw16i16o i=3", ("f32", "oihw"), ("f32", "OIhw16i16o"),
     (64, 3, 3, 3), None, None, OTHER_LINE),
    ("weights grouped goihw->gOIhw16i16o", ("f32", "goihw"), ("f32", "gOIhw16i16o"),
     (2, 32, 32, 3, 3), None, None, OTHER_LINE),
    ("weights depthwise goihw->Goihw16g", ("f32", "goihw"), ("f32", "Goihw16g"),
     (64, 1, 1, 3, 3), None, None, OTHER_LINE),
    ("weights depthwise goihw->Goihw8g", ("f32", "goihw"), ("f32", "Goihw8g"), (64, 1, 1, 3, 3),
     None, None, OTHER_LINE),
    ("weights 1-D oiw->OIw16i16o", ("f32", "oiw"), ("f32", "OIw16i16o"), (64, 64, 3), None,
     None, OTHER_LINE),
    ("weights 3-D oidhw->OIdhw16i16o", ("f32", "oidhw"), ("f32", "OIdhw16i16o"),
     (32, 32, 3, 3, 3), None, None, OTHER_LINE),
    ("weights back OIhw16i16o->oihw", ("f32", "OIhw16i16o"), ("f32", "oihw"), (64, 64, 3, 3),
     None, None, OTHER_LINE),
    ("weights back OIhw4i16o4i->oihw", ("f32", "OIhw4i16o4i"), ("f32", "oihw"), (64, 64, 3, 3),
     None, None, OTHER_LINE),
    ("weights back OIhw8i8o->hwio", ("f32", "OIhw8i8o"), ("f32", "hwio"), (64, 64, 3, 3), None,
     None, OTHER_LINE),
    ("weights back gOIhw16i16o->goihw", ("f32", "gOIhw16i16o"), ("f32", "goihw"),
     (2, 32, 32, 3, 3), None, None, OTHER_LINE),
    ("weights back Goihw16g->goihw", ("f32", "Goihw16g"), ("f32", "goihw"), (64, 1, 1, 3, 3),
     None, None, OTHER_LINE),
    # Blocked shuffles whose block cuts across the group digits (C/G is no
    # multiple of the block).
    ("shuffle nChw16c C=116 g4", ("f32", "nChw16c"), ("f32", "nChw16c"), (1, 116, 8, 8), None, 4,
     OTHER_LINE),
    ("shuffle nChw8c C=116 g4", ("f32", "nChw8c"), ("f32", "nChw8c"), (1, 116, 8, 8), None, 4,
     OTHER_LINE),
    ("shuffle nChw16c C=58 g2", ("f32", "nChw16c"), ("f32", "nChw16c"), (1, 58, 8, 8), None, 2,
     OTHER_LINE),
    ("shuffle nChw8c C=58 g2", ("f32", "nChw8c"), ("f32", "nChw8c"), (1, 58, 8, 8), None, 2,
     OTHER_LINE),
    ("shuffle nChw8c C=272 g4", ("f32", "nChw8c"), ("f32", "nChw8c"), (1, 272, 8, 8), None, 4,
     OTHER_LINE),
    # Narrow-type transposes: 2-byte, f8 as bytes, 4-bit packed, and grouped
    # quantize / decompress that transpose.
    ("f16 nchw->nhwc", ("f16", "nchw"), ("f16", "nhwc"), (2, 64, 16, 16), None, None, OTHER_LINE),
    ("f16 nhwc->nchw", ("f16", "nhwc"), ("f16", "nchw"), (2, 64, 16, 16), None, None, OTHER_LINE),
    ("bf16 nchw->nhwc", ("bf16", "nchw"), ("bf16", "nhwc"), (2, 64, 16, 16), None, None,
     OTHER_LINE),
    ("f8_e4m3 nchw->nhwc", ("f8_e4m3", "nchw"), ("f8_e4m3", "nhwc"), (2, 128, 16, 16), None,
     None, OTHER_LINE),
    ("s4 ab->ba", ("s4", "ab"), ("s4", "ba"), (256, 512), None, None, OTHER_LINE),
    ("u4 ab->ba", ("u4", "ab"), ("u4", "ba"), (256, 512), None, None, OTHER_LINE),
    ("f32 ab->s4 ba 1x32 groups", ("f32", "ab"), ("s4", "ba"), (256, 512), "groups", None,
     OTHER_LINE),
    ("u4 ba->f16 ab 1x32 groups + zero points", ("u4", "ba"), ("f16", "ab"), (256, 512),
     "groups", None, OTHER_LINE),
    # Quantize's coalesced kernel (issue 38): scales from the data, kind
    # "quantize:SCHEME:GROUP" (groups of GROUP along the last dim).
    ("quantize f32->u4 1x128 asymmetric", ("f32", "ab"), ("u4", "ab"), (64, 1024),
     "quantize:asymmetric:128", None, F32_LINE),
    ("quantize f32->MXFP4", ("f32", "ab"), ("f4_e2m1", "ab"), (64, 1024), "quantize:mx:32",
     None, F32_LINE),
    ("quantize f16->u4 1x128 asymmetric", ("f16", "ab"), ("u4", "ab"), (64, 1024),
     "quantize:asymmetric:128", None, OTHER_LINE),
    ("quantize bf16->MXFP4", ("bf16", "ab"), ("f4_e2m1", "ab"), (64, 1024), "quantize:mx:32",
     None, OTHER_LINE),
]


#: Cases that do not reach their line yet: name -> the figures they must
#: still keep, a regression past them fails. "conflict" is a ceiling (bank
#: conflicts up to that); "ld_bytes", "st_bytes" (bytes per warp-level
#: instruction) and "ld_eff", "st_eff" (sector efficiency) are floors. Only
#: the figures that miss the line are listed. Measured before issue 36's
#: kernel shapes (benchmarks/results/gpusim_before_issue36.json).
KNOWN: dict = {
    # The write phase gathers each float4 from 4 tile rows 288 apart; with
    # 8-wide o blocks the 8-after-64 padding still puts 2 lanes on a bank.
    "weights oihw->OIhw8i8o": {"conflict": 1.34},
    # The box spans the 16-wide padded i block: 13 of 16 read lanes have no
    # source element, and the 27-float rows are read 1 float at a time.
    "weights first layer oihw->OIhw16i16o i=3": {"ld_bytes": 108, "ld_eff": 0.666,
                                                 "conflict": 1.24},
    # Each float4 of 4 taps goes to (or comes from) 4 places 16 or 8 apart in
    # the g-fastest tile; the 1-after-32 padding leaves 2-way conflicts.
    "weights depthwise goihw->Goihw16g": {"conflict": 1.34},
    "weights depthwise goihw->Goihw8g": {"conflict": 1.34},
    "weights back Goihw16g->goihw": {"conflict": 1.34},
    # Blocked shuffles: the source is read 1 float at a time in source order
    # (lanes of the padded channels idle) and each float is scattered to its
    # shuffled channel, C/G apart, in the tile: bank conflicts, and under 128
    # B per load where the padded block leaves lanes idle.
    "shuffle nChw16c C=116 g4": {"ld_bytes": 116, "conflict": 1.51},
    "shuffle nChw8c C=116 g4": {"ld_bytes": 123, "conflict": 1.39},
    "shuffle nChw16c C=58 g2": {"ld_bytes": 116, "ld_eff": 0.937, "conflict": 1.25},
    "shuffle nChw8c C=58 g2": {"ld_bytes": 116, "ld_eff": 0.906, "conflict": 1.33},
    "shuffle nChw8c C=272 g4": {"conflict": 1.49},
    # 4-bit transposes that convert: nibble transposes since issue 36 (data
    # loads and stores in whole sectors; f32->s4 ld was 128 B at efficiency
    # 0.125, st 32 B; u4->f16 ld 13 B at 0.088, st 64 B). What misses is
    # each row's scale and zero point, 4 bytes a lane from rows of groups
    # apart: 0.917 and 0.75 over all loads (floors a little under).
    "f32 ab->s4 ba 1x32 groups": {"ld_eff": 0.916},
    "u4 ba->f16 ab 1x32 groups + zero points": {"ld_eff": 0.749},
}


def varied(cases, seed: int):
    """The same cases on other shapes, drawn with ``seed`` (channels that
    fill no block or warp evenly, 3x3 and 7x7 planes, 1x1 and 5x5 kernels)."""
    rng = np.random.default_rng(seed)
    out = []
    for name, src, dst, dims, kind, group, line in cases:
        if name.startswith("weights"):
            oi = tuple(int(v) for v in rng.choice([(32, 32), (64, 48), (128, 64), (16, 96)]))
            k = int(rng.choice([1, 3, 5]))
            k = 1 if "1x1" in name else k
            if "depthwise" in name or "Goihw" in name:    # g o i h w, o = i = 1
                dims = (int(rng.choice([16, 40, 64, 96])), 1, 1, k, k)
            elif len(dims) == 5 and "goihw" in (src[1] + dst[1]).lower():  # grouped
                dims = (int(rng.choice([2, 3, 4])),) + tuple(v // 2 for v in oi) + (k, k)
            elif len(dims) == 5:                              # 3-D: o i d h w
                dims = tuple(v // 2 for v in oi) + (k, k, k)
            elif len(dims) == 3:                              # 1-D: o i w
                dims = oi + (k,)
            elif "first layer" in name:                       # 3 input channels
                dims = (oi[0], 3, k, k)
            else:
                dims = oi + (k, k)
        elif len(dims) == 4 and "C=" not in name:
            channels = int(rng.choice([16, 32, 48, 64, 96, 128, 256]))
            plane = tuple(int(v) for v in rng.choice([(7, 7), (14, 14), (3, 3), (28, 28), (5, 9)]))
            dims = (int(rng.choice([1, 2, 3])), channels) + plane
        elif len(dims) == 2:
            dims = (int(rng.choice([64, 96, 128])), int(rng.choice([256, 512, 1024])))
        out.append((name, src, dst, dims, kind, group, line))
    return out


def attr_of(kind, src_dt, dims):
    """The case's attribute: scales (and zero points) like the benchmarks'."""
    if kind is None:
        return None
    if kind == "scale":
        return cly.Attr(src_scales=0.5)
    if kind == "per-channel":
        return cly.Attr(src_scales=cly.Scales(np.linspace(0.5, 2, dims[1], dtype=np.float32),
                                              mask=2))
    groups = (1, 32)
    count = dims[0] * dims[1] // 32
    scales = cly.Scales(np.linspace(0.5, 2, count).astype(np.float16), mask=3, groups=groups,
                        data_type="f16")
    if src_dt == "u4":
        zps = cly.ZeroPoints(np.arange(count, dtype=np.int32) % 16, mask=3, groups=groups,
                             data_type="u4")
        return cly.Attr(src_scales=scales, src_zero_points=zps)
    return cly.Attr(src_scales=scales)


def run_case(engine, stream, case, rng):
    name, (sdt, stag), (ddt, dtag), dims, kind, group, _ = case
    src_md = cly.MemoryDesc(dims, sdt, tag=stag)
    dst_md = cly.MemoryDesc(dims, ddt, tag=dtag)
    values = rng.integers(-8, 8, dims).astype(np.float32)
    if sdt in ("u4", "u8"):
        values = np.abs(values)
    src = cly.Memory.from_numpy(src_md, engine, values.astype(src_md.dtype.numpy))
    if kind and kind.startswith("quantize:"):
        _, scheme, length = kind.split(":")
        q = cly.Quantize(src_md, ddt, scheme=scheme, mask=3, groups=(1, int(length)),
                         engine=engine)
        if q.plan is None or not q.plan.lanes or "reorder" in q.impl:
            raise SystemExit(f"{name}: ran as {q.impl}, not the coalesced kernel")
        outs = [cly.Memory(md, engine) for md in (q.dst_md, q.scales_md, q.zero_points_md)
                if md is not None]
        q.execute(stream, src, *outs)
        stream.wait()
        return
    dst = cly.Memory(dst_md, engine)
    if group:
        primitive = cly.Shuffle(src_md, 1, group, engine=engine)
    else:
        primitive = cly.Reorder(src_md, dst_md, attr=attr_of(kind, sdt, dims), engine=engine)
    if primitive.impl != "ocl:generated":
        raise SystemExit(f"{name}: ran as {primitive.impl}, not a generated kernel")
    primitive.execute(stream, src, dst)
    stream.wait()


def main(out_dir):
    if os.environ.get("CLAYOUT_STRATEGY") != "gpu":
        raise SystemExit("run with CLAYOUT_STRATEGY=gpu")
    engine = cly.Engine("opencl")
    stream = cly.Stream(engine)
    rng = np.random.default_rng(0)
    only = os.environ.get("GPUSIM_ONLY", "")
    seed = os.environ.get("GPUSIM_SEED", "")
    cases = varied(CASES, int(seed)) if seed else CASES
    for n, case in enumerate(cases):
        if only not in case[0]:
            continue
        os.environ["GPUSIM_OUT"] = os.path.join(out_dir, f"{n}.jsonl")
        run_case(engine, stream, case, rng)
    print("ran", len(cases), "cases")


if __name__ == "__main__":
    main(sys.argv[1])
