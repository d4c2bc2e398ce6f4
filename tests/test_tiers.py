"""Tiers (clayout/tiers.py): a new shape runs at once on the built
runtime-dims kernel of its layout pair while its own kernel builds in the
background; both write the same bytes. And the ahead-of-time builds
(clayout/ahead.py) and what ``import clayout`` loads."""
import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import Future

import numpy as np
import pytest

import clayout as cly
from clayout import implementations, tiers
from clayout.gpu import build

SHAPES = [(2, 20, 3, 5), (3, 33, 4, 1)]  # channels not a multiple of the blocks: padding


def _cases():
    """(name, src_md, dst_md, attr, values dtype) of problems with a runtime-dims kernel."""
    def md(dims, dt, tag):
        return cly.MemoryDesc(dims, dt, tag=tag)

    for dims in SHAPES:
        c = dims[1]
        yield "f32 nchw->nChw16c", md(dims, "f32", "nchw"), md(dims, "f32", "nChw16c"), None
        yield "f32 nChw8c->nhwc", md(dims, "f32", "nChw8c"), md(dims, "f32", "nhwc"), None
        yield "f32->s8 per channel", md(dims, "f32", "nchw"), md(dims, "s8", "nChw16c"), \
            cly.Attr(src_scales=cly.Scales(np.linspace(0.5, 3, c), mask=0b10))
        yield "f32->bf16 nhwc", md(dims, "f32", "nchw"), md(dims, "bf16", "nhwc"), None
        yield "u8->f32 zero point", md(dims, "u8", "nhwc"), md(dims, "f32", "nchw"), \
            cly.Attr(src_zero_points=cly.ZeroPoints([7]), src_scales=cly.Scales([0.25]))


CASES = list(_cases())


def _source(md):
    rng = np.random.default_rng(sum(md.dims))
    raw = rng.integers(0, 256, md.size, dtype=np.uint8)
    if md.data_type == "f32":  # finite values: NaN payloads are not the point here
        raw = rng.uniform(-100, 100, md.size // 4).astype(np.float32).view(np.uint8)
    return raw




@pytest.fixture
def tiered(cl_engine, monkeypatch, tmp_path):
    """Tiers on, an empty persistent cache and kernel cache: nothing is built.
    A SYCL engine builds through dpctl, which holds the GIL: it has no tiers
    (test_no_tiers_where_a_build_would_stop_the_caller)."""
    if not cl_engine.backend.background_builds:
        pytest.skip(f"{cl_engine.kind} engines build each primitive's own kernel at once")
    monkeypatch.setenv("CLAYOUT_TIERS", "on")
    monkeypatch.setenv("CLAYOUT_CACHE", str(tmp_path / "cache"))
    cly.kernel_cache.clear()
    yield
    cly.kernel_cache.clear()


def _problem(src_md, dst_md, attr=None):
    """The Problem a Reorder sees (made on the host engine: nothing built)."""
    return cly.Reorder(src_md, dst_md, engine=cly.Engine("host"), attr=attr)._implementation.problem


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{'x'.join(map(str, c[1].dims))}"
                                             for c in CASES])
def test_both_tiers_write_the_same_bytes(cl_engine, tiered, monkeypatch, case):
    """The runtime-dims kernel standing in and the problem's own kernel
    write identical bytes, padding included; the own kernel takes over once
    its build is done."""
    name, src_md, dst_md, attr = case
    pending = Future()  # the own kernel's build, held until the test lets it finish
    monkeypatch.setattr(tiers.WORKER, "submit", lambda work: pending)

    r = cly.Reorder(src_md, dst_md, engine=cl_engine, attr=attr)
    impl = r._implementation
    assert impl.stand_in is not None and impl.own.ready() is None, "no tier stood in"
    raw = _source(src_md)
    src = cly.Memory(src_md, cl_engine, raw=raw)
    first = cly.Memory(dst_md, cl_engine)
    r.execute(cly.Stream(cl_engine), src, first).wait()
    assert impl.own.ready() is None  # still the stand-in

    pending.set_result(build.get_kernel(cl_engine, impl.plan))
    second = cly.Memory(dst_md, cl_engine)
    r.execute(cly.Stream(cl_engine), src, second).wait()
    assert impl.own.ready() is not None  # the own kernel ran
    assert np.array_equal(first.to_numpy().view(np.uint8), second.to_numpy().view(np.uint8))

    monkeypatch.setenv("CLAYOUT_TIERS", "off")
    own = cly.Reorder(src_md, dst_md, engine=cl_engine, attr=attr)
    assert own._implementation.stand_in is None
    third = cly.Memory(dst_md, cl_engine)
    own.execute(cly.Stream(cl_engine), src, third).wait()
    assert np.array_equal(first.to_numpy().view(np.uint8), third.to_numpy().view(np.uint8))


