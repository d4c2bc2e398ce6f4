"""SPIR-V kernels (clayout/gpu/spirv.py): the generated OpenCL C compiled by
clang and llvm-spirv, as a Level Zero queue would take it.

Every kind of kernel clayout builds (plain, tiled through local memory,
4-bit, grouped quantization, shuffle, compensation, masked write, runtime
dims), planned for both stand-in profiles, is compiled to SPIR-V, then run
on Intel's OpenCL CPU runtime twice: built from the SPIR-V module and built
from source, on the same input bytes; every byte of the outputs must agree.

Needs clang-15 and llvm-spirv-15 (bash scripts/ensure_spirv_tools.sh) and
Intel's runtime (bash scripts/ensure_intel_opencl.sh); without them the
tests are skipped with the reason, and fail under CI.
"""
import os
import struct
import time
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from reference import assert_bytes, random_bits, sample_values

import clayout as cly
from clayout.errors import UnimplementedError
from clayout.gpu import build
from clayout.gpu.compensation import get_compensation_kernel, render_compensation
from clayout.gpu.plan_cache import plan_cache
from clayout.gpu.profile import CPU_PROFILE, GPU_PROFILE
from clayout.gpu.render import render_kernel, render_template
from clayout.gpu.render_runtime import render_runtime_kernel
from clayout.gpu.runtime_plan import plan_runtime_kernel, runtime_values
from clayout.gpu.spirv import compile_spirv, spirv_tools
from clayout.implementations import _attr_args
from clayout.problem import Problem

SPIRV_MAGIC = 0x07230203
#: What clayout builds its programs with on a device that rounds division
#: correctly (gpu/build.py: build_options); Intel's runtime does.
OPTIONS = ["-cl-fp32-correctly-rounded-divide-sqrt"]
GUARD = 64  # bytes after each destination that no write may reach
FILL = 0xA5
R = cly.RUNTIME_DIM
PROFILES = {"cpu": CPU_PROFILE, "gpu": GPU_PROFILE}
INTEL = "Intel(R) OpenCL"  # the platform's name (conftest.py: PLATFORMS)
#: The sources the engines fixture built from SPIR-V.
FROM_SPIRV = set()


def _missing(message):
    if os.environ.get("CI"):
        pytest.fail(message + " -- CI requires it", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="module")
def tools():
    try:
        compile_spirv("__kernel void probe(void) {}\n")
    except UnimplementedError as missing:  # it names what is missing
        _missing(f"{missing} (bash scripts/ensure_spirv_tools.sh)")


@pytest.fixture(scope="module")
def intel(tools):
    """The Intel CPU device, or a skip (a failure under CI)."""
    chosen = os.environ.get("CLAYOUT_TEST_PLATFORM", "intel")
    if chosen != "intel":  # this run is for another implementation: not a failure
        pytest.skip(f"loads SPIR-V on Intel's runtime; CLAYOUT_TEST_PLATFORM={chosen}")
    import pyopencl as cl
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        platforms = []
    found = [p for p in platforms if p.name == INTEL]
    if not found:
        _missing("Intel's OpenCL runtime is not installed (bash scripts/ensure_intel_opencl.sh; "
                 "CLAYOUT_TEST_PLATFORM=intel)")
    return found[0].get_devices()[0]


@pytest.fixture(scope="module")
def engines(intel):
    """(engine building from source, engine building from SPIR-V): two
    contexts on Intel's device. clayout's own build is swapped, for the
    second context only, for one that compiles the source to SPIR-V and
    builds the module; each source it so built goes into FROM_SPIRV (the
    tests check their kernel's is there: the swap still takes effect)."""
    import pyopencl as cl

    source, il = cly.Engine("opencl", device=intel), cly.Engine("opencl", device=intel)
    original = build.compile_program

    def compile_program(context, text, options):
        if context != il.context:
            return original(context, text, options)
        program = cl.Program(context, compile_spirv(text, options))
        with warnings.catch_warnings():  # Intel's runtime always logs something
            warnings.simplefilter("ignore", cl.CompilerWarning)
            program.build(options=options)  # precision options do not travel in SPIR-V
        FROM_SPIRV.add(text)
        return program, ""

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(build, "compile_program", compile_program)
        # Both engines are on one device: with the persistent cache, the
        # second would load the first one's binary instead of building.
        patch.setenv("CLAYOUT_CACHE", "off")
        yield source, il


