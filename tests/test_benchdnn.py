"""The benchdnn-compatible command line: its contract, its own references, and
oneDNN's batch files."""
import io
import os
import pathlib
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import clayout as cly
from clayout.benchdnn import main
from clayout.benchdnn.cases import prepare
from clayout.benchdnn.layout import tag_layout, trim_meta_tag
from clayout.benchdnn.options import batch_tokens, parse
from clayout.benchdnn.values import TYPES, fill_values

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "benchdnn"


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(args), out=out, err=err)
    return rc, out.getvalue().splitlines(), err.getvalue()


def counts(lines):
    line = [x for x in lines if x.startswith("tests:")][-1]
    items = (item.split(":", 1) for item in line.split(" engine:")[0].split())
    return {k: int(v) for k, v in items}


# -- the command line -------------------------------------------------------------------

def test_comma_lists_multiply_problems(cl_engine):
    rc, lines, _ = run("--reorder", "--sdt=f32,s8", "--ddt=f32,u8,bf16", "2x3x4", "3x5")
    c = counts(lines)
    assert rc == 0 and c["tests"] == 12 and c["passed"] + c["mistrusted"] == 12
    assert lines[0].startswith("0:PASSED") and "__REPRO: --engine=opencl --reorder" in lines[0]


def test_reset_restores_defaults(cl_engine):
    _, lines, _ = run("--reorder", "--sdt=s8", "2x3", "--reset", "2x3")
    assert "--sdt=s8" in lines[0] and "--sdt" not in lines[1]


def test_batch_files_join_continuations_and_drop_comments(tmp_path):
    batch = tmp_path / "batch"
    batch.write_text("# a comment\n--reorder --sdt=f32 \\\n  --ddt=s8  # trailing\n"
                     "--attr-scales=src:common:2, \\\n    dst:per_dim_1\n2x16x3x4\n")
    assert batch_tokens(batch) == ["--reorder", "--sdt=f32", "--ddt=s8",
                                   "--attr-scales=src:common:2,dst:per_dim_1", "2x16x3x4"]


@pytest.mark.parametrize("args, named", [
    (["--reorder", "--sdtt=s8", "2x3"], "--sdtt"),
    (["--reorder", "--sdt=s9", "2x3"], "s9"),
    (["--reorder", "--stag=ab#c", "2x3"], "ab#c"),
    (["--reorder", "--dtag=16a", "2x3"], "16a"),
    (["--reorder", "--attr-scales=src:common:abc", "2x3"], "'abc'"),
    (["--reorder", "--attr-scales=wei:common:2", "2x3"], "'wei'"),
    (["--reorder", "--attr-zero-points=src:common:1.5", "2x3"], "'1.5'"),
    (["--reorder", "--attr-post-ops=sun:2", "2x3"], "'sun'"),
    (["--reorder", "--oflag=s8s8:1", "2x3"], "'s8s8'"),
    (["--reorder", "--strides=1x2", "2x3"], "--strides"),
    (["--shuffle", "--dir=FWD_X", "2x3"], "FWD_X"),
    (["--shuffle", "--group=0", "2x3"], "--group=0"),
    (["--mode=Q", "--reorder", "2x3"], "--mode=Q"),
    (["--engine=tpu", "--reorder", "2x3"], "tpu"),
    (["--match=(", "--reorder", "2x3"], "--match"),
    (["--reorder", "2xAx3"], "2xAx3"),
    (["2x3"], "before --reorder"),
])
def test_a_bad_command_line_stops_before_running(args, named):
    rc, lines, err = run("--engine=host", *args, "--reorder", "4x4")
    assert rc == 2 and named in err and lines == [], (lines, err)


def test_a_bad_option_at_the_end_of_a_batch_stops_it_all(tmp_path):
    batch = tmp_path / "batch"
    batch.write_text("--reorder 2x3 2x4\n--sdtt=s8 2x5\n")
    rc, lines, err = run("--engine=host", f"--batch={batch}")
    assert rc == 2 and "--sdtt" in err and not lines


def test_match_start_and_mode_list(cl_engine):
    rc, lines, _ = run("--mode=L", "--match=--sdt=s8", "--reorder", "--sdt=f32,s8,u8", "2x3", "3x3")
    assert rc == 0 and counts(lines)["listed"] == 2 and all("--sdt=s8" in x for x in lines[:2])
    rc, lines, _ = run("--mode=L", "--start=4", "--reorder", "--sdt=f32,s8,u8", "2x3", "3x3")
    assert counts(lines)["tests"] == 2 and lines[0].startswith("4:LISTED")


