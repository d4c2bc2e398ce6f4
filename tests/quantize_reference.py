"""An independent reference of dynamic quantization, written from the
formulas (docs/quantization.md, "Scales computed from the data") and the
OCP Microscaling specification v1.0, not from clayout's code: one group at
a time, found by slicing the logical array, f32 arithmetic by NumPy scalars.
"""
import itertools

import ml_dtypes
import numpy as np

F32 = np.float32
INT = {"s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15)}
FMAX = {"f8_e4m3": 448.0, "f8_e5m2": 57344.0, "f4_e2m1": 6.0}
ML = {"f8_e4m3": ml_dtypes.float8_e4m3fn, "f8_e5m2": ml_dtypes.float8_e5m2,
      "f4_e2m1": ml_dtypes.float4_e2m1fn, "bf16": ml_dtypes.bfloat16, "f16": np.float16,
      "f32": np.float32}
#: OCP MX v1.0, section 6.3: emax of each element type (MXINT8: the largest
#: exponent is 0, its implicit scale 2^-6).
EMAX = {"f8_e4m3": 8, "f8_e5m2": 15, "f4_e2m1": 2, "s8": 0}
SCALE_MAX = {"f32": float(np.finfo(np.float32).max), "f16": 65504.0,
             "bf16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)}


def group_slices(dims, mask, groups):
    """Yield (scale index in C order over the masked dims, slices of the group)."""
    ndims = len(dims)
    size = [1] * ndims
    if groups is not None:
        size[ndims - 2:] = groups
    ranges = []
    for d in range(ndims):
        if mask >> d & 1:
            ranges.append([slice(i * size[d], (i + 1) * size[d]) for i in range(dims[d] // size[d])])
        else:
            ranges.append([slice(0, dims[d])])
    for n, box in enumerate(itertools.product(*ranges)):
        yield n, box


def _round_scale(s, scale_dt):
    """An f32 scale rounded up (toward +inf) to scale_dt, saturated, 0 -> 1; as f32:
    the smallest value of the type at or above s."""
    if scale_dt == "f32":
        r = float(s)
    else:
        info = ml_dtypes.finfo(ML[scale_dt])
        # the type's values near s: s's binade step, from the type's mantissa bits
        e = max(int(np.floor(np.log2(float(s)))) if s > 0 else int(info.minexp),
                int(info.minexp))
        step = 2.0 ** (e - int(info.nmant))
        r = np.ceil(float(s) / step) * step
        if r > float(info.max):
            r = np.inf
    if np.isinf(r):
        r = SCALE_MAX[scale_dt]
    return F32(1.0) if r == 0 else F32(r)


def _to_float_type(v, dt):
    top = F32(FMAX[dt])
    v = np.where(np.isnan(v), v, np.minimum(np.maximum(v, -top), top))
    if dt == "f4_e2m1":
        v = np.where(np.isnan(v), F32(0), v)
    return v.astype(ML[dt])


def reference(x, dst, scheme, mask, groups, scale_dt="f32", zp_dt=None):
    """(values, scales (flat, as f32 or e8m0 codes), zero points (flat) or None)."""
    x = np.asarray(x, F32)
    count = sum(1 for _ in group_slices(x.shape, mask, groups))
    scales = np.zeros(count, F32)
    codes = np.zeros(count, np.uint8)
    zps = np.zeros(count, np.int64) if scheme == "asymmetric" else None
    out = np.zeros(x.shape, F32)
    for n, box in group_slices(x.shape, mask, groups):
        g = x[box]
        finite = g[~np.isnan(g)]
        if scheme == "mx":
            amax = F32(np.max(np.abs(finite))) if finite.size else F32(0)
            # floor(log2(amax)) for a normal f32; subnormals and 0 sit below -126
            e = int(np.floor(np.log2(np.float64(amax)))) if amax >= 2.0**-126 else -127
            shared = min(max(e - EMAX[dst], -127), 127)
            if dst == "s8":  # stored as the direct scale 2^(shared - 6), clamped
                shared = min(max(e - 6, -127), 127)
            codes[n] = shared + 127
            scales[n] = F32(2.0 ** shared)
            v = (g.astype(np.float64) / 2.0 ** shared).astype(F32)
            if dst == "s8":
                q = np.clip(np.rint(v), -127, 127)
                out[box] = np.where(np.isnan(q), 0, q)
            else:
                out[box] = _to_float_type(v, dst).astype(F32)
            continue
        if scheme == "asymmetric":
            qmin, qmax = INT[dst]
            lo = F32(min(np.min(finite), 0)) if finite.size else F32(0)
            hi = F32(max(np.max(finite), 0)) if finite.size else F32(0)
            s = F32(F32(hi - lo) / F32(qmax - qmin))
        else:
            amax = F32(np.max(np.abs(finite))) if finite.size else F32(0)
            s = F32(amax / F32({"s8": 127, "s4": 7}.get(dst) or FMAX[dst]))
        s = _round_scale(s, scale_dt)
        scales[n] = s
        v = (g / s).astype(F32)
        if dst in FMAX:
            out[box] = _to_float_type(v, dst).astype(F32)
            continue
        qmin, qmax = INT[dst]
        zp = 0
        if scheme == "asymmetric":
            zp = int(np.clip(np.rint(F32(F32(qmin) - F32(lo / s))), qmin, qmax))
            zps[n] = zp
        q = np.rint(v) + zp
        out[box] = np.where(np.isnan(q), zp, np.clip(q, qmin, qmax))
    return out, (codes if scheme == "mx" else scales), zps
