"""A primitive made again on descriptors seen before builds nothing, plans
nothing and makes no verbose text; what is kept (plans, descriptors' derived
values) never changes results, equality or hashing."""
import copy
import logging
import pickle
import threading

import numpy as np
import pytest

import clayout as cly
from clayout import verbose
from clayout.gpu import plan as plan_module
from clayout.gpu.plan_cache import PlanCache, plan_cache
from clayout.gpu.profile import CPU_PROFILE, GPU_PROFILE
from clayout.primitives import _Primitive
from clayout.problem import Problem
from reference import assert_same, per_slice, ref_reorder

# A shape no other test file uses: its first creation here plans and builds.
DIMS = (1, 48, 5, 7)


@pytest.fixture
def plans(monkeypatch):
    """Counts the planner's calls (every plan the cache makes goes through it)."""
    calls = []
    real = plan_module.plan_kernel

    def counting(problem, profile):
        calls.append((problem.src_md, problem.dst_md, profile.strategy))
        return real(problem, profile)

    monkeypatch.setattr(plan_module, "plan_kernel", counting)
    plan_cache.clear()
    return calls


def _per_channel(values):
    return cly.Attr(src_scales=cly.Scales(np.asarray(values, np.float32), mask=0b10))


def _run(prim, engine, x):
    stream = cly.Stream(engine)
    src = cly.Memory.from_numpy(prim.src_md, engine, x)
    dst = cly.Memory(prim.dst_md, engine)
    prim.execute(stream, src, dst)
    return dst.to_numpy()


def _quiet(monkeypatch):
    monkeypatch.delenv("CLAYOUT_VERBOSE", raising=False)
    monkeypatch.setattr(verbose.LOGGER, "level", logging.WARNING)


def test_identical_reorders_build_and_plan_nothing(cl_engine, plans):
    src = cly.MemoryDesc(DIMS, "f32", tag="nchw")
    dst = cly.MemoryDesc(DIMS, "s8", tag="nChw16c")
    scales = np.linspace(0.25, 2, DIMS[1], dtype=np.float32)
    first = cly.Reorder(src, dst, engine=cl_engine, attr=_per_channel(scales))
    assert len(plans) == 1 and first.impl.startswith("ocl:generated")
    builds = cly.kernel_cache.builds
    again = [cly.Reorder(src, dst, engine=cl_engine, attr=_per_channel(scales))
             for _ in range(100)]
    assert len(plans) == 1, "a creation on descriptors seen before planned again"
    assert cly.kernel_cache.builds == builds, "a creation on descriptors seen before built"
    assert all(p._implementation.kernel is first._implementation.kernel for p in again)
    # Equal descriptors that are other objects find the plan too.
    twin = cly.Reorder(cly.MemoryDesc(DIMS, "f32", tag="nchw"),
                       cly.MemoryDesc(DIMS, "s8", tag="aBcd16b"), engine=cl_engine,
                       attr=_per_channel(scales))
    assert len(plans) == 1 and cly.kernel_cache.builds == builds
    x = np.random.default_rng(1).standard_normal(DIMS).astype(np.float32) * 40
    want, pre = ref_reorder(x, "f32", "s8", src_scale=per_slice(scales, 0b10, DIMS))
    for prim in (again[-1], twin):
        assert_same(_run(prim, cl_engine, x), want, src=x, pre=pre, quantized=True)


@pytest.mark.parametrize("make", [
    lambda md, eng: cly.Shuffle(md, 1, 4, engine=eng),
    lambda md, eng: cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="nhwc"), engine=eng),
], ids=["shuffle", "nchw->nhwc"])
def test_identical_shuffles_and_plain_reorders_plan_once(cl_engine, plans, make):
    md = cly.MemoryDesc(DIMS, "f32", tag="nchw")
    first = make(md, cl_engine)
    builds = cly.kernel_cache.builds
    for _ in range(50):
        make(md, cl_engine)
    assert len(plans) == 1 and cly.kernel_cache.builds == builds, first.impl


def test_other_values_share_the_plan_and_keep_their_own(cl_engine, plans):
    """The plan is kept under the attribute kinds; each primitive still
    uses its own values."""
    src = cly.MemoryDesc(DIMS, "f32", tag="nchw")
    dst = cly.MemoryDesc(DIMS, "s8", tag="nChw16c")
    rng = np.random.default_rng(2)
    x = rng.standard_normal(DIMS).astype(np.float32) * 30
    a, b = (rng.uniform(0.1, 3, DIMS[1]).astype(np.float32) for _ in range(2))
    prim_a = cly.Reorder(src, dst, engine=cl_engine, attr=_per_channel(a))
    prim_b = cly.Reorder(src, dst, engine=cl_engine, attr=_per_channel(b))
    assert len(plans) == 1
    for prim, scales in ((prim_b, b), (prim_a, a)):
        want, pre = ref_reorder(x, "f32", "s8", src_scale=per_slice(scales, 0b10, DIMS))
        assert_same(_run(prim, cl_engine, x), want, src=x, pre=pre, quantized=True)
    # Another mask is another kernel shape: planned on its own.
    one = cly.Reorder(src, dst, engine=cl_engine, attr=cly.Attr(src_scales=0.5))
    assert len(plans) == 2
    want, pre = ref_reorder(x, "f32", "s8", src_scale=np.float32(0.5))
    assert_same(_run(one, cl_engine, x), want, src=x, pre=pre, quantized=True)


