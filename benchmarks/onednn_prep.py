"""oneDNN's reorder through its C API (ctypes): the model-preparation
workload of bench_startup.py, every ResNet-50 convolution weight from oihw
f32 into OIhw16i16o on oneDNN's CPU engine, each result read back to NumPy.

oneDNN is the tests' binding (tests/dnnl.py; `make onednn` installs it).
The CPU engine of this build runs on SYCL, whose CPU device is Intel's
OpenCL CPU runtime: OCL_ICD_VENDORS must name it (bench_startup.py sets it).

Run alone, it prints one JSON line (the times in ms; ``process_ms`` from the
launch time bench_startup.py puts in CLAYOUT_BENCH_LAUNCH, when set) after
checking oneDNN's bytes against NumPy's transform for two weights (one with
padding): a wrong wrapper fails loudly.
Usage: OCL_ICD_VENDORS=.venv/etc/OpenCL/clayout/intel python benchmarks/onednn_prep.py
"""
from __future__ import annotations

import json
import os
import sys
import time

from bench_startup import RESNET50_WEIGHTS, oihw16i16o_numpy, random_weights, since_launch_ms

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import dnnl  # noqa: E402 - the tests' binding to oneDNN's C API


def reorder(lib, weight, tag_from: str = "oihw", tag_to: str = "OIhw16i16o"):
    """``weight`` (f32, logical order, ``tag_from``'s bytes) reordered into
    ``tag_to`` on oneDNN's CPU engine: new descriptors, memories and
    primitive, executed, waited for and read back. Returns the destination's
    bytes as a flat float32 array (padding included)."""
    import numpy as np

    src = lib.memory_desc(weight.shape, "f32", tag_from)
    dst = lib.memory_desc(weight.shape, "f32", tag_to)
    prim = lib.reorder(src, dst)
    raw = np.ascontiguousarray(weight, dtype=np.float32).view(np.uint8).reshape(-1)
    src_mem, dst_mem = lib.memory(src, raw), lib.memory(dst)
    prim.execute(prim.bind(src_mem, dst_mem))
    return dst_mem.read().view(np.float32)


# -- the workload ------------------------------------------------------------------

def prepare_resnet50() -> dict:
    """Every ResNet-50 conv weight (random, the values every child of
    bench_startup.py makes) into OIhw16i16o through oneDNN. Returns the times
    in ms: loading oneDNN and its headers with the engine and stream
    ("setup_ms"), the 53 reorders with their transfers ("transform_ms",
    making the random data left out), and from the launch ("process_ms",
    None when not launched by bench_startup.py); checks two results against
    NumPy after the last time is taken."""
    start = time.perf_counter()
    import numpy as np

    try:
        lib = dnnl.onednn()
    except dnnl.Unavailable as e:
        raise SystemExit(str(e))
    setup = time.perf_counter() - start
    transform, kept = 0.0, {}
    for name, weight in random_weights():
        begin = time.perf_counter()
        out = reorder(lib, weight)
        transform += time.perf_counter() - begin
        if name in CHECKED:
            kept[name] = (weight, out)
    process_ms = since_launch_ms()
    for name, (weight, out) in kept.items():
        expected = oihw16i16o_numpy(weight).reshape(-1)
        assert out.tobytes() == expected.tobytes(), \
            f"oneDNN's OIhw16i16o bytes differ from NumPy's for {name} {weight.shape}"
    version = lib.version
    return {"setup_ms": setup * 1e3, "transform_ms": transform * 1e3, "process_ms": process_ms,
            "weights": len(RESNET50_WEIGHTS), "checked": sorted(kept), "onednn": version}


#: The weights checked against NumPy: conv1 (I=3, padded to 16) and the last
#: downsample (no padding).
CHECKED = ("conv1", "layer4.0.downsample.0")


if __name__ == "__main__":
    print(json.dumps(prepare_resnet50()))