def _same_but_nan_payloads(a, b, md) -> bool:
    """The bytes are the same, but where both tiers wrote a NaN: a NaN made
    by arithmetic (a sum, a scale) may take either operand's sign and
    payload, which the compiler's operand order decides (README)."""
    if np.array_equal(a, b):
        return True
    dtype = md.dtype.numpy
    if md.dtype.packed or np.dtype(dtype).kind not in "fV" or a.size % np.dtype(dtype).itemsize:
        return False
    x, y = a.view(dtype).astype(np.float64), b.view(dtype).astype(np.float64)
    differ = x.view(np.uint64) != y.view(np.uint64)
    return bool(np.all(np.isnan(x[differ]) & np.isnan(y[differ])))


#: Random problems (tests/sweep_cases.py) for the two tiers to agree on.
RANDOM_PROBLEMS = int(os.environ.get("CLAYOUT_TIER_PROBLEMS", "120"))


def test_both_tiers_write_the_same_bytes_on_random_problems(cl_engine, tiered, monkeypatch):
    """The sweep's random problems (types, tags with odd blocks, attributes,
    values at execute, sums, shuffles) with a stand-in: its bytes and the
    own kernel's agree, every byte of the destination, padding included."""
    from sweep_cases import make_case
    from sweep_run import create, descriptors

    seed = int(os.environ.get("CLAYOUT_SWEEP_SEED", "34"))
    rng = np.random.default_rng(seed)
    tried = 0
    for index in range(RANDOM_PROBLEMS):
        case = make_case(seed, index)
        if case.refusal is not None:
            continue
        mds = descriptors(case)
        pending = Future()
        monkeypatch.setattr(tiers.WORKER, "submit", lambda work, pending=pending: pending)
        prim = create(case, cl_engine, mds)
        impl = prim._implementation
        if getattr(impl, "stand_in", None) is None:
            continue  # a window, strides no tag names, 4-bit dst...: its own kernel
        tried += 1
        raw = rng.integers(0, 256, prim.src_md.size, dtype=np.uint8)
        old = rng.integers(0, 256, prim.dst_md.size, dtype=np.uint8)  # a sum reads it
        outs = []
        for _ in range(2):
            src = cly.Memory(prim.src_md, cl_engine, raw=raw)
            dst = cly.Memory(prim.dst_md, cl_engine, raw=old)
            prim.execute(cly.Stream(cl_engine), src, dst, **case.execute_values()).wait()
            outs.append(dst.raw())
            if not pending.done():
                assert impl.own.ready() is None
                pending.set_result(build.get_kernel(cl_engine, impl.plan))
        assert impl.own.ready() is not None
        assert _same_but_nan_payloads(outs[0], outs[1], prim.dst_md), \
            f"problem (seed {seed}, index {index}): the tiers wrote other bytes"
    assert tried >= RANDOM_PROBLEMS // 5, f"only {tried} problems had a stand-in"