# -- the cases ----------------------------------------------------------------

def md(dims, dt, tag, **kw):
    return cly.MemoryDesc(dims, dt, tag=tag, **kw)


ACT = (2, 48, 7, 9)
CHANNEL_SCALES = cly.Scales(np.linspace(0.05, 3.0, 48), mask=0b10)
GROUPED = {"mask": 0b11, "groups": (1, 32)}
#: (name, src md, dst md, attr, shuffle): a shuffle where shuffle is (axis, group)
CASES = [
    ("f32_nchw_to_nhwc", md(ACT, "f32", "nchw"), md(ACT, "f32", "nhwc"), None, None),
    ("f32_nchw_to_nChw16c", md(ACT, "f32", "nchw"), md(ACT, "f32", "nChw16c"), None, None),
    ("f32_to_bf16_nhwc", md(ACT, "f32", "nchw"), md(ACT, "bf16", "nhwc"), None, None),
    ("f16_nhwc_to_f32", md(ACT, "f16", "nhwc"), md(ACT, "f32", "nchw"), None, None),
    ("f64_to_bf16", md(ACT, "f64", "nchw"), md(ACT, "bf16", "nchw"), None, None),
    ("f32_to_s8_per_channel_nChw16c", md(ACT, "f32", "nchw"), md(ACT, "s8", "nChw16c"),
     cly.Attr(src_scales=CHANNEL_SCALES, dst_zero_points=-3), None),
    ("s32_to_f32_dst_scale_sum", md(ACT, "s32", "nhwc"), md(ACT, "f32", "nchw"),
     cly.Attr(dst_scales=3.0, sum_beta=0.5), None),
    ("f32_to_f8_e4m3", md(ACT, "f32", "nchw"), md(ACT, "f8_e4m3", "nhwc"), None, None),
    ("s4_grouped_to_f32", md((8, 64), "s4", "ab"), md((8, 64), "f32", "ab"),
     cly.Attr(src_scales=cly.Scales(np.linspace(0.5, 2.0, 16), data_type="f16", **GROUPED),
              src_zero_points=cly.ZeroPoints(np.arange(16) % 16, data_type="u4", **GROUPED)),
     None),
    ("f32_to_u4_grouped_transposed", md((8, 64), "f32", "ab"), md((8, 64), "u4", "ba"),
     cly.Attr(src_scales=cly.Scales(np.linspace(0.5, 2.0, 16), **GROUPED)), None),
    ("u4_ab_to_u4_ba", md((9, 33), "u4", "ab"), md((9, 33), "u4", "ba"), None, None),
    ("shuffle_g4_nChw16c", md((2, 64, 5, 5), "f32", "nChw16c"),
     md((2, 64, 5, 5), "f32", "nChw16c"), None, (1, 4)),
]


def problem_of(case):
    _, src_md, dst_md, attr, shuffle = case
    return Problem("shuffle" if shuffle else "reorder", src_md, dst_md, attr, shuffle)


def buffer_values(md, rng, bits=False):
    """Bytes to fill md's whole buffer with: arbitrary bits (NaN payloads,
    denormals) with ``bits``, else the reference's sample values (specials
    first); the layout does not matter, both builds read the same bytes."""
    if md.dtype.bits < 8:
        return rng.integers(0, 256, md.size, dtype=np.uint8)
    count = md.size * 8 // md.dtype.bits
    values = random_bits(md.data_type, (count,), rng) if bits else \
        sample_values(md.data_type, (count,), rng)
    return np.ascontiguousarray(values).view(np.uint8)


def is_spirv(binary):
    return len(binary) > 20 and struct.unpack("<I", binary[:4])[0] == SPIRV_MAGIC


# -- running on both builds ---------------------------------------------------

def run_on(engine, launch, src_bytes, dst_bytes):
    """dst's bytes after ``launch(queue, src buffer, dst buffer)`` on engine."""
    import pyopencl as cl

    ctx, queue = engine.context, cl.CommandQueue(engine.context, engine.device)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    src = cl.Buffer(ctx, flags, hostbuf=np.concatenate([src_bytes, np.zeros(GUARD, np.uint8)]))
    dst = cl.Buffer(ctx, flags, hostbuf=np.concatenate([dst_bytes,
                                                        np.full(GUARD, FILL, np.uint8)]))
    launch(queue, src, dst)
    out = np.empty(dst_bytes.size + GUARD, np.uint8)
    cl.enqueue_copy(queue, out, dst)
    queue.finish()
    assert_bytes(out[dst_bytes.size:], np.full(GUARD, FILL, np.uint8), what="bytes after dst")
    return out[:dst_bytes.size]