@pytest.mark.parametrize("profile", [CPU_PROFILE, GPU_PROFILE], ids=["cpu", "gpu"])
def test_the_planner_reads_attribute_kinds_not_values(profile):
    """What the cache's key relies on, checked on the planner itself:
    attributes of equal masks and groups but other values plan alike."""
    src = cly.MemoryDesc(DIMS, "f32", tag="nchw")
    dst = cly.MemoryDesc(DIMS, "u8", tag="nhwc")

    def attr(seed):
        rng = np.random.default_rng(seed)
        return cly.Attr(src_scales=cly.Scales(rng.uniform(0.5, 2, DIMS[1]), mask=0b10),
                        dst_scales=float(rng.uniform(1, 2)),
                        src_zero_points=cly.ZeroPoints(rng.integers(-3, 3, DIMS[1]),
                                                      mask=0b10),
                        dst_zero_points=int(rng.integers(0, 9)),
                        sum_beta=float(rng.uniform(0, 1)))

    a, b = (plan_module.plan_kernel(Problem("reorder", src, dst, attr(s)), profile)
            for s in (3, 4))
    assert a == b and hash(a) == hash(b)
    no_sum = plan_module.plan_kernel(Problem("reorder", src, dst, cly.Attr(
        src_scales=cly.Scales(np.ones(DIMS[1]), mask=0b10))), profile)
    assert no_sum != a  # kinds do matter


def test_each_strategy_plans_its_own(cpu_engine, gpu_engine, plans):
    src = cly.MemoryDesc(DIMS, "f32", tag="nchw")
    dst = cly.MemoryDesc(DIMS, "f32", tag="nhwc")
    by_engine = {e: cly.Reorder(src, dst, engine=e) for e in (cpu_engine, gpu_engine)}
    assert sorted(strategy for *_, strategy in plans) == ["cpu", "gpu"]
    for engine, prim in by_engine.items():
        assert prim._implementation.plan.strategy == engine.profile.strategy
        again = cly.Reorder(src, dst, engine=engine)
        assert again._implementation.plan.strategy == engine.profile.strategy
    assert len(plans) == 2


def test_creation_makes_verbose_text_only_when_asked(cl_engine, monkeypatch, capsys):
    src = cly.MemoryDesc(DIMS, "f32", tag="nchw")
    dst = cly.MemoryDesc(DIMS, "s8", tag="nChw16c")
    attr = _per_channel(np.ones(DIMS[1]))
    cly.Reorder(src, dst, engine=cl_engine, attr=attr)
    made = []
    real = _Primitive._signature

    def counting(self):
        made.append(self)
        return real(self)

    monkeypatch.setattr(_Primitive, "_signature", counting)
    _quiet(monkeypatch)
    prim = cly.Reorder(src, dst, engine=cl_engine, attr=attr)
    assert made == []
    # Read when asked: repr and verbose lines name the layouts (nchw is
    # abcd, nChw16c is aBcd16b in the tag grammar).
    assert "src:f32:abcd dst:s8:aBcd16b" in repr(prim) and made
    made.clear()
    monkeypatch.setenv("CLAYOUT_VERBOSE", "1")
    cly.Reorder(src, dst, engine=cl_engine, attr=attr)
    assert made
    create = [line for line in capsys.readouterr().err.splitlines()
              if line.startswith("clayout_verbose,primitive,create,")]
    assert len(create) == 1 and "src:f32:abcd dst:s8:aBcd16b" in create[0]