def test_new_shapes_of_a_pair_compile_nothing_before_their_first_result(
        cl_engine, tiered, monkeypatch):
    """The pair's first shape builds its runtime-dims kernel and runs on it;
    the shapes after it compile nothing on the calling thread before their
    first result; each one's own kernel follows from the background thread."""
    compiled = []  # (thread name, kernel names) of each compile
    real = build._build

    def counting(engine, source, names, key=None, options=()):
        compiled.append((threading.current_thread().name, list(names)))
        return real(engine, source, names, key, options)

    monkeypatch.setattr(build, "_build", counting)
    made = []
    for dims in [(2, 32, 5, 5), (3, 48, 7, 7), (1, 20, 2, 9)]:
        src_md = cly.MemoryDesc(dims, "f32", tag="nchw")
        dst_md = cly.MemoryDesc(dims, "f32", tag="nChw16c")
        before = len(compiled)
        r = cly.Reorder(src_md, dst_md, engine=cl_engine)
        x = np.random.default_rng(len(made)).standard_normal(dims).astype(np.float32)
        src = cly.Memory.from_numpy(src_md, cl_engine, x)
        dst = cly.Memory(dst_md, cl_engine)
        r.execute(cly.Stream(cl_engine), src, dst).wait()
        on_caller = [names for thread, names in compiled[before:]
                     if thread != "clayout-tiers" and names[0] != "zero_fill"]
        assert r._implementation.stand_in is not None, f"{dims}: no tier stood in"
        assert on_caller == ([] if made else [[r._implementation.stand_in.plan.name]]), \
            f"{dims}: compiled on the calling thread: {on_caller}"
        assert np.array_equal(dst.to_numpy(), x)
        made.append((r, src, dst_md, x))
    for r, src, dst_md, x in made:
        r._implementation.kernel  # noqa: B018 - waits for the own kernel's background build
        again = cly.Memory(dst_md, cl_engine)
        r.execute(cly.Stream(cl_engine), src, again).wait()
        assert r._implementation.own.ready() is not None
        assert np.array_equal(again.to_numpy(), x)


def test_tiers_off_builds_every_own_kernel_first(cl_engine, tiered, monkeypatch):
    monkeypatch.setenv("CLAYOUT_TIERS", "off")
    md = cly.MemoryDesc((2, 24, 3, 3), "f32", tag="nchw")
    dst = cly.MemoryDesc(md.dims, "f32", tag="nChw8c")
    pattern, plan = tiers.runtime_plan(_problem(md, dst), cl_engine,
                                       implementations.RuntimeKernel)
    build.get_runtime_kernel(cl_engine, plan)  # the pair's runtime-dims kernel is built
    other = cly.MemoryDesc((3, 40, 3, 3), "f32", tag="nchw")
    r = cly.Reorder(other, cly.MemoryDesc(other.dims, "f32", tag="nChw8c"), engine=cl_engine)
    assert r._implementation.stand_in is None and r._implementation.own.ready() is not None


def test_no_tiers_where_a_build_would_stop_the_caller(cl_engine, monkeypatch, tmp_path):
    """Where the runtime holds the GIL while it builds (dpctl), a build on a
    background thread would stop the caller as long: every primitive builds
    its own kernel at once, tiers on or not."""
    monkeypatch.setenv("CLAYOUT_TIERS", "on")
    monkeypatch.setenv("CLAYOUT_CACHE", str(tmp_path / "cache"))
    md = cly.MemoryDesc((2, 24, 3, 5), "f32", tag="nchw")
    r = cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="nChw8c"), engine=cl_engine)
    tiered = r._implementation.stand_in is not None
    assert tiered == cl_engine.backend.background_builds
    assert tiered or r._implementation.own.ready() is not None


def test_the_own_build_is_queued_once_however_many_executions_wait():
    """Executions on the stand-in before its first command is done ask to
    queue the own kernel's build each: it is queued once."""
    from types import SimpleNamespace

    watched = []
    engine = SimpleNamespace(backend=SimpleNamespace(
        when_complete=lambda event, callback: watched.append(callback)))
    own = tiers.OwnKernel(engine, plan=None)
    for event in range(50):
        own.build_after(event)
    assert len(watched) == 1 and own.ready() is None


def test_runtime_pattern_only_for_dense_tags():
    problem = _problem
    dense = cly.MemoryDesc((2, 3, 4), "f32", tag="abc")
    pattern = tiers.runtime_pattern(problem(dense, cly.MemoryDesc((2, 3, 4), "f32", tag="acb")))
    assert pattern is not None and pattern.src_md.is_runtime and pattern.dst_md.is_runtime
    strided = cly.MemoryDesc((2, 3, 4), "f32", strides=(100, 20, 1))  # no tag names it
    assert tiers.runtime_pattern(problem(strided, dense)) is None
    window = cly.MemoryDesc((4, 3, 4), "f32", tag="abc").submemory((2, 3, 4), (1, 0, 0))
    assert tiers.runtime_pattern(problem(window, dense)) is None


