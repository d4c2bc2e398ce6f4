"""Quantize: scales (and zero points) computed from the data.

Values, scales and zero points are compared bit for bit with
tests/quantize_reference.py (written from the formulas and the OCP MX
specification), then dequantized by the grouped decompression Reorder and
checked within half a step (the element type's half ulp for floats)."""
import numpy as np
import pytest

import clayout as cly
from quantize_reference import reference

# (dst, scheme, mask, groups, scale type, zero-point type, dims)
CASES = [
    ("s8", "symmetric", 0, None, "f32", None, (8, 256)),
    ("u4", "asymmetric", 0, None, "f32", None, (8, 256)),
    ("f8_e5m2", "symmetric", 0, None, "f32", None, (8, 256)),
    ("s4", "symmetric", 1, None, "f32", None, (8, 256)),
    ("u8", "asymmetric", 1, None, "bf16", None, (8, 256)),
    ("f8_e4m3", "symmetric", 1, None, "f16", None, (8, 256)),
    ("f4_e2m1", "symmetric", 1, None, "f32", None, (8, 256)),
    ("s8", "asymmetric", 3, (1, 32), "f32", "s32", (8, 256)),
    ("u4", "asymmetric", 3, (1, 32), "f16", None, (8, 256)),
    ("s4", "asymmetric", 3, (1, 32), "f32", "s8", (8, 256)),
    ("u4", "asymmetric", 3, (1, 128), "f32", None, (8, 256)),
    ("s8", "symmetric", 3, (1, 128), "f32", None, (8, 256)),
    ("f4_e2m1", "symmetric", 3, (1, 128), "bf16", None, (8, 256)),
    ("u8", "asymmetric", 3, (4, 32), "f32", None, (8, 256)),
    ("f8_e4m3", "symmetric", 3, (4, 32), "f32", None, (8, 256)),
    ("f8_e4m3", "mx", 3, (1, 32), "e8m0", None, (8, 256)),
    ("f8_e5m2", "mx", 3, (1, 32), "e8m0", None, (8, 256)),
    ("f4_e2m1", "mx", 3, (1, 32), "e8m0", None, (8, 256)),
    ("s8", "mx", 3, (1, 32), "e8m0", None, (8, 256)),
    # long groups split in chunks on the device (two launches)
    ("s8", "symmetric", 0, None, "f32", None, (16, 16384)),
    ("u4", "asymmetric", 1, None, "f16", None, (7, 16384)),
    # groups that are no run of consecutive elements: reorders around the
    # kernel on a device (clayout/quantize_route.py)
    ("s8", "asymmetric", 2, None, "f32", None, (4, 6, 32)),
]
IDS = [f"{c[0]}-{c[1]}-m{c[2]}-g{c[3] and 'x'.join(map(str, c[3]))}-{c[4]}-{c[5]}-"
       f"{'x'.join(map(str, c[6]))}" for c in CASES]
#: Float elements: (mantissa bits, smallest normal exponent).
FLOATS = {"f8_e4m3": (3, -6), "f8_e5m2": (2, -14), "f4_e2m1": (1, 0)}


def _data(dims, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(dims) * rng.uniform(0.01, 10, dims[:-1] + (1,))).astype(np.float32)
    flat = x.reshape(-1, dims[-1])
    flat[1, :] = 0  # an all-zero row (group)
    flat[2, 40:80] = np.abs(flat[2, 40:80])  # groups of one sign only
    flat[3, 5] = np.nan
    flat[0, 17] = 2.0 ** -130  # an f32 subnormal among normal values
    return x


def _run(q, engine, x):
    stream = cly.Stream(engine)
    src = cly.Memory.from_numpy(q.src_md, engine, x)
    dst, scales = cly.Memory(q.dst_md, engine), cly.Memory(q.scales_md, engine)
    zps = None if q.zero_points_md is None else cly.Memory(q.zero_points_md, engine)
    event = q.execute(stream, src, dst, scales, zps)
    assert event is not None
    stream.wait()
    return dst, scales, zps


