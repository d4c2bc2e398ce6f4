"""Which implementation runs, what CLAYOUT_VERBOSE says, and the device limits honoured."""
import dataclasses
import time

import numpy as np
import pytest

import clayout as cly
from clayout.gpu.profile import CPU_PROFILE
from conftest import _engine_with_strategy


def verbose_lines(capsys, kind, count, timeout=10.0):
    """The verbose lines printed so far, once ``count`` lines of ``kind`` are
    among them: exec lines come from the event's completion callback."""
    lines, deadline = [], time.monotonic() + timeout
    while True:
        # The header comes once per process: in whichever test logs first.
        lines += [line for line in capsys.readouterr().err.splitlines()
                  if line != cly.verbose.HEADER]
        if sum(line.split(",")[2] == kind for line in lines) >= count \
                or time.monotonic() > deadline:
            return lines
        time.sleep(0.01)


def columns(line):
    """A line's columns by the header's names; every line has all of them."""
    fields = line.split(",")
    assert len(fields) == len(cly.verbose.HEADER.split(",")), line
    return dict(zip(("prefix", "category") + cly.verbose.COLUMNS, fields))


def test_verbose_prints_creation_execution_and_builds_once(cl_engine, monkeypatch, capsys):
    monkeypatch.setenv("CLAYOUT_VERBOSE", "1")
    src_md = cly.MemoryDesc((2, 19, 3, 5), "f32", tag="nchw")  # dims no other test uses
    dst_md = cly.MemoryDesc(src_md.dims, "s8", tag="nChw8c")
    src = cly.Memory.from_numpy(src_md, cl_engine, np.ones(src_md.dims, np.float32))
    dst = cly.Memory(dst_md, cl_engine)
    stream = cly.Stream(cl_engine)
    for _ in range(2):
        cly.Reorder(src_md, dst_md, engine=cl_engine, attr=cly.Attr(src_scales=2.0)) \
            .execute(stream, src, dst)
    stream.wait()
    lines = [columns(line) for line in verbose_lines(capsys, "exec", 2)]
    kinds = [line["event"] for line in lines]
    # One build, before the first creation; exec lines come as each run completes.
    assert kinds[:2] == ["build", "create"] and sorted(kinds[2:]) == ["create", "exec", "exec"]
    build, create = lines[:2]
    assert build["category"] == "kernel" and build["engine"] == "opencl"
    assert build["implementation"] == "reorder_f32_abcd_to_s8_aBcd8b"
    assert build["time"].endswith("ms") and float(build["time"][:-2]) > 0
    assert create == {"prefix": "clayout_verbose", "category": "primitive", "event": "create",
                      "engine": "opencl", "primitive": "reorder",
                      "implementation": "ocl:generated:reorder_f32_abcd_to_s8_aBcd8b",
                      "descriptors": "src:f32:abcd dst:s8:aBcd8b",
                      "attributes": "attr-scales:src:0:f32", "problem": "2x19x3x5", "time": ""}
    exec_line = lines[kinds.index("exec")]
    # The same columns as the creation, and the time.
    assert {k: v for k, v in exec_line.items() if k not in ("event", "time")} == \
        {k: v for k, v in create.items() if k not in ("event", "time")}
    assert exec_line["time"].endswith("ms") and float(exec_line["time"][:-2]) > 0


def test_verbose_explains_a_host_fallback(cl_engine, monkeypatch, capsys):
    monkeypatch.setenv("CLAYOUT_VERBOSE", "1")
    md = cly.MemoryDesc((2,) * 7, "f32")
    cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="gfedcba"), engine=cl_engine)
    err = capsys.readouterr().err
    create = [columns(line) for line in err.splitlines() if line != cly.verbose.HEADER]
    assert [line["implementation"] for line in create] == \
        ["host:numpy (7 dims: OpenCL kernels serve up to 6)"]


def test_no_output_without_verbose(cl_engine, monkeypatch, capsys):
    monkeypatch.delenv("CLAYOUT_VERBOSE", raising=False)
    md = cly.MemoryDesc((2, 3), "f32")
    cly.Reorder(md, cly.MemoryDesc((2, 3), "f32", tag="ba"), engine=cl_engine)
    assert capsys.readouterr().err == ""


def test_f64_falls_back_to_the_host_without_fp64(cl_engine, monkeypatch):
    monkeypatch.setattr(cl_engine, "profile", dataclasses.replace(cl_engine.profile, fp64=False))
    md = cly.MemoryDesc((3, 4), "f64")
    r = cly.Reorder(md, cly.MemoryDesc((3, 4), "f32", tag="ba"), engine=cl_engine)
    assert r.impl == "host:numpy (f64: the device lacks cl_khr_fp64)"
    values = np.arange(12, dtype=np.float64).reshape(3, 4) / 3
    src = cly.Memory.from_numpy(md, cl_engine, values)
    dst = cly.Memory(r.dst_md, cl_engine)
    stream = cly.Stream(cl_engine)
    r.execute(stream, src, dst)
    stream.wait()
    assert np.array_equal(dst.to_numpy(), values.astype(np.float32))