def test_build_makes_every_primitive_with_its_own_kernel(cl_engine, tiered, monkeypatch):
    shapes = [(16, 3, 3, 3), (32, 16, 1, 1), (48, 32, 3, 3)]
    items = [(cly.MemoryDesc(s, "f32", tag="oihw"), cly.MemoryDesc(s, "f32", tag="OIhw16i16o"))
             for s in shapes]
    items.append(lambda engine: cly.Shuffle(cly.MemoryDesc((2, 12, 3, 3), "f32", tag="nchw"),
                                            axis=1, group_size=3, engine=engine))
    made = cly.build(items, cl_engine, workers=2)
    assert [type(p).__name__ for p in made] == ["Reorder"] * 3 + ["Shuffle"]
    for p, s in zip(made, shapes):
        assert p.src_md.dims == s and p._implementation.own.ready() is not None
    assert cly.build([made[0]], cl_engine) == [made[0]]
    with pytest.raises(cly.InvalidArgumentError, match="build item 1"):
        cly.build([items[0], "oihw"], cl_engine)


def _fresh(script, **env):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, **env))
    assert done.returncode == 0, done.stderr
    return done


def test_the_build_command_fills_the_cache_the_next_process_loads(cl_engine, tmp_path):
    if cl_engine.kind != "opencl":
        pytest.skip("program binaries are kept for OpenCL engines (dpctl builds every program)")
    batch = tmp_path / "weights.txt"
    batch.write_text("--reorder --sdt=f32 --ddt=f32 --stag=oihw --dtag=OIhw16i16o\n"
                     "64x3x7x7 64x64x1x1 256x64x1x1\n")
    env = {"CLAYOUT_CACHE": str(tmp_path / "cache"), "CLAYOUT_VERBOSE": "1",
           "CLAYOUT_TIERS": "on"}
    done = subprocess.run([sys.executable, "-m", "clayout", "build", str(batch)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, **env))
    assert done.returncode == 0, done.stderr
    assert "3 primitives (3 with a kernel)" in done.stdout
    assert ",kernel,build," in done.stderr
    later = _fresh("""
        import clayout as cly, sys
        for o, i, k in [(64, 3, 7), (64, 64, 1), (256, 64, 1)]:
            md = cly.MemoryDesc((o, i, k, k), "f32", tag="oihw")
            cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="OIhw16i16o"))
        print(sorted(m for m in sys.modules if m.startswith("mako")))
    """, **env)
    assert ",kernel,build," not in later.stderr and ",kernel,load," in later.stderr
    assert later.stdout.strip() == "[]", "a warm process rendered a template"
    bad = subprocess.run([sys.executable, "-m", "clayout", "build", str(tmp_path / "none")],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "no file" in bad.stderr


def test_a_process_exits_promptly_with_own_builds_still_queued(cl_engine, tmp_path):
    """Cold primitives queue their own kernels' builds on the background
    thread; a process that ends at once exits cleanly (the builds not
    started are dropped, the running one is waited for), within a bound."""
    if not cl_engine.backend.background_builds:
        pytest.skip(f"{cl_engine.kind} engines build no kernel in the background")
    script = """
        import time, numpy as np, clayout as cly
        eng = cly.Engine()
        for c in range(17, 29):
            md = cly.MemoryDesc((2, c, 3, 5), "f32", tag="nchw")
            r = cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="nChw16c"), engine=eng)
            assert r._implementation.stand_in is not None
            src = cly.Memory.from_numpy(md, eng, np.ones(md.dims, np.float32))
            r.execute(cly.Stream(eng), src, cly.Memory(r.dst_md, eng)).wait()
        print("done", time.perf_counter())
    """
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=120,
                          env=dict(os.environ, CLAYOUT_TIERS="on",
                                   CLAYOUT_CACHE=str(tmp_path / "cache")))
    assert done.returncode == 0 and "terminate" not in done.stderr, done.stderr
    assert done.stdout.startswith("done")
    assert time.perf_counter() - start < 60


def test_import_clayout_loads_no_engine_compiler_or_tool():
    done = _fresh("""
        import sys, clayout
        md = clayout.MemoryDesc((2, 3), "f32", tag="ab")
        heavy = ("pyopencl", "mako", "dpctl", "clayout.benchdnn", "clayout.tune",
                 "clayout.explain", "clayout.backends.sycl", "clayout.gpu.render")
        print(sorted(m for m in sys.modules if m.startswith(heavy)))
    """)
    assert done.stdout.strip() == "[]"