def _check(q, engine, case, x):
    dst_dt, scheme, mask, groups, scale_dt, zp_dt, dims = case
    dst, scales, zps = _run(q, engine, x)
    values, ref_scales, ref_zps = reference(x, dst_dt, scheme, mask, groups, scale_dt, zp_dt)
    np.testing.assert_array_equal(dst.to_numpy().astype(np.float32), values)
    if scheme == "mx":
        np.testing.assert_array_equal(scales.raw()[:ref_scales.size], ref_scales)
    else:
        np.testing.assert_array_equal(scales.to_numpy().astype(np.float32).ravel(), ref_scales)
    if ref_zps is None:
        assert zps is None
    else:
        np.testing.assert_array_equal(zps.to_numpy().astype(np.int64).ravel(), ref_zps)
    return dst, scales, zps


def _dequantize(q, engine, dst, scales, zps):
    """The grouped decompression Reorder of the three memories, as f32."""
    stream = cly.Stream(engine)
    sdt = q.scales_md.data_type  # e8m0 too: Scales take the MX scales as they are
    zp_attr = None if zps is None else cly.ZeroPoints(
        mask=q.mask, groups=q.groups, data_type=q.zero_points_md.data_type)
    attr = cly.Attr(src_scales=cly.Scales(mask=q.mask, groups=q.groups, data_type=sdt),
                    src_zero_points=zp_attr)
    f32 = cly.MemoryDesc(q.dst_md.dims, "f32")
    r = cly.Reorder(q.dst_md, f32, engine=engine, attr=attr)
    out = cly.Memory(f32, engine)
    given = {"src_scales": scales}
    if zps is not None:
        given["src_zero_points"] = zps
    r.execute(stream, dst, out, **given)
    stream.wait()
    return out.to_numpy(), scales.to_numpy().astype(np.float64)


def _steps(q, x, scales):
    """Each element's allowed error: half a step (the element type's half
    ulp at x / s for floats; a whole step for MXINT8's saturated 2^-6 grid)."""
    from quantize_reference import group_slices
    s = np.zeros(x.shape)
    for n, box in group_slices(x.shape, q.mask, q.groups):
        s[box] = scales.ravel()[n]
    dt = q.dst_md.data_type
    if dt in FLOATS:
        m, emin = FLOATS[dt]
        v = np.abs(x / s)
        e = np.floor(np.log2(np.where(v > 0, v, 1.0)))
        half = 0.5 * 2.0 ** (np.maximum(e, emin) - m) * s
        if q.scheme != "mx":
            return half
        # MX: a block's largest values may pass the element's max normal
        # (up to 2^(emax + 1)): the spec saturates them there.
        top = {"f8_e4m3": 448.0, "f8_e5m2": 57344.0, "f4_e2m1": 6.0}[dt]
        return np.where(v > top, (v - top) * s, 0) + half
    return s * (1.0 if q.scheme == "mx" else 0.5)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_quantize_matches_reference_and_round_trips(engine, case):
    dst_dt, scheme, mask, groups, scale_dt, zp_dt, dims = case
    q = cly.Quantize(cly.MemoryDesc(dims, "f32"), dst_dt, scheme=scheme, mask=mask,
                     groups=groups, scale_data_type=scale_dt, zero_point_data_type=zp_dt,
                     engine=engine)
    if engine.is_device:
        assert "quantize" in q.impl and not q.impl.startswith("host"), q.impl
    x = _data(dims)
    dst, scales, zps = _check(q, engine, case, x)
    deq, s = _dequantize(q, engine, dst, scales, zps)
    ok = ~np.isnan(x)
    limit = _steps(q, x, s) * (1 + 2.0 ** -20) + np.abs(x) * 2.0 ** -22
    err = np.abs(deq.astype(np.float64) - x)
    assert (err[ok] <= limit[ok]).all(), (err - limit)[ok].max()