@pytest.mark.parametrize("tag, view", [
    ("nChw16c", lambda md: md.submemory((1, 16, 5, 7), (0, 16, 0, 0))),
    ("nchw", lambda md: md.permute_axes((0, 3, 1, 2))),
    ("nhwc", lambda md: md.reshape((48, 35))),
    ("OIhw4i16o4i", lambda md: md.submemory((1, 48, 5, 3), (0, 0, 0, 4))),
])
def test_kept_descriptor_values_stay_out_of_identity(tag, view):
    """Derived values are kept on the descriptor once read: an equal
    descriptor that has read none is equal and hashes alike, a pickled or
    copied one reads the same values, and views read their own."""
    names = ("tag", "size", "blocks", "inner_size", "own_padded_dims", "is_submemory",
             "padded_dims", "strides")

    def derived(md):
        return {n: getattr(md, n) for n in names} | {"nelems": md.nelems(),
                                                      "padded": md.nelems(padded=True)}

    md = cly.MemoryDesc(DIMS, "f32", tag=tag)
    seen = derived(md)
    fresh = cly.MemoryDesc(DIMS, "f32", tag=tag)
    assert md == fresh and hash(md) == hash(fresh) and {md: 1}[fresh] == 1
    assert derived(fresh) == seen
    for twin in (pickle.loads(pickle.dumps(md)), copy.copy(md), copy.deepcopy(md)):
        assert twin == md and hash(twin) == hash(md) and derived(twin) == seen
    v = view(md)
    # The view read from scratch: a descriptor made from its fields alone.
    scratch = pickle.loads(pickle.dumps(v))
    assert derived(v) == derived(scratch) and v != md


def test_a_runtime_pattern_keeps_raising_for_its_size():
    pattern = cly.MemoryDesc((cly.RUNTIME_DIM, 48, 5, 7), "f32", tag="nchw")
    for _ in range(2):
        with pytest.raises(cly.InvalidArgumentError, match="runtime"):
            pattern.size
        with pytest.raises(cly.InvalidArgumentError, match="runtime"):
            pattern.nelems()


def test_plan_cache_capacity_and_clear(monkeypatch):
    made = []
    monkeypatch.setattr(plan_module, "plan_kernel",
                        lambda problem, profile: made.append(problem.src_md) or object())
    problems = [Problem("reorder", cly.MemoryDesc((n, 3), "f32"),
                        cly.MemoryDesc((n, 3), "f32", tag="ba")) for n in (2, 3, 4)]
    cache = PlanCache(2)
    first = [cache.get(p, CPU_PROFILE) for p in problems]
    assert len(made) == 3 and len(cache) == 2
    assert cache.get(problems[2], CPU_PROFILE) is first[2]  # kept
    assert cache.get(problems[0], CPU_PROFILE) is not first[0]  # the oldest went first
    assert len(made) == 4 and (cache.hits, cache.misses) == (1, 4)
    cache.clear()
    cache.get(problems[2], CPU_PROFILE)
    assert len(made) == 5
    # An equal profile that is another object plans for itself (profiles are
    # kept by identity) and never receives another profile's plan.
    other = copy.deepcopy(CPU_PROFILE)
    assert cache.get(problems[2], other) is not cache.get(problems[2], CPU_PROFILE)
    off = PlanCache(0)
    off.get(problems[0], CPU_PROFILE)
    off.get(problems[0], CPU_PROFILE)
    assert len(off) == 0 and off.misses == 2


def test_threads_creating_a_new_shape_build_and_plan_it_once(cl_engine, plans):
    dims = (1, 40, 3, 9)  # new to this process
    src = cly.MemoryDesc(dims, "f32", tag="nchw")
    dst = cly.MemoryDesc(dims, "s8", tag="nChw8c")
    scales = np.linspace(0.5, 1.5, dims[1], dtype=np.float32)
    builds = cly.kernel_cache.builds
    start = threading.Barrier(8)
    made, errors = [], []

    def create():
        try:
            start.wait()
            made.extend(cly.Reorder(src, dst, engine=cl_engine, attr=_per_channel(scales))
                        for _ in range(20))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and len(made) == 160
    assert cly.kernel_cache.builds - builds == 1
    assert 1 <= len(plans) <= 8  # threads that met a shape not yet kept each plan it
    assert len({id(p._implementation.kernel) for p in made}) == 1
    x = np.random.default_rng(3).standard_normal(dims).astype(np.float32) * 20
    want, pre = ref_reorder(x, "f32", "s8", src_scale=per_slice(scales, 0b10, dims))
    assert_same(_run(made[-1], cl_engine, x), want, src=x, pre=pre, quantized=True)


def test_plan_cache_size_from_the_environment(monkeypatch):
    monkeypatch.setattr(plan_module, "plan_kernel", lambda problem, profile: object())
    problem = Problem("reorder", cly.MemoryDesc((2, 3), "f32"), cly.MemoryDesc((2, 3), "s8"))
    monkeypatch.setenv("CLAYOUT_PLAN_CACHE", "3")
    cache = PlanCache()
    cache.get(problem, CPU_PROFILE)
    assert cache.capacity == 3 and len(cache) == 1
    monkeypatch.setenv("CLAYOUT_PLAN_CACHE", "lots")
    with pytest.raises(cly.InvalidArgumentError, match="CLAYOUT_PLAN_CACHE='lots'"):
        PlanCache().get(problem, CPU_PROFILE)
