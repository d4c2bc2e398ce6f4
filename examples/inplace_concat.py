"""Concatenate along channels by reordering each input into a window of one buffer."""
import numpy as np

import clayout as cly

engine = cly.Engine()
a = np.full((1, 16, 2, 2), 1.0, np.float32)
b = np.full((1, 32, 2, 2), 2.0, np.float32)
out_md = cly.MemoryDesc((1, 48, 2, 2), "f32", tag="nChw16c")
out = cly.Memory(out_md, engine)

offset = 0
for part in (a, b):
    channels = part.shape[1]
    window = out_md.submemory(part.shape, (0, offset, 0, 0))  # 16-aligned windows
    src = cly.Memory.from_numpy(cly.MemoryDesc(part.shape, "f32", tag="nchw"), engine, part)
    cly.reorder(src, cly.Memory(window, engine, buffer=out))   # writes only its window
    print(f"reordered a {part.shape} tensor into channels {offset}..{offset + channels - 1}")
    offset += channels

result = out.to_numpy()
assert np.array_equal(result, np.concatenate([a, b], axis=1))
print("channel means of the concatenation:", result.mean(axis=(0, 2, 3))[::8].tolist())