#: The GPU strategy's coalesced kernel (work-groups of 256, a group's
#: statistics met in local memory) past the cases' shapes: tails (a last
#: work-group part full, an odd number of 4-bit zero points), groups of 4
#: and of 1024, several work-groups.
GPU_CASES = CASES + [
    ("s4", "symmetric", 3, (1, 8), "f32", None, (4, 1000)),
    ("u4", "asymmetric", 3, (1, 32), "f32", "u4", (5, 96)),
    ("s8", "asymmetric", 3, (1, 4), "bf16", "s8", (6, 20)),
    ("u8", "asymmetric", 1, None, "f16", "s32", (5, 1024)),
    ("f4_e2m1", "mx", 3, (1, 32), "e8m0", None, (9, 1024)),
    ("f8_e5m2", "symmetric", 3, (1, 64), "f32", None, (33, 512)),
]


@pytest.mark.parametrize("case", GPU_CASES, ids=IDS + [
    f"{c[0]}-{c[1]}-g{c[3] and 'x'.join(map(str, c[3]))}-{'x'.join(map(str, c[6]))}"
    for c in GPU_CASES[len(CASES):]])
def test_quantize_gpu_strategy(gpu_engine, case):
    dst_dt, scheme, mask, groups, scale_dt, zp_dt, dims = case
    q = cly.Quantize(cly.MemoryDesc(dims, "f32"), dst_dt, scheme=scheme, mask=mask,
                     groups=groups, scale_data_type=scale_dt, zero_point_data_type=zp_dt,
                     engine=gpu_engine)
    length = q.spec.group_length
    assert q.runs_kernel, q.impl  # the kernel, with reorders around it where needed
    if length % 4 == 0 and 1024 % length == 0:
        assert q.plan.lanes == 256, q.impl  # the coalesced kernel served
    _check(q, gpu_engine, case, _data(dims, seed=1))


@pytest.mark.parametrize("src_dt, case", [
    ("f16", ("u4", "asymmetric", 3, (1, 32), "f32", "u4", (5, 96))),     # a part-full work-group
    ("bf16", ("f4_e2m1", "mx", 3, (1, 32), "e8m0", None, (9, 1024))),
    ("f16", ("s8", "symmetric", 1, None, "f16", None, (6, 1024))),
], ids=["f16-u4-tail", "bf16-mxfp4", "f16-s8-rows"])
def test_quantize_gpu_strategy_reads_f16_and_bf16(gpu_engine, src_dt, case):
    """The coalesced kernel reads an f16 or bf16 source itself (a warp's
    load 256 consecutive bytes), no reorder first; the reference's bits."""
    dst_dt, scheme, mask, groups, scale_dt, zp_dt, dims = case
    md = cly.MemoryDesc(dims, src_dt)
    q = cly.Quantize(md, dst_dt, scheme=scheme, mask=mask, groups=groups,
                     scale_data_type=scale_dt, zero_point_data_type=zp_dt, engine=gpu_engine)
    assert q.plan.lanes == 256 and q.plan.src_dt == src_dt and "reorder" not in q.impl, q.impl
    _check(q, gpu_engine, case, _data(dims, seed=7).astype(md.dtype.numpy))


def test_quantize_gpu_strategy_rounds_near_halves_like_the_division(gpu_engine):
    case = ("u4", "asymmetric", 3, (1, 128), "f32", None, (64, 128))
    q = cly.Quantize(cly.MemoryDesc((64, 128), "f32"), "u4", scheme="asymmetric", mask=3,
                     groups=(1, 128), engine=gpu_engine)
    assert q.plan.lanes
    _check(q, gpu_engine, case, _near_halves((64, 128), True))