def test_modes_initialize_execute_and_skip_implementations(cl_engine):
    _, lines, _ = run("--mode=I", "--reorder", "--dtag=axb", "2x16x3")
    assert counts(lines)["initialized"] == 1
    _, lines, _ = run("--mode=R", "--reorder", "--dtag=axb", "2x16x3")
    assert counts(lines)["executed"] == 1 and counts(lines)["passed"] == 0
    _, lines, _ = run("--skip-impl=ocl", "--reorder", "--dtag=axb", "2x16x3")
    assert counts(lines)["skipped"] == 1 and "SKIP_IMPL_HIT: ocl:generated" in lines[0]


def test_performance_mode_times_with_profiling_events_and_checks_nothing(cl_engine):
    rc, lines, _ = run("--mode=P", "--max-ms-per-prb=10", "--reorder", "--dtag=axb", "2x16x8x8")
    assert rc == 0 and counts(lines)["executed"] == 1 and counts(lines)["passed"] == 0
    perf = [x for x in lines if x.startswith("perf,")]
    assert lines[1].startswith("Output template: perf,") and len(perf) == 1
    fields = perf[0].split(",")
    assert fields[1] == "opencl" and fields[2] == "ocl:generated" and float(fields[-1]) > 0
    assert any(x.startswith("total perf: min(ms):") for x in lines)


def test_correctness_and_performance_together(cl_engine):
    _, lines, _ = run("--mode=CP", "--fix-times-per-prb=3", "--reorder", "--dtag=axb", "2x16x8x8")
    assert counts(lines)["passed"] == 1 and any(x.startswith("perf,") for x in lines)


def test_unimplemented_is_not_a_failure_unless_asked(cl_engine):
    args = ["--reorder", "--runtime-dim-mask=63", "2x3", "--reset", "--oflag=zp_comp:1", "2x3",
            "--reset", "--cross-engine=cpu2gpu", "2x3", "--reset", "--sdt=f4_e2m1", "2x3"]
    rc, lines, _ = run(*args)
    assert rc == 0 and counts(lines)["unimplemented"] == 4
    assert "runtime dims" in lines[0] and "compensation" in lines[1]
    assert "cross-engine" in lines[2] and "f4_e2m1" in lines[3]
    rc, _, _ = run("--fail-unimplemented=true", *args)
    assert rc == 1


def test_zero_points_on_float_types_are_skipped_as_onednn_does(cl_engine):
    _, lines, _ = run("--reorder", "--attr-zero-points=src:common:1", "2x3")
    assert counts(lines)["skipped"] == 1 and "CASE_NOT_SUPPORTED" in lines[0]


def test_src0_is_src_and_meta_tags_trim_on_one_dim(cl_engine):
    rc, lines, _ = run("--reorder", "--sdt=s8", "--ddt=f32", "--attr-scales=src0:common:0.5",
                       "2x16", "--reset", "--stag=abx,axb,bax", "--dtag=axb,abx", "77")
    assert rc == 0 and counts(lines)["passed"] == 7, lines


def test_repro_lines_name_the_engine_and_summary_too():
    rc, lines, _ = run("--engine=host", "--reorder", "--dtag=axb", "2x16x3")
    assert rc == 0 and "__REPRO: --engine=host --reorder --dtag=axb 2x16x3" in lines[0]
    assert lines[1].endswith("engine:host")


def test_the_data_comes_from_the_problem_text_in_every_process():
    code = ("from clayout.benchdnn.options import parse; from clayout.benchdnn.cases import prepare;"
            "from clayout.benchdnn.check import source_buffer; import pathlib, hashlib;"
            "p = parse(['--engine=host', '--reorder', '--sdt=f16', '--attr-scales=src:per_dim_1',"
            " '2x16x3'], pathlib.Path('.'))[0];"
            "c = prepare(p); print(hashlib.sha1(source_buffer(c).tobytes()).hexdigest(),"
            " c.per_slice['src_scales'][1].tolist())")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
               for seed in (1, 2, 3)}
    assert len(outputs) == 1 and outputs.pop().strip()


def test_an_exception_in_one_problem_fails_it_and_the_batch_goes_on(cl_engine, monkeypatch):
    real = cly.Reorder.execute
    seen = []

    def execute(self, *args, **kwargs):
        seen.append(self)
        if len(seen) == 1:
            raise RuntimeError("boom")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cly.Reorder, "execute", execute)
    rc, lines, _ = run("--reorder", "--dtag=axb", "2x16x3", "2x16x4")
    assert rc == 1 and lines[0].startswith("0:FAILED (RuntimeError: boom)")
    assert lines[1].startswith("1:PASSED") and counts(lines)["failed"] == 1


def test_a_problem_too_big_for_the_host_is_skipped_before_allocating():
    rc, lines, _ = run("--engine=host", "--reorder", "1024x1024x1024x1024", "--shuffle", "2x3")
    assert rc == 0 and "SKIPPED (not enough memory: needs" in lines[0]
    assert lines[1].startswith("1:PASSED")