def compare(engines, kernel_of, launch, src_bytes, dst_bytes, what):
    """Run the kernel ``kernel_of(engine)`` on both builds; their outputs
    must be the same bytes, and not the bytes dst held before."""
    outs = []
    for engine in engines:
        kernel = kernel_of(engine)
        outs.append(run_on(engine, lambda q, s, d: launch(engine, kernel, q, s, d),
                           src_bytes, dst_bytes))
    assert kernel_of(engines[1]).source in FROM_SPIRV, f"{what}: not built from SPIR-V"
    assert not np.array_equal(outs[0], dst_bytes), f"{what}: the kernel wrote nothing"
    assert_bytes(outs[1], outs[0], what=f"{what}: built from SPIR-V vs from source")


# =============================================================================
# Compiling
# =============================================================================

def every_source():
    """(name, OpenCL C) of one kernel of each kind."""
    out = [(f"{case[0]}-{p}", render_kernel(plan_cache.get(problem_of(case), profile)))
           for case in CASES for p, profile in PROFILES.items()]
    out.append(("compensation", render_compensation(COMPENSATED)))
    out.append(("masked_write", render_template("masked_write.cl.mako")))
    out += [(f"runtime-{p}", render_runtime_kernel(plan_runtime_kernel(RUNTIME, profile)))
            for p, profile in PROFILES.items()]
    # Quantize's kernels: the CPU strategy's vector kernel with the prefetch
    # a SPIR-V build gets (OpenCL C's), on f32 and on f16, the GPU
    # strategy's coalesced kernel.
    from clayout.gpu.render_quantize import plan_quantize, render_quantize

    spec = cly.Quantize(cly.MemoryDesc((64, 512), "f32"), "u4", scheme="asymmetric", mask=3,
                        groups=(1, 128), engine=cly.Engine("host")).spec
    out += [(f"quantize-{s}", render_quantize(plan_quantize(spec, s, prefetch="opencl")))
            for s in ("cpu", "gpu")]
    spec = cly.Quantize(cly.MemoryDesc((64, 512), "f16"), "f4_e2m1", scheme="mx", mask=3,
                        groups=(1, 32), engine=cly.Engine("host")).spec  # vload_half
    out += [(f"quantize-f16-{s}", render_quantize(plan_quantize(spec, s, prefetch="opencl")))
            for s in ("cpu", "gpu")]
    return out


def test_every_kind_of_kernel_compiles_to_spirv(tools):
    sources = every_source()
    tiled = [name for name, text in sources if "__local" in text]
    assert any(name.endswith("-gpu") for name in tiled), "no case uses local-memory tiles"
    for name, text in sources:
        binary = compile_spirv(text, OPTIONS)
        assert is_spirv(binary), name
        assert compile_spirv(text, OPTIONS) is binary, f"{name}: built again"


def test_a_failed_compile_says_why_and_which_kernel(tools):
    text = "// clayout broken kernel\n__kernel void broken(__global int *p) { p[0] = q; }\n"
    with pytest.raises(RuntimeError) as info:
        compile_spirv(text)
    message = str(info.value)
    assert "clayout broken kernel" in message and "undeclared identifier 'q'" in message


def test_missing_tools_name_the_packages(monkeypatch):
    monkeypatch.setenv("CLAYOUT_LLVM_SPIRV", "/nonexistent/llvm-spirv")
    assert spirv_tools() is None
    with pytest.raises(UnimplementedError) as info:
        compile_spirv("__kernel void k(void) {}\n", ["-DUNCACHED_MISSING_TOOLS"])
    message = str(info.value)
    assert "llvm-spirv-15" in message and "CLAYOUT_LLVM_SPIRV" in message