def _near_halves(dims, asymmetric, seed=3):
    """Groups (rows) whose elements lie a few ulps around halves of their
    scale, chosen where x * f32(1 / s) and the division x / s round to
    different integers: a kernel rounding the product would fail them."""
    rng = np.random.default_rng(seed)
    f32 = np.float32
    rows, length = dims
    x = np.zeros(dims, f32)
    found = 0
    for row in range(rows):
        c = f32(2.0 ** rng.uniform(-20, 20)) * f32(rng.uniform(1, 2))
        if asymmetric:  # lo = -7c, hi = 8c: s = (hi - lo) / 15
            lo, hi = -f32(7) * c, f32(8) * c
            s, top = (hi - lo) / f32(15), 7
        else:  # absmax 127c: s = absmax / 127
            lo, hi = -f32(127) * c, f32(127) * c
            s, top = hi / f32(127), 126
        r = f32(1) / s
        k = rng.integers(-top, top, 4096) + 0.5
        cand = (k * s).astype(f32)
        steps = rng.integers(-6, 7, 4096)
        for _ in range(6):
            cand = np.where(steps > 0, np.nextafter(cand, f32(np.inf)),
                            np.where(steps < 0, np.nextafter(cand, f32(-np.inf)), cand))
            steps = steps - np.sign(steps)
        cand = cand[(cand > lo) & (cand < hi)]
        differ = cand[np.rint(cand * r) != np.rint(cand / s)]
        found += min(differ.size, length - 2)
        pick = np.concatenate([differ, cand])[:length - 2]
        x[row] = np.concatenate([[lo, hi], pick]).astype(f32)
    assert found >= rows  # the data does test the rounding
    return x


@pytest.mark.parametrize("case", [("u4", "asymmetric", 1, None, "f32", None, (64, 128)),
                                  ("s8", "symmetric", 1, None, "f32", None, (64, 128))],
                         ids=["u4-asymmetric-rows", "s8-symmetric-rows"])
def test_quantize_rounds_near_halves_like_the_division(engine, case):
    dst_dt, scheme, mask, groups, scale_dt, zp_dt, dims = case
    q = cly.Quantize(cly.MemoryDesc(dims, "f32"), dst_dt, scheme=scheme, mask=mask,
                     groups=groups, scale_data_type=scale_dt, engine=engine)
    _check(q, engine, case, _near_halves(dims, scheme == "asymmetric"))


#: (dst, scheme, scale type, zero-point type, row magnitudes): scales past the
#: vector kernel's fast range (every group divides), f16 scales between 2^15
#: and 65504 and past it, saturated below the data's range (codes clamp),
#: tiny and huge groups just inside the fast range.
EDGES = [
    ("s8", "symmetric", "f16", None, (1e7, 2e6, 1.0, 1e-6)),
    ("u4", "asymmetric", "f16", "u8", (1e7, 1.2e5, 1.0, 1e-3)),
    ("u4", "asymmetric", "f32", None, (1e-33, 1e-29, 1e29, 1e33)),
    ("s4", "symmetric", "bf16", None, (1e-36, 1e-29, 1e30, 1e36)),
]


@pytest.mark.parametrize("case", EDGES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in EDGES])
def test_quantize_scales_at_the_edges(engine, case):
    """Rows of very different magnitudes in groups of 64: the vector
    kernel's fast codes where they hold, division where its scale range
    ends, clamped codes where an f16 scale saturated; bit for bit the
    reference's."""
    dst_dt, scheme, scale_dt, zp_dt, mags = case
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((len(mags) * 4, 256)) *
         np.repeat(np.array(mags), 4)[:, None]).astype(np.float32)
    q = cly.Quantize(cly.MemoryDesc(x.shape, "f32"), dst_dt, scheme=scheme, mask=3,
                     groups=(1, 64), scale_data_type=scale_dt, zero_point_data_type=zp_dt,
                     engine=engine)
    if engine.is_device and engine.profile.strategy == "cpu":
        assert q.plan.batch, q.impl
    _check(q, engine, (dst_dt, scheme, 3, (1, 64), scale_dt, zp_dt, x.shape), x)