def test_identical_dense_layouts_are_a_buffer_copy(cl_engine):
    md = cly.MemoryDesc((4, 6), "u8", tag="ba")
    assert cly.Reorder(md, md, engine=cl_engine).impl == "ocl:copy"
    padded = cly.MemoryDesc((4, 6), "u8", tag="Ab4a")  # no padding: still a copy
    assert cly.Reorder(padded, padded, engine=cl_engine).impl == "ocl:copy"
    tail = cly.MemoryDesc((5, 6), "u8", tag="Ab4a")    # padding must be zeroed, not copied
    assert cly.Reorder(tail, tail, engine=cl_engine).impl == "ocl:generated"


def test_memory_beyond_the_device_allocation_limit_is_refused(cl_engine, monkeypatch):
    monkeypatch.setattr(cl_engine, "caps", dataclasses.replace(cl_engine.caps, max_alloc=1000))
    with pytest.raises(cly.InvalidArgumentError, match="1024 bytes, more than the 1000"):
        cly.Memory(cly.MemoryDesc((256,), "f32"), cl_engine)


def test_repeated_primitives_build_nothing(cl_engine):
    md = cly.MemoryDesc((3, 10, 7), "bf16", tag="acb")
    cly.Shuffle(md, axis=1, group_size=5, engine=cl_engine)
    before = cly.kernel_cache.builds
    for _ in range(3):
        cly.Shuffle(md, axis=1, group_size=5, engine=cl_engine)
    assert cly.kernel_cache.builds == before


def test_primitives_without_an_engine_share_the_default_one(cl_engine):
    engine = cly.default_engine()
    assert engine is cly.default_engine()
    md = cly.MemoryDesc((2, 8), "f32")
    r = cly.Reorder(md, cly.MemoryDesc((2, 8), "f32", tag="ba"))
    assert r.engine is engine
    src = cly.Memory.from_numpy(md, engine, np.arange(16, dtype=np.float32).reshape(2, 8))
    dst = cly.Memory(r.dst_md, engine)
    stream = cly.Stream(engine)
    r.execute(stream, src, dst)
    stream.wait()
    assert np.array_equal(dst.to_numpy(), src.to_numpy())


def test_shuffle_on_an_unblocked_axis_becomes_a_transpose(cl_engine):
    # Planned as for CPU_PROFILE's 2 compute units: on a GPU of 132, the
    # 48-channel shuffle below has fewer blocks than units and runs otherwise.
    cl_engine = _engine_with_strategy(cl_engine, "cpu", CPU_PROFILE.compute_units)
    md = cly.MemoryDesc((2, 64, 4, 4), "f32", tag="nhwc")
    sh = cly.Shuffle(md, axis=1, group_size=4, engine=cl_engine)
    # C = 16 x 4: each work-item transposes 4x4 elements in registers.
    assert sh._implementation.kernel.source.count("vload4(") == 4
    # Blocks of 16 on the axis hold whole digits of 64 = 16 x 4: still a transpose.
    blocked = cly.MemoryDesc((2, 64, 4, 4), "f32", tag="nChw16c")
    sh = cly.Shuffle(blocked, axis=1, group_size=4, engine=cl_engine)
    assert "vload4(" in sh._implementation.kernel.source
    # 48 = 16 x 3: a block of 16 cuts across the digit of 3, so each
    # work-item moves the whole axis of a pixel, its order in constants
    # (destination channels 0-3 read source channels 0, 3, 6 and 9: lanes
    # of the source lines of 8 channels the block loads whole).
    cut = cly.MemoryDesc((2, 48, 4, 4), "f32", tag="nChw16c")
    sh = cly.Shuffle(cut, axis=1, group_size=3, engine=cl_engine)
    assert sh._implementation.plan.shape == "unrolled"
    assert "(float4)(line0.s0, line0.s3, line0.s6, line1.s1)" in sh._implementation.kernel.source


