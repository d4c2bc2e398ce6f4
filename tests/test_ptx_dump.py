"""CLAYOUT_DUMP_KERNELS (each built program's source to a folder) and
scripts/ptx_check.py (those sources compiled for NVIDIA sm_90).

The compile tests need clang-15, libclc's NVPTX built-ins and NVIDIA's
ptxas; they are skipped, saying which is missing, without them (`make ptx`
is not part of CI)."""
import hashlib
import importlib.util
import json
import pathlib
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import clayout as cly

SCRIPT = pathlib.Path(__file__).parents[1] / "scripts" / "ptx_check.py"
LIBCLC = "/usr/lib/clc/nvptx64--nvidiacl.bc"


def load_ptx_check():
    spec = importlib.util.spec_from_file_location("ptx_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ptx_check = load_ptx_check()


def transpose_case(engine, dims=(2, 3, 4, 5)):
    """An nchw -> nhwc reorder on ``engine``, executed; (primitive, src, dst values)."""
    src_md = cly.MemoryDesc(dims, "f32", tag="nchw")
    dst_md = cly.MemoryDesc(dims, "f32", tag="nhwc")
    values = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    src = cly.Memory.from_numpy(src_md, engine, values)
    dst = cly.Memory(dst_md, engine)
    reorder = cly.Reorder(src_md, dst_md, engine=engine)
    reorder.execute(cly.Stream(engine), src, dst)
    return reorder, values, dst.to_numpy()


def sha1_name(text):
    return hashlib.sha1(text.encode()).hexdigest() + ".cl"


def test_dump_writes_each_built_program_under_its_hash(gpu_engine, tmp_path, monkeypatch):
    folder = tmp_path / "kernels"
    monkeypatch.setenv("CLAYOUT_DUMP_KERNELS", str(folder))
    reorder, values, out = transpose_case(gpu_engine)  # a fresh context: built here
    assert reorder.impl.startswith("ocl:generated")
    assert out.tobytes() == values.tobytes()
    source = reorder._implementation.kernel.source
    assert (folder / sha1_name(source)).read_text() == source
    for path in folder.iterdir():  # whatever else was built: whole files, named by content
        assert path.suffix == ".cl" and path.name == sha1_name(path.read_text())


def test_threads_building_the_same_program_leave_one_whole_file(cl_engine, tmp_path,
                                                                monkeypatch):
    folder = tmp_path / "kernels"
    monkeypatch.setenv("CLAYOUT_DUMP_KERNELS", str(folder))
    # Each engine has its own context, so each thread builds (and dumps) the program.
    engines = [cly.Engine(cl_engine.kind, device=cl_engine.device) for _ in range(4)]
    sources, errors = [], []

    def run(engine):
        try:
            sources.append(transpose_case(engine, dims=(2, 5, 3, 4))[0]._implementation.kernel
                           .source)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(sources)) == 1
    assert [p.name for p in folder.iterdir()] == [sha1_name(sources[0])]
    assert (folder / sha1_name(sources[0])).read_text() == sources[0]


