"""Quantize f32 to s8 with per-channel scales and a zero point, then back."""
import numpy as np

import clayout as cly

engine = cly.Engine()
dims = (1, 4, 2, 3)
values = np.random.default_rng(1).uniform(-1, 1, dims).astype(np.float32)
values[0, :, 0, 0] = [1.0, -1.0, 0.5, 2.0]  # 2.0 saturates channel 3

# One scale per channel (mask bit 1 = dim 1): q = x / scale + zero_point
zero_point = 3
scales = np.abs(values).max(axis=(0, 2, 3)) / (127 - zero_point)
scales[3] = 1.5 / (127 - zero_point)  # channel 3 clips at 1.5
f32 = cly.MemoryDesc(dims, "f32", tag="nchw")
s8 = cly.MemoryDesc(dims, "s8", tag="nhwc")
src = cly.Memory.from_numpy(f32, engine, values)
q = cly.Memory(s8, engine)
cly.reorder(src, q, attr=cly.Attr(dst_scales=cly.Scales(scales, mask=0b10),
                                  dst_zero_points=zero_point))
print("quantized channel 0, first row:", q.to_numpy()[0, 0, 0].tolist())

# Dequantize: x = scale * (q - zero_point)
back = cly.Memory(f32, engine)
cly.reorder(q, back, attr=cly.Attr(src_scales=cly.Scales(scales, mask=0b10),
                                   src_zero_points=zero_point))
error = np.abs(back.to_numpy() - values)
error[0, 3, 0, 0] = 0  # the saturated value
steps = error / scales[None, :, None, None]
print("largest error after the round trip:", float(steps.max()), "of a quantization step")
assert steps.max() <= 0.5 + 1e-4
print("saturated value 2.0 came back as", float(back.to_numpy()[0, 3, 0, 0]))
