"""Channel shuffle (ShuffleNet): 6 channels in groups of 3, then back."""
import numpy as np

import clayout as cly

engine = cly.Engine()
dims = (1, 6, 2, 2)
md = cly.MemoryDesc(dims, "f32", tag="nchw")
# Channel c holds the value c everywhere, so the result shows the new order.
values = np.broadcast_to(np.arange(6, dtype=np.float32)[None, :, None, None], dims).copy()
src = cly.Memory.from_numpy(md, engine, values)
dst = cly.Memory(md, engine)
cly.shuffle(src, dst, axis=1, group_size=3)
order = dst.to_numpy()[0, :, 0, 0].astype(int).tolist()
print("channels after shuffle (group 3):", order)
assert order == [0, 3, 1, 4, 2, 5]

back = cly.Memory(md, engine)
cly.shuffle(dst, back, axis=1, group_size=3, backward=True)
print("backward restores:", back.to_numpy()[0, :, 0, 0].astype(int).tolist())
assert np.array_equal(back.to_numpy(), values)

# Shuffle and change layout in one pass: nchw in, nChw16c out.
blocked = cly.Memory(cly.MemoryDesc(dims, "f32", tag="nChw16c"), engine)
cly.shuffle(src, blocked, axis=1, group_size=3)
assert np.array_equal(blocked.to_numpy(), dst.to_numpy())
print("shuffle into nChw16c gives the same tensor")