def _e2m1_ties(blocks, seed=7):
    """MX blocks of 32 whose values, after the block's scale 2^k, lie within
    8 ulps of every tie and every point of e2m1's grid (and of 6, past which
    it saturates), with both signs, -0 and subnormals; one block holds a NaN.
    Each block's largest |x| lies in [4, 8) * 2^k: its scale is 2^k."""
    rng = np.random.default_rng(seed)
    f32 = np.float32
    points = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0]
    near = [np.float32(0.0)]
    for p in points:
        up = dn = f32(p)
        near.append(up)
        for _ in range(8):
            up, dn = np.nextafter(up, f32(8)), np.nextafter(dn, f32(0))
            near += [up, dn]
    near += [f32(2.0 ** -149), f32(2.0 ** -127), np.nextafter(f32(8), f32(0))]
    pool = np.array(near, f32)
    x = np.empty((blocks, 32), f32)
    for b in range(blocks):
        v = rng.choice(pool, 31) * rng.choice(f32([1, -1]), 31)
        v[rng.integers(31)] = f32(-0.0)
        x[b] = np.concatenate([[f32(4.0)], v]) * f32(2.0) ** int(rng.integers(-20, 20))
    x[3, 9] = np.nan
    return x.reshape(-1, 256)


def test_mx_e2m1_rounds_every_tie_like_the_reference(engine):
    """MXFP4's codes of values around each tie and grid point of e2m1, bit
    for bit the reference's (the vector kernel's magic-number rounding; its
    careful path for the NaN block)."""
    x = _e2m1_ties(64)
    case = ("f4_e2m1", "mx", 3, (1, 32), "e8m0", None, x.shape)
    q = cly.Quantize(cly.MemoryDesc(x.shape, "f32"), "f4_e2m1", scheme="mx", mask=3,
                     groups=(1, 32), engine=engine)
    if engine.is_device and engine.profile.strategy == "cpu":
        assert q.plan.batch, q.impl
    _check(q, engine, case, x)


#: (dst, scheme, mask, groups, scale type, dims, src type, dst tag, what runs
#: on a device: the reorders around the kernel, "" for none)
ROUTED = [
    ("s8", "asymmetric", 3, (1, 32), "f32", (16, 64), "f32", "AB8a4b", "quantize + reorder out"),
    ("u4", "asymmetric", 3, (1, 32), "f16", (16, 64), "f32", "ba", "quantize + reorder out"),
    # an f16 source the kernel reads itself: no reorder in, even when routed
    ("u4", "asymmetric", 3, (1, 32), "f32", (16, 64), "f16", "ba", "quantize + reorder out"),
    ("u8", "asymmetric", 3, (4, 32), "f32", (32, 256), "f32", None,
     "reorder in + quantize + reorder out"),                      # two-dim groups
    ("s4", "symmetric", 3, (8, 16), "bf16", (64, 128), "f32", None,
     "reorder in + quantize + reorder out"),
    ("u4", "asymmetric", 3, (32, 1), "f32", (64, 128), "f32", None,
     "reorder in + quantize + reorder out"),                      # groups down a column
    ("f8_e4m3", "symmetric", 2, None, "f32", (16, 64), "f32", None,
     "reorder in + quantize + reorder out"),                      # per column
    # an f16 source in 9 groups of 48 (the vector kernel, which reads f16
    # itself, takes an even count, the coalesced one groups dividing 1024)
    ("f4_e2m1", "symmetric", 3, (1, 48), "f32", (9, 48), "f16", None, "reorder in + quantize"),
    ("s8", "asymmetric", 7, (4, 16), "f32", (4, 16, 64), "bf16", None,
     "reorder in + quantize + reorder out"),
]


@pytest.mark.parametrize("case", ROUTED, ids=[f"{c[0]}-{c[1]}-m{c[2]}-g{c[3]}-{c[6]}-{c[7]}"
                                              for c in ROUTED])