def test_strided_destination_gaps_are_checked(cl_engine):
    rc, lines, _ = run("--reorder", "--strides=:1x3x12", "2x4x5", "--strides=40x10x1:", "2x4x5")
    assert rc == 0 and counts(lines)["passed"] == 2, lines


# -- the driver's own references --------------------------------------------------------

LAYOUTS = [("abx", (2, 3, 4, 5)), ("axb", (2, 3, 4, 5)), ("xba", (2, 3, 4)),
           ("aBx16b", (2, 17, 3, 3)), ("gOIhw16i16o", (2, 20, 18, 3, 3)),
           ("gOIhw8i16o2i", (2, 20, 18, 3, 3)), ("aBCde2b4c2b", (2, 16, 6, 3, 2)),
           ("aCB16b32c", (2, 64, 4)), ("ABcd16a16b", (17, 33, 2, 2)), ("nhwc", (2, 3, 4, 5)),
           ("OIhw4i16o4i", (20, 17, 3, 3)), ("ldigo", (2, 3, 4, 5, 6)), ("tnc", (3, 4, 5))]


@pytest.mark.parametrize("tag, dims", LAYOUTS)
def test_the_drivers_offsets_agree_with_clayouts(tag, dims):
    layout = tag_layout(tag, dims)
    md = cly.MemoryDesc(dims, "f32", tag=trim_meta_tag(tag, len(dims)))
    index = np.indices(dims).reshape(len(dims), -1)
    assert np.array_equal(layout.offsets(tuple(index)), md.element_offsets().ravel())
    assert layout.padded == md.padded_dims and layout.size * 4 == md.size


@pytest.mark.parametrize("name, ref", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16),
                                       ("f8_e5m2", ml_dtypes.float8_e5m2),
                                       ("f8_e4m3", ml_dtypes.float8_e4m3fn),
                                       ("f4_e2m1", ml_dtypes.float4_e2m1fn)])
def test_the_drivers_float_codecs_agree_with_ml_dtypes(name, ref):
    t = TYPES[name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(20000) * np.exp2(rng.integers(-20, 20, 20000))
    x = np.concatenate([x, [0.0, -0.0, np.inf, -np.inf, np.nan, 448, 464, 65520, 57344, 61440, 6, 7]])
    x = x.astype(np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        theirs = x.astype(np.float32).astype(ref).astype(np.float64)
    mine = t.minifloat.decode(t.minifloat.encode(x))
    assert np.array_equal(mine, theirs, equal_nan=True)


def test_fill_tables_hold_benchdnns_values():
    assert fill_values(TYPES["f32"]).tolist() == [2**24, -2**24, 0, .25, .5, 1, 1.5, 2, 16, 64]
    assert fill_values(TYPES["s8"]).tolist() == [127, -128, 0, 0, 0, 1, 2, 2, 16, 64]
    assert fill_values(TYPES["f16"])[:2].tolist() == [2048, -2048]
    assert fill_values(TYPES["s32"])[0] == 2147483520
    assert fill_values(TYPES["u4"]).tolist() == [15, 0, 0, 0, 0, 1, 2, 2, 15, 15]


def test_a_case_keeps_attribute_values_and_layouts_apart_from_clayout():
    problem = parse(["--engine=host", "--reorder", "--ddt=s8", "--dtag=aBx16b",
                     "--attr-scales=src:per_dim_1+dst:common:2", "2x17x3"], pathlib.Path("."))[0]
    case = prepare(problem)
    mask, values = case.per_slice["src_scales"]
    assert mask == 2 and values.size == 17 and set(values) <= {.125, .25, .5, 1, 2, 4, 8}
    assert case.per_slice["dst_scales"] == (0, [2.0]) or case.per_slice["dst_scales"][1][0] == 2
    assert case.dst.layout.padded == (2, 32, 3)


# -- oneDNN's batch files ----------------------------------------------------------------

@pytest.mark.parametrize("driver, batch", [("reorder", "reorder/test_reorder_smoke"),
                                           ("shuffle", "shuffle/test_shuffle_ci")])
def test_onednn_batch_files_pass(cl_engine, driver, batch):
    path = SHARED / batch
    if not path.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing: CI runs with shared/ beside the checkout")
        pytest.skip(f"{path} is not next to this checkout")
    done = subprocess.run([sys.executable, "-m", "clayout.benchdnn", "--engine=opencl",
                           f"--{driver}", f"--batch={path}"], capture_output=True, text=True,
                          timeout=900)
    lines = done.stdout.strip().splitlines()
    print(lines[-2:])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    c = counts(lines)
    assert c["failed"] == 0 and c["invalid_arguments"] == 0 and c["passed"] > 0
