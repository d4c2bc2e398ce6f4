"""clayout in a minute: describe tensors, move data in and out of layouts."""
import numpy as np

import clayout as cly

engine = cly.Engine()  # PYOPENCL_CTX, else the first OpenCL GPU, else any OpenCL device, else host
print("engine:", engine)

# The same 2x17x2x2 tensor described in three layouts.
plain = cly.MemoryDesc((2, 17, 2, 2), "f32", tag="nchw")
channels_last = cly.MemoryDesc((2, 17, 2, 2), "f32", tag="nhwc")
blocked = cly.MemoryDesc((2, 17, 2, 2), "f32", tag="nChw16c")
for md in (plain, channels_last, blocked):
    print(f"{md!r:42} strides={md.strides} padded={md.padded_dims} size={md.size} B")

# Where logical element (n=0, c=16, h=1, w=0) lives in each layout.
for md in (plain, channels_last, blocked):
    print(f"  {md.tag:8} element (0, 16, 1, 0) at offset {md.offset((0, 16, 1, 0))}")

values = np.arange(2 * 17 * 2 * 2, dtype=np.float32).reshape(plain.dims)
mem = cly.Memory.from_numpy(blocked, engine, values)
assert np.array_equal(mem.to_numpy(), values)
print("nChw16c round trip exact; first 20 physical floats:",
      mem.raw().view(np.float32)[:20].astype(int).tolist())