def test_quantize_routes_other_layouts_through_device_reorders(engine, case):
    """A blocked or transposed dst, groups that are no run of consecutive
    elements, an f16/bf16 source: reorders around the kernel on a device
    (the host path on the host), the results the reference's bit for bit."""
    dst_dt, scheme, mask, groups, scale_dt, dims, src_dt, dst_tag, route = case
    src_md = cly.MemoryDesc(dims, src_dt)
    dst_md = cly.MemoryDesc(dims, dst_dt, tag=dst_tag) if dst_tag else None
    q = cly.Quantize(src_md, dst_dt, scheme=scheme, mask=mask, groups=groups,
                     scale_data_type=scale_dt, dst_md=dst_md, engine=engine)
    if engine.is_device:
        assert f"quantize ({route}: " in q.impl, q.impl
    else:
        assert q.impl.startswith("host:numpy")
    x = _data(dims, seed=2).astype(src_md.dtype.numpy)
    _check(q, engine, (dst_dt, scheme, mask, groups, scale_dt, None, dims), x)


#: f16 and bf16 sources the CPU strategy's vector kernel reads itself
HALF = [
    ("u4", "asymmetric", 3, (1, 128), "f32", "u4", (8, 256)),
    ("f4_e2m1", "mx", 3, (1, 32), "e8m0", None, (8, 256)),
    ("s8", "symmetric", 1, None, "bf16", None, (8, 256)),
    ("s4", "asymmetric", 3, (1, 32), "f16", "s8", (8, 256)),
]


@pytest.mark.parametrize("src_dt", ["f16", "bf16"])
@pytest.mark.parametrize("case", HALF, ids=[f"{c[0]}-{c[1]}-m{c[2]}-{c[4]}" for c in HALF])
def test_quantize_reads_f16_and_bf16_sources(engine, src_dt, case):
    """An f16 or bf16 source: read by the CPU strategy's vector kernel and
    the GPU strategy's coalesced kernel themselves (no reorder into an f32
    copy first); bit for bit the reference's of the same values as f32."""
    dst_dt, scheme, mask, groups, scale_dt, zp_dt, dims = case
    md = cly.MemoryDesc(dims, src_dt)
    q = cly.Quantize(md, dst_dt, scheme=scheme, mask=mask, groups=groups,
                     scale_data_type=scale_dt, zero_point_data_type=zp_dt, engine=engine)
    if engine.is_device:
        kernel = q.plan.batch if engine.profile.strategy == "cpu" else q.plan.lanes
        assert kernel and q.plan.src_dt == src_dt and "reorder" not in q.impl, q.impl
    x = _data(dims, seed=6).astype(md.dtype.numpy)
    dst, scales, zps = _check(q, engine, case, x)
    deq, s = _dequantize(q, engine, dst, scales, zps)
    wide = x.astype(np.float64)
    ok = ~np.isnan(wide)
    limit = _steps(q, wide, s) * (1 + 2.0 ** -20) + np.abs(wide) * 2.0 ** -22
    assert (np.abs(deq.astype(np.float64) - wide)[ok] <= limit[ok]).all()


def test_quantize_routes_on_the_gpu_strategy(gpu_engine):
    case = ("u4", "asymmetric", 3, (4, 32), "f32", None, (64, 256))
    q = cly.Quantize(cly.MemoryDesc((64, 256), "f32"), "u4", scheme="asymmetric", mask=3,
                     groups=(4, 32), engine=gpu_engine)
    assert q.plan.lanes and "reorder in + quantize + reorder out" in q.impl, q.impl
    _check(q, gpu_engine, case, _data((64, 256), seed=4))


def test_quantize_without_a_route_says_why(cl_engine):
    """Groups that are no run of consecutive elements into a blocked dst: no
    route (its views need plain strides), the host path, the reason kept."""
    dst_md = cly.MemoryDesc((16, 64), "s8", tag="AB8a4b")
    q = cly.Quantize(cly.MemoryDesc((16, 64), "f32"), "s8", scheme="symmetric", mask=3,
                     groups=(4, 16), dst_md=dst_md, engine=cl_engine)
    assert q.impl.startswith("host:numpy") and "not plain strides" in q.impl, q.impl
    _check(q, cl_engine, ("s8", "symmetric", 3, (4, 16), "f32", None, (16, 64)),
           _data((16, 64), seed=5))


