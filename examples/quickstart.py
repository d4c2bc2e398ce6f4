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

# Reorder: change layout and type at once (f32 nchw -> s8 nChw16c, scale 2).
s8_blocked = cly.MemoryDesc(plain.dims, "s8", tag="nChw16c")
src = cly.Memory.from_numpy(plain, engine, values)
quantized = cly.Memory(s8_blocked, engine)
reorder = cly.Reorder(plain, s8_blocked, engine=engine, attr=cly.Attr(src_scales=2.0))
stream = cly.Stream(engine)
reorder.execute(stream, src, quantized)
stream.wait()
assert np.array_equal(quantized.to_numpy(), np.clip(np.rint(values * 2), -128, 127))
print(f"reorder ({reorder.impl}): f32 nchw -> s8 nChw16c, x2, saturating at 127:",
      quantized.to_numpy()[0, :, 0, 0].tolist())

# Shuffle needs a group that divides the channels: 17 is prime, so take 16.
md16 = cly.MemoryDesc((2, 16, 2, 2), "f32", tag="nchw")
x = cly.Memory.from_numpy(md16, engine, values[:, :16])
y = cly.Memory(md16, engine)
cly.shuffle(x, y, axis=1, group_size=4)
print("shuffle, group 4: channel order", (y.to_numpy()[0, :, 0, 0] // 4).astype(int).tolist())