def test_an_unwritable_folder_is_logged_and_the_build_goes_on(gpu_engine, tmp_path,
                                                            monkeypatch, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CLAYOUT_DUMP_KERNELS", str(blocker / "kernels"))
    with caplog.at_level("WARNING", logger="clayout"):
        reorder, values, out = transpose_case(gpu_engine, dims=(2, 3, 5, 4))
    assert reorder.impl.startswith("ocl:generated")
    assert out.tobytes() == values.tobytes()
    warnings = [r.getMessage() for r in caplog.records if "CLAYOUT_DUMP_KERNELS" in r.getMessage()]
    assert warnings and str(blocker / "kernels") in warnings[0]
    assert blocker.read_text() == "not a folder"


# PTX written by hand: each line's width is worked out from the PTX ISA's
# vector and type suffixes, not from the script.
HAND_PTX = """
.visible .entry kern(
	.param .u64 kern_param_0
)
{
	ld.param.u64 	%rd1, [kern_param_0];
	ld.global.nc.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd4];
	ld.global.v2.u32 	{%r1, %r2}, [%rd5];
	ld.global.nc.u8 	%rs1, [%rd6];
	@%p1 ld.global.v2.f64 	{%fd1, %fd2}, [%rd7];
	ld.shared.v4.f32 	{%f5, %f6, %f7, %f8}, [%r9];
	st.shared.f32 	[%r9], %f1;
	st.global.v4.b32 	[%rd8], {%r1, %r2, %r3, %r4};
	@!%p2 st.global.f32 	[%rd9], %f5;
	st.global.v2.u16 	[%rd9], {%rs1, %rs2};
	ld.u32 	%r3, [%rd10];
}
.func helper()
{
	st.global.v2.b32 	[%rd1], {%r1, %r2};
}
"""


def test_ptx_accesses_are_counted_by_width():
    counts = ptx_check.count_accesses(HAND_PTX)
    assert counts["kern"] == {"ld": 4, "ld16": 2, "ld8": 1, "st": 3, "st16": 1, "st8": 0,
                              "generic": 1}
    assert counts["helper"] == {"ld": 0, "ld16": 0, "ld8": 0, "st": 1, "st16": 0, "st8": 1,
                                "generic": 0}
    assert ptx_check.access_width(["global", "v2", "u64"]) == 16
    assert ptx_check.access_width(["global", "nc", "v4", "u8"]) == 4


def test_a_cpu_kernel_s_spills_are_listed_without_failing():
    """A program marked as a CPU kernel (the CPU strategy's nibble tiles,
    whose tile is a private array) is reported when it spills, apart from
    the others, and counted so that the check does not fail on it."""
    base = {"sha1": "0", "file": "f.cl", "ok": True, "registers": 40, "stack": 0,
            **ptx_check._new_counts()}
    kernels = [{**base, "kernel": "a", "spill_stores": 8, "spill_loads": 8, "cpu_only": False},
               {**base, "kernel": "b", "spill_stores": 132, "spill_loads": 132,
                "cpu_only": True}]
    total = ptx_check.summarise(kernels)
    assert (total["spilling"], total["cpu_spilling"], total["spill_bytes"]) == (2, 1, 280)
    text = ptx_check.report({"run": kernels}, per_kernel=False)
    assert "\nSPILLS [run] a" in "\n" + text and "CPU KERNEL SPILLS (not failed) [run] b" in text


def test_ptxas_figures_are_read_per_function():
    text = ("ptxas info    : 0 bytes gmem\n"
            "ptxas info    : Compiling entry function 'a' for 'sm_90'\n"
            "ptxas info    : Function properties for a\n"
            "    8 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads\n"
            "ptxas info    : Used 255 registers, used 1 barriers, 6464 bytes smem\n"
            "ptxas info    : Compiling entry function 'b' for 'sm_90'\n"
            "ptxas info    : Function properties for b\n"
            "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
            "ptxas info    : Used 15 registers\n")
    info = ptx_check.parse_ptxas(text)
    assert info["a"] == {"registers": 255, "stack": 8, "spill_stores": 12, "spill_loads": 20}
    assert info["b"] == {"registers": 15, "stack": 0, "spill_stores": 0, "spill_loads": 0}


def _require_tools():
    missing = [name for name in ("clang-15", "ptxas") if shutil.which(name) is None]
    if not pathlib.Path(LIBCLC).is_file():
        missing.append(LIBCLC + " (libclc-15)")
    if missing:
        pytest.skip("make ptx's tools are missing: " + ", ".join(missing)
                    + " (not required in CI)")


def run_check(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_ptx_check_compiles_a_dumped_kernel(gpu_engine, tmp_path, monkeypatch):
    _require_tools()
    folder = tmp_path / "kernels"
    monkeypatch.setenv("CLAYOUT_DUMP_KERNELS", str(folder))
    reorder, _, _ = transpose_case(gpu_engine, dims=(2, 4, 3, 5))
    monkeypatch.delenv("CLAYOUT_DUMP_KERNELS")
    name = reorder._implementation.kernel.name
    done = run_check(folder, "--json", tmp_path / "ptx.json")
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads((tmp_path / "ptx.json").read_text())
    totals = doc["totals"][str(folder)]
    assert totals["failures"] == 0 and totals["spill_bytes"] == 0
    assert totals["kernels"] == len(list(folder.glob("*.cl")))
    kernel, = [k for k in doc["kernels"][str(folder)] if k["kernel"] == name]
    assert kernel["ok"] and kernel["registers"] > 0
    assert kernel["ld"] > 0 and kernel["st"] > 0  # a reorder reads and writes global memory
    assert name in done.stdout


def test_ptx_check_reports_a_kernel_that_does_not_compile(tmp_path):
    _require_tools()
    (tmp_path / "bad.cl").write_text(
        "__kernel void broken(__global float *p) { p[0] = no_such_name; }\n")
    (tmp_path / "good.cl").write_text(
        "__kernel void fine(__global float4 *p) { p[get_global_id(0)] *= 2.0f; }\n")
    done = run_check(tmp_path, "--json", tmp_path / "out" / "ptx.json")
    assert done.returncode == 1
    doc = json.loads((tmp_path / "out" / "ptx.json").read_text())
    assert doc["totals"][str(tmp_path)]["failures"] == 1
    broken, = [k for k in doc["kernels"][str(tmp_path)] if not k["ok"]]
    assert broken["kernel"] == "broken" and "no_such_name" in broken["error"]
    fine, = [k for k in doc["kernels"][str(tmp_path)] if k["ok"]]
    # A float4 pointer is 16-byte aligned: one vector load and one vector store.
    assert (fine["ld"], fine["ld16"], fine["st"], fine["st16"]) == (1, 1, 1, 1)
    assert "FAILED" in done.stdout and "no_such_name" in done.stdout


def test_ptx_check_with_nothing_to_check_fails(tmp_path):
    _require_tools()
    done = run_check(tmp_path)
    assert done.returncode == 2 and "no .cl files" in done.stderr
