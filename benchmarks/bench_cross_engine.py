"""Cross-engine reorder: converting on the device against converting on the host.

For each case and direction (cpu2gpu: a host source into a device
destination; gpu2cpu: back), each way a cross-engine Reorder may run it is
timed in alternation with the device's float4 copy kernel moving the larger
side's bytes: "device" (upload into a staging buffer, then the device
implementation; or the device implementation into staging, then download),
"host" (NumPy converts, then upload; or download, then NumPy) and, for a
same-layout copy, the one transfer clayout picks on its own. GB/s counts the
bytes of src plus dst; "% copy" is the median over the pairs of the case's
GB/s over the copy kernel's (the machine's bandwidth drifts 2x, pairs cancel
that); "device/host" is the device's "% copy" over the host's: above 1, the
device converts faster.
Usage: python benchmarks/bench_cross_engine.py [--repeats N] [--shapes 2x64x56x56,...]
       [--only TEXT (cases whose name holds it)]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from common import CopyKernel, cly, paired, print_table, shapes, start

# name, src type, src tag, dst type, dst tag, src scales ("per-channel": mask 0b10)
CASES = [
    ("f32 nchw->nChw16c", "f32", "nchw", "f32", "nChw16c", None),
    ("f32->s8 per-channel scales", "f32", "nchw", "s8", "nchw", "per-channel"),
    ("s8->f32", "s8", "nchw", "f32", "nchw", None),
    ("f32 nchw copy", "f32", "nchw", "f32", "nchw", None),
]
VARIANTS = ("device", "host", "")  # CLAYOUT_CROSS_CONVERT; "" lets clayout choose


def make(engine, md, rng):
    a = rng.standard_normal(md.dims) * 20
    return cly.Memory.from_numpy(md, engine, a.astype(md.dtype.numpy))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="2x64x56x56,16x64x56x56")
    parser.add_argument("--only", default="", help="run the cases whose name holds this")
    args, engine, stream, _ = start(parser)
    if not engine.is_opencl:
        print("no OpenCL device: nothing to measure")
        return
    host = cly.Engine("host")
    rng = np.random.default_rng(0)
    rows, copies = [], {}
    for dims in shapes(args.shapes):
        for name, sdt, stag, ddt, dtag, scales in CASES:
            if args.only not in name:
                continue
            src_md = cly.MemoryDesc(dims, sdt, tag=stag)
            dst_md = cly.MemoryDesc(dims, ddt, tag=dtag)
            attr = None
            if scales:
                attr = cly.Attr(src_scales=cly.Scales(rng.uniform(0.5, 2, dims[1]), mask=0b10))
            moved = src_md.size + dst_md.size
            nbytes = -(-max(src_md.size, dst_md.size) // 16) * 16
            copy = copies.setdefault(nbytes, CopyKernel(engine, nbytes))
            for direction, (src_engine, dst_engine) in (("cpu2gpu", (host, engine)),
                                                        ("gpu2cpu", (engine, host))):
                src, dst = make(src_engine, src_md, rng), cly.Memory(dst_md, dst_engine)
                shares = {}
                for variant in VARIANTS:
                    if variant == "" and "copy" not in name:
                        continue  # clayout's own choice is one of the two already timed
                    os.environ["CLAYOUT_CROSS_CONVERT"] = variant
                    r = cly.Reorder(src_md, dst_md, src_engine=src_engine,
                                    dst_engine=dst_engine, attr=attr)

                    def run():
                        r.execute(stream, src, dst)
                        stream.wait()

                    t, share = paired(run, copy, moved, args.repeats)
                    shares[variant] = share
                    rows.append({"case": f"{name} {'x'.join(map(str, dims))}",
                                 "direction": direction, "impl": r.impl,
                                 "ms": f"{t * 1e3:.2f}", "GB/s": f"{moved / t / 1e9:.2f}",
                                 "% copy": f"{100 * share:.0f}%"})
                rows[-1]["device/host"] = f"{shares['device'] / shares['host']:.2f}"
    os.environ.pop("CLAYOUT_CROSS_CONVERT", None)
    rates = [rate for c in copies.values() for rate in c.rates]
    print(f"device copy kernel: median {np.median(rates):.2f} GB/s over {len(rates)} copies")
    print_table("cross-engine reorder", rows,
                ["case", "direction", "impl", "ms", "GB/s", "% copy", "device/host"])


if __name__ == "__main__":
    main()