def test_execute_takes_a_pyopencl_queue_and_wait_for(cl_engine):
    import pyopencl as cl

    queue = cl.CommandQueue(cl_engine.context)
    md = cly.MemoryDesc((4, 8), "s32")
    values = np.arange(32, dtype=np.int32).reshape(4, 8)
    src = cly.Memory.from_numpy(md, cl_engine, values)
    mid = cly.Memory(cly.MemoryDesc((4, 8), "s32", tag="ba"), cl_engine)
    out = cly.Memory(md, cl_engine)
    first = cly.Reorder(md, mid.md, engine=cl_engine).execute(queue, src, mid)
    assert isinstance(first, cl.Event)
    second = cly.Reorder(mid.md, md, engine=cl_engine).execute(queue, mid, out, wait_for=[first])
    second.wait()
    assert np.array_equal(out.to_numpy(), values)
    with pytest.raises(cly.InvalidArgumentError, match="neither a Stream"):
        cly.Reorder(md, mid.md, engine=cl_engine).execute("queue", src, mid)


def test_explain_says_why_each_earlier_implementation_declined(cl_engine, host_engine):
    md = cly.MemoryDesc((2, 8, 3, 3), "f32", tag="nchw")
    r = cly.Reorder(md, cly.MemoryDesc(md.dims, "s8", tag="nChw8c"), engine=cl_engine)
    lines = r.explain().splitlines()
    assert lines[:3] == ["none (zero elements): declined: 144 elements to move",
                         "ocl:copy: declined: the values are converted",
                         "ocl:generated:reorder_f32_abcd_to_s8_aBcd8b: runs"]
    # Then the kernel's strategy and access report (see test_access.py).
    assert lines[3].startswith("strategy ") and any("load src" in x for x in lines[4:])
    r = cly.Reorder(md, md, engine=host_engine)
    assert r.impl == "host:numpy" and r.explain().splitlines()[-2:] == [
        "host:numpy: declined: the host engine runs NumPy directly", "host:numpy: runs"]


def test_verbose_2_prints_each_decline(cl_engine, monkeypatch, capsys):
    monkeypatch.setenv("CLAYOUT_VERBOSE", "2")
    md = cly.MemoryDesc((2,) * 7, "f32")
    cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="gfedcba"), engine=cl_engine)
    err = capsys.readouterr().err
    assert "decline,opencl,reorder,ocl:generated (7 dims: OpenCL kernels serve up to 6)," \
        "src:f32:abcdefg dst:f32:gfedcba,,2x2x2x2x2x2x2," in err
    assert "decline,opencl,reorder,ocl:copy (the layouts differ),src:f32:abcdefg" in err
    lines = [columns(line) for line in err.splitlines() if line != cly.verbose.HEADER]
    assert [line["event"] for line in lines] == ["decline"] * 3 + ["create"]


def test_kernel_names_tell_the_cases_apart(cl_engine):
    src = cly.MemoryDesc((2, 16, 3, 3), "f32", tag="nchw")
    to_s8 = cly.Reorder(src, cly.MemoryDesc(src.dims, "s8", tag="nChw16c"), engine=cl_engine)
    assert to_s8._implementation.kernel.name == "reorder_f32_abcd_to_s8_aBcd16b"
    blocked = cly.MemoryDesc((2, 32, 3, 3), "f32", tag="nChw16c")
    sh = cly.Shuffle(blocked, axis=1, group_size=4, engine=cl_engine)
    assert sh._implementation.kernel.name == "shuffle_g4_f32_aBcd16b"


def test_work_groups_respect_the_kernel_limit(cpu_engine, monkeypatch):
    """A kernel that allows fewer work-items per group than the plan asks
    for gets groups of its own limit."""
    from clayout.gpu.build import Kernel

    cl_engine = cpu_engine
    md = cly.MemoryDesc((3, 40, 5, 7), "f32", tag="nchw")
    r = cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="nhwc"), engine=cl_engine)
    kernel = r._implementation.kernel
    assert kernel.ndrange()[1][0] == min(kernel.plan.work_group,
                                         cl_engine.profile.max_work_group_size)
    fresh = Kernel(cl_engine, kernel.plan)
    monkeypatch.setattr(type(fresh.kernel), "get_work_group_info", lambda *a: 3)
    (global_size,), (local,) = fresh.ndrange()
    assert local == 3 and global_size % 3 == 0 and global_size >= kernel.plan.launch_items


def test_gpu_strategy_kernels_are_exact(cl_engine):
    """The GPU strategy: a striped kernel whose work-items each run several
    vectors spaced by the launch, and a tiled transpose; both exact.
    Planned as for CPU_PROFILE's 2 compute units: a GPU of 132 gives this
    problem one vector per work-item."""
    engine = _engine_with_strategy(cl_engine, "gpu", CPU_PROFILE.compute_units)
    dims = (8, 64, 64, 64)
    values = np.random.default_rng(5).standard_normal(dims, dtype=np.float32)
    src_md = cly.MemoryDesc(dims, "f32", tag="nchw")
    src = cly.Memory.from_numpy(src_md, engine, values)
    for dst_md, want, tiled in ((cly.MemoryDesc(dims, "f16", tag="nchw"),
                                 values.astype(np.float16), False),
                                (cly.MemoryDesc(dims, "f32", tag="nhwc"), values, True)):
        r = cly.Reorder(src_md, dst_md, engine=engine)
        plan = r._implementation.plan
        assert plan.strategy == "gpu" and (plan.tile is not None) == tiled
        assert tiled or plan.chunks > 1
        dst = cly.Memory(dst_md, engine)
        stream = cly.Stream(engine)
        r.execute(stream, src, dst)
        stream.wait()
        assert dst.to_numpy().tobytes() == want.tobytes()