def test_threads_compiling_one_kernel_build_it_once(monkeypatch):
    from clayout.gpu import spirv

    if spirv_tools() is None:  # compile_spirv refuses before it compiles
        _missing("no clang and llvm-spirv of one LLVM release (apt-get install clang-15 "
                 "llvm-spirv-15)")
    calls = []

    def slow_compile(source, options):
        calls.append(source)
        time.sleep(0.2)  # every thread asks while the first build runs
        return b"module of " + source.encode()

    monkeypatch.setattr(spirv, "_compile", slow_compile)
    text = f"// kernel {time.time_ns()}\n"  # not compiled before in this process
    with ThreadPoolExecutor(8) as pool:
        modules = list(pool.map(lambda _: compile_spirv(text, OPTIONS), range(8)))
    assert calls == [text]
    assert all(m is modules[0] for m in modules)
    assert compile_spirv(text, []) is not modules[0] and len(calls) == 2  # options: another key


# =============================================================================
# Running: from SPIR-V and from source, byte for byte
# =============================================================================

@pytest.mark.needs_intel
@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_kernel_from_spirv_writes_the_same_bytes(engines, case, profile):
    problem = problem_of(case)
    plan = plan_cache.get(problem, PROFILES[profile])
    rng = np.random.default_rng(zlib.crc32(case[0].encode()))
    same_type = problem.src_md.data_type == problem.dst_md.data_type
    src_bytes = buffer_values(problem.src_md, rng, bits=same_type)
    dst_bytes = buffer_values(problem.dst_md, rng) if problem.attr is not None and \
        problem.attr.sum_beta is not None else np.full(problem.dst_md.size, FILL, np.uint8)

    def launch(engine, kernel, queue, src, dst):
        args = _attr_args(engine, plan.args, problem.attr)
        kernel.launch(queue, src, dst, args).wait()

    compare(engines, lambda e: build.get_kernel(e, plan), launch, src_bytes, dst_bytes,
            f"{plan.name} ({profile} profile)")


COMPENSATED = md((20, 24, 3, 3), "s8", "OIhw4i16o4i",
                 extra=cly.Extra(compensation_mask=0b1, asymm_compensation_mask=0b1))


@pytest.mark.needs_intel
def test_compensation_kernel(engines):
    rng = np.random.default_rng(5)
    weights = COMPENSATED.compensation_offset
    dst_bytes = np.full(COMPENSATED.size, FILL, np.uint8)
    dst_bytes[:weights] = rng.integers(0, 256, weights, dtype=np.uint8)

    def launch(engine, kernel, queue, src, dst):
        kernel.launch(queue, dst).wait()

    compare(engines, lambda e: get_compensation_kernel(e, COMPENSATED), launch,
            np.zeros(0, np.uint8), dst_bytes, "compensation")


@pytest.mark.needs_intel
def test_masked_write_kernel(engines):
    rng = np.random.default_rng(6)
    image = rng.integers(0, 256, 1000, dtype=np.uint8)
    mask = rng.choice(np.array([0x00, 0x0F, 0xF0, 0xFF, 0x3C], np.uint8), 1000)
    dst_bytes = rng.integers(0, 256, 1200, dtype=np.uint8)

    def launch(engine, kernel, queue, src, dst):
        build.write_masked(engine, queue, dst, 77, image, mask).wait()

    compare(engines, build.masked_write_kernel, launch, np.zeros(0, np.uint8), dst_bytes,
            "masked_write")


RUNTIME = Problem("reorder", md((R, 19, R, R), "f32", "nchw"), md((R, 19, R, R), "s8", "nChw16c"),
                  cly.Attr(src_scales=cly.Scales(np.linspace(0.1, 2.0, 19), mask=0b10),
                           dst_zero_points=4))


@pytest.mark.needs_intel
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_runtime_dims_kernel(engines, profile):
    plan = plan_runtime_kernel(RUNTIME, PROFILES[profile])
    src_md, dst_md = md((2, 19, 3, 7), "f32", "nchw"), md((2, 19, 3, 7), "s8", "nChw16c")
    shape, items, wide = runtime_values(plan, src_md, dst_md)
    assert not wide
    rng = np.random.default_rng(8)

    def launch(engine, kernel, queue, src, dst):
        args = _attr_args(engine, plan.args, RUNTIME.attr) + [np.uint32(v) for v in shape]
        kernel.launch(queue, src, dst, args, items).wait()

    compare(engines, lambda e: build.get_runtime_kernel(e, plan), launch,
            buffer_values(src_md, rng), np.full(dst_md.size, FILL, np.uint8),
            f"{plan.name} ({profile} profile)")