def test_quantize_memories_layouts():
    q = cly.Quantize(cly.MemoryDesc((64, 256), "f32"), "u4", scheme="asymmetric", mask=3,
                     groups=(1, 128), engine=cly.Engine("host"))
    assert q.scales_md == cly.MemoryDesc((128,), "f32")
    assert q.zero_points_md == cly.MemoryDesc((128,), "u4")
    assert cly.Scales(mask=3, groups=(1, 128)).count((64, 256)) == 128
    mx = cly.Quantize(cly.MemoryDesc((4, 64), "f32"), "f4_e2m1", scheme="mx", mask=3,
                      groups=(1, 32), engine=cly.Engine("host"))
    assert mx.scales_md == cly.MemoryDesc((8,), "e8m0") and mx.zero_points_md is None
    tensor = cly.Quantize(cly.MemoryDesc((4, 64), "f32"), "s8", engine=cly.Engine("host"))
    assert tensor.scales_md.dims == (1,)


BAD = [
    (dict(dst_data_type="u4", scheme="asymmetric", mask=3, groups=(1, 36)), "does not divide"),
    (dict(dst_data_type="u4", scheme="asymmetric", scale_data_type="e8m0"), "e8m0"),
    (dict(dst_data_type="f4_e2m1", scheme="mx", mask=3, groups=(1, 32),
          scale_data_type="f32"), "scale_data_type"),
    (dict(dst_data_type="f4_e2m1", scheme="mx", mask=3, groups=(1, 64)), "MX block is 32"),
    (dict(dst_data_type="f4_e2m1", scheme="mx", mask=2, groups=(1, 32)), "MX block is 32"),
    (dict(dst_data_type="s8", scheme="symmetric", zero_point_data_type="s8"), "no zero points"),
    (dict(dst_data_type="u4", scheme="symmetric"), "u4"),
    (dict(dst_data_type="f8_e4m3", scheme="asymmetric"), "f8_e4m3"),
    (dict(dst_data_type="u4", scheme="asymmetric", zero_point_data_type="s4"), "cannot hold"),
    (dict(dst_data_type="s8", scheme="sym"), "scheme"),
    (dict(dst_data_type="s8", mask=1, groups=(1, 32)), "not in the mask"),
]


@pytest.mark.parametrize("kwargs, words", BAD, ids=[w for _, w in BAD])
def test_quantize_bad_input_is_refused_at_creation(kwargs, words):
    kwargs = dict(kwargs)
    dst = kwargs.pop("dst_data_type")
    with pytest.raises(cly.InvalidArgumentError, match=words):
        cly.Quantize(cly.MemoryDesc((96, 96), "f32"), dst, engine=cly.Engine("host"), **kwargs)


def test_quantize_execute_checks_memories(host_engine):
    q = cly.Quantize(cly.MemoryDesc((4, 64), "f32"), "u8", scheme="asymmetric", mask=1,
                     engine=host_engine)
    src = cly.Memory(q.src_md, host_engine)
    dst, scales = cly.Memory(q.dst_md, host_engine), cly.Memory(q.scales_md, host_engine)
    with pytest.raises(cly.InvalidArgumentError, match="zero_points"):
        q.execute(cly.Stream(host_engine), src, dst, scales)