def test_a_tiled_kernel_runs_one_work_group_per_box(gpu_engine, monkeypatch):
    from clayout.gpu.build import Kernel

    md = cly.MemoryDesc((3, 40, 5, 7), "f32", tag="nchw")
    r = cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="nhwc"), engine=gpu_engine)
    kernel = r._implementation.kernel
    plan = kernel.plan
    assert kernel.ndrange() == ((plan.work_group, plan.tile.boxes), (plan.work_group, 1))
    fresh = Kernel(gpu_engine, plan)
    monkeypatch.setattr(type(fresh.kernel), "get_work_group_info", lambda *a: 3)
    assert fresh.ndrange() == ((3, plan.tile.boxes), (3, 1))


@pytest.mark.parametrize("dst_tag, dst_type", [("nhwc", "f32"), ("nchw", "f16"),
                                               ("nChw16c", "s8")])
def test_launches_past_the_item_limit_are_split(gpu_engine, monkeypatch, dst_tag, dst_type):
    """Past MAX_LAUNCH_ITEMS work-items a launch goes as several with global
    offsets (the limit is lowered here so that a small case crosses it)."""
    from clayout.gpu import build

    monkeypatch.setattr(build, "MAX_LAUNCH_ITEMS", 1000)
    dims = (4, 64, 8, 8)
    values = np.random.default_rng(6).integers(-100, 100, dims).astype(np.float32)
    src_md = cly.MemoryDesc(dims, "f32", tag="nchw")
    dst_md = cly.MemoryDesc(dims, dst_type, tag=dst_tag)
    r = cly.Reorder(src_md, dst_md, engine=gpu_engine)
    global_size, _ = r._implementation.kernel.ndrange()
    assert np.prod(global_size) > 1000
    src = cly.Memory.from_numpy(src_md, gpu_engine, values)
    dst = cly.Memory(dst_md, gpu_engine)
    cly.reorder(src, dst)
    assert np.array_equal(dst.to_numpy().astype(np.float32), values)

def test_a_kernel_that_does_not_build_is_declined_and_the_next_serves(cl_engine, monkeypatch,
                                                                     caplog):
    """A generated kernel the compiler refuses never reaches the user as a
    raw error: the implementation list declines it (saying why), the
    compiler's message is logged as a warning, the host path serves the
    problem exactly, and a second creation does not build it again."""
    from clayout.gpu import build

    rendered, render = [], build._render_kernel

    def broken(plan, name=None):
        rendered.append(plan.name)
        return render(plan, name) + "\n#error forced by the test\n"

    monkeypatch.setattr(build, "_render_kernel", broken)
    src_md = cly.MemoryDesc((3, 23, 5), "f32", tag="abc")  # dims no other test uses
    dst_md = cly.MemoryDesc(src_md.dims, "f32", tag="acb")
    x = np.arange(np.prod(src_md.dims), dtype=np.float32).reshape(src_md.dims)
    with caplog.at_level("WARNING", logger="clayout"):
        r = cly.Reorder(src_md, dst_md, engine=cl_engine)
    assert r.impl.startswith("host:numpy") and "compiler refused" in r.impl, r.impl
    why = dict(r._implementation.declined)
    generated = next(name for name in why if name.endswith(":generated"))
    # (dpctl hands no compiler log to SYCL engines: the refusal is all they say)
    said = "compiler refused" if cl_engine.kind == "sycl" else "forced by the test"
    assert said in why[generated], why
    assert said in r.explain()
    assert any(record.levelname == "WARNING" and said in record.getMessage()
               for record in caplog.records), [rec.getMessage() for rec in caplog.records]
    src = cly.Memory.from_numpy(src_md, cl_engine, x)
    dst = cly.Memory(dst_md, cl_engine)
    r.execute(cly.Stream(cl_engine), src, dst)
    np.testing.assert_array_equal(dst.to_numpy(), x)  # a layout change: bit for bit
    count = len(rendered)
    assert count >= 1
    again = cly.Reorder(src_md, dst_md, engine=cl_engine)
    assert again.impl == r.impl and len(rendered) == count  # the failure is kept, not rebuilt
