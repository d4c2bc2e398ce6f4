"""Reorder nchw -> nChw16c and back: the padding is zeros, the round trip exact."""
import numpy as np

import clayout as cly

engine = cly.Engine()
stream = cly.Stream(engine)
dims = (2, 20, 4, 4)  # 20 channels: the second block of 16 has 12 channels of padding
plain = cly.MemoryDesc(dims, "f32", tag="nchw")
blocked = cly.MemoryDesc(dims, "f32", tag="nChw16c")

values = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
src = cly.Memory.from_numpy(plain, engine, values)
mid = cly.Memory(blocked, engine)
back = cly.Memory(plain, engine)

to_blocked = cly.Reorder(plain, blocked, engine=engine)
to_plain = cly.Reorder(blocked, plain, engine=engine)
print("nchw -> nChw16c runs as", to_blocked.impl)
to_blocked.execute(stream, src, mid)
to_plain.execute(stream, mid, back)
stream.wait()

physical = mid.raw().view(np.float32).reshape(2, 2, 4, 4, 16)  # n, C/16, h, w, 16c
print("padded dims", blocked.padded_dims, "- padding all zero:",
      not physical[:, 1, :, :, 4:].any())
assert not physical[:, 1, :, :, 4:].any()
assert np.array_equal(back.to_numpy(), values)
print("round trip nchw -> nChw16c -> nchw is bit exact")