@pytest.mark.parametrize("prefetch", ["builtin", "opencl"])
@pytest.mark.parametrize("dims, src_dt, dt, scheme, groups", [
    ((64, 4096), "f32", "u4", "asymmetric", (1, 128)),   # 8 groups, 4 KiB a work-item
    ((512, 4096), "f32", "u4", "asymmetric", (1, 128)),  # 16 groups, 8 KiB: L2 16 KiB ahead
    ((64, 4096), "f32", "f4_e2m1", "mx", (1, 32)),       # 16 groups, 2 KiB: two ahead
    ((32, 512), "f32", "s8", "mx", (1, 32)),             # 2 groups a work-item
    ((64, 4096), "f16", "f4_e2m1", "mx", (1, 32)),       # 1 KiB: four ahead
    ((64, 4096), "bf16", "s4", "symmetric", (1, 16)),    # 32-byte groups: a line per two
])
def test_vector_kernel_fetches_a_later_work_items_lines_once(prefetch, dims, src_dt, dt,
                                                              scheme, groups):
    """The CPU strategy's vector kernel fetches, while it quantizes, every
    64-byte line of the work-item at least 4 KiB ahead once, no further than
    the last work-item's groups, with the device's kind of prefetch; with
    the builtin, those of the work-item twice as far ahead too, into the L2
    cache."""
    import re

    from clayout.gpu.render_quantize import plan_quantize, render_quantize

    spec = cly.Quantize(cly.MemoryDesc(dims, src_dt), dt, scheme=scheme, mask=3, groups=groups,
                        engine=cly.Engine("host")).spec
    plan = plan_quantize(spec, "cpu", prefetch=prefetch)
    assert plan.batch and plan.prefetch == prefetch and plan.src_dt == src_dt
    source = render_quantize(plan)
    if prefetch == "builtin":  # no OpenCL C prefetch beside the builtin
        assert not re.search(r"\bprefetch\(", source)
    else:
        assert "__builtin_prefetch" not in source
    if prefetch == "builtin":
        offsets = [int(n) for n in re.findall(r"__builtin_prefetch\(next \+ (\d+)u\);", source)]
    else:
        offsets = [int(n) for n in re.findall(r"\bprefetch\(next \+ (\d+)u, 64\);", source)]
    size = {"f32": 4, "f16": 2, "bf16": 2}[src_dt]
    assert sorted(offsets) == list(range(0, plan.batch * plan.group * size, 64))
    found = re.search(r"next = \(__global const uchar \*\)\(src \+ min\(g0 \+ (\d+)u, "
                      r"\(uint\)(\d+)u\) \* (\d+)u\);", source)
    ahead, last, group = (int(n) for n in found.groups())
    assert group == plan.group and ahead % plan.batch == 0
    assert ahead * group * size >= 4096 and (ahead - plan.batch) * group * size < 4096
    assert last == (plan.items - 1) * plan.batch  # the last work-item's own groups
    far = re.search(r"far = \(__global const uchar \*\)\(src \+ min\(g0 \+ (\d+)u, "
                    r"\(uint\)(\d+)u\) \* (\d+)u\);", source)
    l2_offsets = [int(n) for n in re.findall(r"__builtin_prefetch\(far \+ (\d+)u, 0, 1\);", source)]
    if prefetch == "builtin":
        far_ahead, far_last, far_group = (int(n) for n in far.groups())
        assert far_ahead == 2 * ahead and (far_last, far_group) == (last, group)
        assert l2_offsets == offsets  # the same lines, each after the first fetch's
    else:  # OpenCL C's prefetch has no cache level
        assert far is None and not l2_offsets
    assert plan_quantize(spec, "gpu", prefetch=prefetch).prefetch == ""  # no vector kernel


@pytest.mark.parametrize("src_dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("dims, mask, groups", [((0, 256), 3, (1, 128)), ((0, 256), 0, None),
                                                ((4, 0), 1, None)])
def test_quantize_of_nothing_runs(engine, src_dt, dims, mask, groups):
    """A zero-size source of any type: created and executed, nothing written."""
    md = cly.MemoryDesc(dims, src_dt)
    q = cly.Quantize(md, "s8", scheme="symmetric", mask=mask, groups=groups, engine=engine)
    assert q.dst_md.nelems() == 0
    mems = [cly.Memory(m, engine) for m in (q.dst_md, q.scales_md)]
    stream = cly.Stream(engine)
    q.execute(stream, cly.Memory(md, engine), *mems)
    stream.wait()
