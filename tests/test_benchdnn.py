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
from clayout.benchdnn import check
from clayout.benchdnn.cases import prepare
from clayout.benchdnn.layout import tag_layout, trim_meta_tag
from clayout.benchdnn.options import UsageError, batch_tokens, parse, parse_oflag, parse_quant
from clayout.benchdnn.values import TYPES, fill_values
from conftest import TEST_PLATFORM

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "benchdnn"
BATCHES = pathlib.Path(__file__).resolve().parents[1] / "clayout" / "benchdnn" / "batches"


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
    (["--reorder", "--oflag=s8s8_comp", "2x3"], "needs a mask"),
    (["--reorder", "--oflag=zp_comp:-1", "2x3"], "needs a mask >= 0"),
    (["--reorder", "--oflag=zp_comp:x", "2x3"], "'zp_comp:x'"),
    (["--reorder", "--oflag=zp_comp:1+zp_comp:3", "2x3"], "zp_comp is given twice"),
    (["--reorder", "--attr-scales=src:per_ic", "2x3"], "per_ocic"),
    (["--reorder", "--attr-scales=src:per_dim_1:0.5", "2x3"], "common policy only"),
    (["--reorder", "--attr-zero-points=src:per_oc:1", "2x3"], "common policy only"),
    (["--reorder", "--attr-scales=src:per_dim_01:s8:1x32", "2x3"], "not s8"),
    (["--reorder", "--attr-scales=src:per_dim_01:f64", "2x3"], "not f64"),
    (["--reorder", "--attr-zero-points=src:per_dim_01:f16:1x32", "2x3"], "not f16"),
    (["--reorder", "--attr-scales=src:per_dim_01:f17:1x32", "2x3"], "f17"),
    (["--reorder", "--attr-scales=src:per_dim_01:f16:1x32x2", "2x3"], "1x32x2"),
    (["--reorder", "--attr-scales=src:per_dim_01:f16:32", "2x3"], "two sizes"),
    (["--reorder", "--attr-scales=src:per_dim_01:f16:0x32", "2x3"], "sizes >= 1"),
    (["--reorder", "--attr-scales=src:per_dim_01:f16:1xa", "2x3"], "groups"),
    (["--reorder", "--attr-scales=src:per_dim_01:f16:1x32:4", "2x3"], "after the groups"),
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
    args = ["--reorder", "--cross-engine=cpu2gpu", "--runtime-dim-mask=63",
            "--attr-scales=src:per_dim_1", "2x3", "--reset",
            "--attr-post-ops=relu", "2x3", "--reset", "--sdt=f4_e3m0", "2x3", "--reset",
            "--inplace=true", "2x3"]   # (--inplace is a common option: last, as --reset keeps it)
    rc, lines, _ = run(*args)
    assert rc == 0 and counts(lines)["unimplemented"] == 4
    assert "covers a runtime dim" in lines[0] and "post-op relu" in lines[1]
    assert "f4_e3m0" in lines[2] and "--inplace=true" in lines[3]
    rc, _, _ = run("--fail-unimplemented=true", *args)
    assert rc == 1


@pytest.mark.parametrize("variant, impls", [
    ("device", ["cross:cpu2gpu upload+ocl:generated", "cross:gpu2cpu ocl:generated+download"]),
    ("host", ["cross:cpu2gpu host:numpy+upload", "cross:gpu2cpu download+host:numpy"])])
def test_cross_engine_problems_run_either_way_and_are_skipped_on_the_host_engine(
        cl_engine, monkeypatch, variant, impls):
    monkeypatch.setenv("CLAYOUT_CROSS_CONVERT", variant)
    rc, lines, _ = run("-v5", "--reorder", "--cross-engine=cpu2gpu,gpu2cpu", "--ddt=s8",
                       "--dtag=aBx16b", "--attr-scales=src:per_dim_1", "2x17x3x3")
    assert rc == 0 and counts(lines)["passed"] == 2, lines
    assert [line.split("[")[1].split("]")[0] for line in lines if ":PASSED" in line] == impls
    _, lines, _ = run("--engine=host", "--reorder", "--cross-engine=gpu2cpu", "2x3")
    assert counts(lines)["skipped"] == 1 and "CASE_NOT_SUPPORTED" in lines[0]


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
                                       ("f4_e2m1", ml_dtypes.float4_e2m1fn),
                                       ("e8m0", ml_dtypes.float8_e8m0fnu)])
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
    # benchdnn's reorder ranges: s4 -7..8, f8_e5m2 and f4_e2m1 +-2048 (saturating to 6).
    assert fill_values(TYPES["s4"]).tolist() == [7, -7, 0, 0, 0, 1, 2, 2, 7, 7]
    assert fill_values(TYPES["f8_e5m2"])[:2].tolist() == [2048, -2048]
    assert fill_values(TYPES["f4_e2m1"]).tolist() == [6, -6, 0, 0, .5, 1, 1.5, 2, 6, 6]
    # e8m0 has no zero nor negative values: powers of two from 2^-24 to 2^24.
    assert fill_values(TYPES["e8m0"]).tolist() == [2**24, 2**-24, 2**-24, .25, .5, 1, 2, 2,
                                                   16, 64]


def test_a_case_keeps_attribute_values_and_layouts_apart_from_clayout():
    problem = parse(["--engine=host", "--reorder", "--ddt=s8", "--dtag=aBx16b",
                     "--attr-scales=src:per_dim_1+dst:common:2", "2x17x3"], pathlib.Path("."))[0]
    case = prepare(problem)
    mask, values, groups = case.per_slice["src_scales"]
    assert mask == 2 and values.size == 17 and set(values) <= {.125, .25, .5, 1, 2, 4, 8}
    assert groups == (1, 1, 1)
    assert case.per_slice["dst_scales"][:2] == (0, [2.0]) or case.per_slice["dst_scales"][1][0] == 2
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
    engine = "--engine=sycl" if TEST_PLATFORM == "sycl" else "--engine=opencl"
    done = subprocess.run([sys.executable, "-m", "clayout.benchdnn", engine,
                           f"--{driver}", f"--batch={path}"], capture_output=True, text=True,
                          timeout=900)
    lines = done.stdout.strip().splitlines()
    print(lines[-2:])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    c = counts(lines)
    assert c["failed"] == 0 and c["invalid_arguments"] == 0 and c["passed"] > 0


# -- quantization attributes, compensation, clayout's own batches -------------------------

def test_scales_and_zero_points_parse_with_data_types_and_groups():
    scales = parse_quant("attr-scales", "src:per_ocic:bf16:1x32+dst:common:0.5:f16", False)
    assert [(e.arg, e.policy, e.value, e.data_type, e.groups) for e in scales] == [
        ("src", "per_ocic", 1.0, "bf16", (1, 32)), ("dst", "common", 0.5, "f16", ())]
    points = parse_quant("attr-zero-points", "src:per_dim_01:u4:32x1+dst:common:-3:s8", True)
    assert [(e.policy, e.value, e.data_type, e.groups) for e in points] == [
        ("per_dim_01", 0, "u4", (32, 1)), ("common", -3, "s8", ())]
    assert parse_quant("attr-scales", "src:common:2", False)[0].data_type == ""
    # benchdnn's masks for a reorder's src and dst (not weights): per_oc is dim 1.
    masks = {p: parse_quant("attr-scales", f"src:{p}", False)[0].mask(4) for p in
             ("common", "per_dim_0", "per_dim_1", "per_dim_01", "per_oc", "per_ocic",
              "per_tensor")}
    assert masks == {"common": 0, "per_dim_0": 1, "per_dim_1": 2, "per_dim_01": 3,
                     "per_oc": 2, "per_ocic": 3, "per_tensor": 15}
    assert parse_oflag("s8s8_comp:1+zp_comp:3") == (("s8s8_comp", 1), ("zp_comp", 3))
    assert parse_oflag("zp_comp:0") == (("zp_comp", 0),) and parse_oflag("") == ()
    with pytest.raises(UsageError, match="stored as s32, s8, u8, s4, u4, not bf16"):
        parse_quant("attr-zero-points", "src:per_dim_1:bf16", True)


@pytest.mark.parametrize("args, dims, status, reason", [
    (["--ddt=u8", "--oflag=s8s8_comp:1"], "20x17x3x3", "SKIPPED",
     "CASE_NOT_SUPPORTED: compensation (--oflag=s8s8_comp:1) needs an s8 destination, not u8"),
    (["--sdt=s8", "--ddt=s8", "--oflag=zp_comp:1", "--attr-zero-points=src:common:1"],
     "20x17x3x3", "SKIPPED", "CASE_NOT_SUPPORTED: compensation (--oflag=zp_comp:1) goes with "
                             "no zero points and no post-ops"),
    (["--ddt=s8", "--oflag=zp_comp:1", "--attr-post-ops=sum:0.5"], "20x17x3x3", "SKIPPED",
     "no zero points and no post-ops"),
    (["--ddt=s8", "--oflag=zp_comp:1", "--attr-scales=src:per_oc"], "20x17x3x3", "SKIPPED",
     "src scales' mask 2 (per_oc) is neither common nor the compensation's"),
    (["--ddt=s8", "--oflag=s8s8_comp:1+zp_comp:3", "--attr-scales=dst:per_dim_0"], "20x17x3x3",
     "SKIPPED", "dst scales' mask 1 (per_dim_0)"),
    (["--ddt=s8", "--oflag=s8s8_comp:0"], "20x17x3x3", "INVALID_ARGUMENTS",
     "compensation_mask 0"),
    (["--ddt=s8", "--oflag=zp_comp:16"], "20x17x3x3", "INVALID_ARGUMENTS", "beyond"),
    (["--inplace=true"], "20x17", "UNIMPLEMENTED",
     "--inplace=true: clayout's primitives do not run in place"),
    (["--attr-scales=src:per_dim_01:f16:1x7"], "64x96", "INVALID_ARGUMENTS",
     "src scales group 7 does not divide dim 1 (96)"),
    (["--sdt=s8", "--attr-zero-points=src:per_dim_0:s8:4x1"], "64", "INVALID_ARGUMENTS",
     "src zero points groups 4x1 apply to the last two dims; the problem has 1"),
    (["--attr-scales=src:per_dim_1:f16:32x1"], "64x96", "INVALID_ARGUMENTS", "not in the mask"),
    (["--attr-scales=dst:per_dim_01:f16:1x7"], "64x96", "INVALID_ARGUMENTS",
     "dst scales group 7 does not divide dim 1 (96)"),
    (["--sdt=u8", "--attr-zero-points=src:common:-1:u8"], "64x96", "INVALID_ARGUMENTS", "u8"),
])
def test_problems_benchdnn_or_clayout_refuse_say_why(args, dims, status, reason):
    rc, lines, _ = run("--engine=host", "--reorder", *args, dims)
    assert lines[0].startswith(f"0:{status} (") and reason in lines[0], lines[0]
    assert rc == (1 if status == "INVALID_ARGUMENTS" else 0)


def test_the_drivers_e8m0_rounds_to_the_nearer_power_of_two_ties_up():
    t = TYPES["e8m0"]
    x = np.array([1.0, 1.4, 1.5, 2.9, 3.0, 0.75, 0.7, 2.0**127, 1.5 * 2**127, 2.0**-127,
                  2.0**-130, 1.5 * 2**-127, 0.0, -0.0, -2.0, np.inf, np.nan])
    want = [1, 1, 2, 2, 4, 1, 0.5, 2.0**127, np.nan, 2.0**-127, 2.0**-127, 2.0**-126,
            np.nan, np.nan, np.nan, np.nan, np.nan]
    assert np.array_equal(t.quantize(x, "f32"), want, equal_nan=True)
    assert t.to_bits(np.array([1.0, 2.0**-127, 2.0**127])).tolist() == [127, 0, 254]
    assert np.isnan(t.from_bits(np.array([255]))[0])


def _execute(case, engine):
    """The driver's own steps: fill, run, and the whole destination buffer."""
    src = cly.Memory(case.src.md, engine, raw=check.source_buffer(case))
    parent = cly.Memory(cly.MemoryDesc((check.buffer_bytes(case.dst),), "u8", tag="a"), engine,
                        raw=check.destination_buffer(case))
    dst = cly.Memory(case.dst.md, engine, buffer=parent)
    stream = cly.Stream(engine)
    case.create(engine).execute(stream, src, dst, **case.values)
    stream.wait()
    return np.array(parent.raw(), np.uint8)


def _case(*args):
    return prepare(parse(["--engine=host", "--reorder", *args], pathlib.Path("."))[0])


def test_scale_values_are_rounded_to_their_data_type():
    case = _case("--attr-scales=src:common:0.3:f16+dst:common:1.1:bf16", "4x4")
    assert case.per_slice["src_scales"][1].tolist() == [float(np.float16(0.3))]
    assert case.per_slice["dst_scales"][1].tolist() == [float(ml_dtypes.bfloat16(1.1))]
    assert float(np.float16(0.3)) != 0.3 and float(ml_dtypes.bfloat16(1.1)) != 1.1


def test_a_groups_value_applies_to_each_element_of_its_group(host_engine):
    case = _case("--sdt=u4", "--ddt=f32", "--stag=ba", "--attr-scales=src:per_dim_01:f16:1x32",
                 "--attr-zero-points=src:per_dim_01:u4:32x1", "64x128")
    _, scales, groups = case.per_slice["src_scales"]
    _, points, _ = case.per_slice["src_zero_points"]
    assert groups == (1, 32) and scales.size == 64 * 4 and points.size == 2 * 128
    raw = _execute(case, host_engine)
    got = raw[:64 * 128 * 4].view(np.float32).reshape(64, 128)
    # The tests' own reference: element (i, j) takes scale (i, j // 32) and
    # zero point (i // 32, j).
    x = check.source_values(case, np.arange(64 * 128)).reshape(64, 128)
    i, j = np.indices((64, 128))
    s = scales.reshape(64, 4)[i, j // 32].astype(np.float32)
    zp = points.reshape(2, 128)[i // 32, j].astype(np.float32)
    assert np.array_equal(got, s * (x.astype(np.float32) - zp))
    assert len(set(scales.tolist())) > 1 and len(set(points.tolist())) > 1
    assert check.check(case, raw).wrong == 0


def test_compensation_matches_the_tests_own_sums_and_a_wrong_value_fails(engine):
    case = _case("--ddt=s8", "--dtag=OIhw16i16o", "--attr-scales=src:per_dim_0",
                 "--oflag=zp_comp:1+s8s8_comp:1", "20x17x3x3")
    raw = _execute(case, engine)
    assert check.check(case, raw).wrong == 0
    # The tests' own sums: the s8 weights are round(scale[o] * x), saturated.
    x = check.source_values(case, np.arange(20 * 17 * 9)).reshape(20, 17 * 9)
    scale = case.per_slice["src_scales"][1].reshape(20, 1)
    q = np.clip(np.rint((scale * x).astype(np.float32)), -128, 127)
    zp = np.zeros(32, np.int64)
    zp[:20] = -q.sum(axis=1)          # O is padded to 32; padded slices hold 0
    offset = case.dst.md.compensation_offset
    assert offset == 32 * 32 * 9      # right after the s8 weights
    stored = raw[offset:offset + 64 * 4].view("<i4")
    assert stored[:32].tolist() == (128 * zp).tolist() and stored[32:].tolist() == zp.tolist()
    assert np.count_nonzero(zp) > 10
    # One value off by one, then a padded slice written: each is one wrong value.
    for at, kind, where in ((3, "s8s8", "(3)"), (32 + 25, "zp", "(25)")):
        bad = raw.copy()
        value = bad[offset + 4 * at:offset + 4 * at + 4].view("<i4")
        value += 1
        verdict = check.check(case, bad)
        assert verdict.wrong == 1, verdict.details
        assert verdict.details[0].startswith(f"{kind} compensation (mask 1) at {where}: got ")


def test_the_compensation_block_is_part_of_the_buffer_not_a_gap(host_engine):
    case = _case("--ddt=s8", "--dtag=oihw", "--oflag=zp_comp:1", "5x3x1x1")
    raw = _execute(case, host_engine)
    assert case.dst.nbytes == 15 + 5 * 4 and check.check(case, raw).wrong == 0
    raw[case.dst.md.size] = 0     # the guard right after the compensation
    verdict = check.check(case, raw)
    assert verdict.wrong == 1 and "the guard after the buffer" in verdict.details[0]


CROSS_ENGINE_SUBSET = "|".join([
    "--sdt=bf16 --ddt=s8 --stag=oihw --dtag=OIhw4i16o4i", "--sdt=s8 --ddt=s8 --strides=:600",
    "--ddt=u8 --dtag=aBx16b --attr-scales=src:per_dim_1 --attr-post-ops=sum:0.5",
    "--sdt=u8 --ddt=f32 --stag=aBx16b --attr-scales=src:common:0.5 "
    "--attr-zero-points=src:per_dim_1", "--sdt=f16 --ddt=f16", "--ddt=s32 --stag=axb",
    "--sdt=s8 --ddt=u8 2x", r"--stag=axb --dtag=aBx16b --attr-scales=src:per_dim_1\+dst",
    "--strides=:600x30x8x2 --attr-scales=src:common:4"])


RUNTIME_DIMS_SUBSET = "|".join([
    '--sdt=bf16 --ddt=s8 --stag=acdb .*--runtime-dim-mask=15 ',
    '--sdt=s8 --ddt=u8 --stag=aBcd16b --dtag=acdb .*2x19x7x5',
    '--stag=aBcd16b --dtag=acdb --attr-scales=src:per_dim_1.* 2x19x7x5',
    '--ddt=s8 .*sum:0.5 .*1x17x5x9',
    '--ddt=s8 .*OIhw4i16o4i .*--runtime-dim-mask=15 17x5x1x3',
    'gOIhw16i16o .*--runtime-dim-mask=31 9x3',
    '--sdt=f16 .*--runtime-dim-mask=63 (3x5x2x7x3)',
    # per-slice values along runtime dims, given at execute
    r'--stag=aBcd16b --dtag=acdb --attr-scales=src:per_dim_01\+dst:per_dim_1 .*=15 1x19',
    r'--sdt=u8 --ddt=s8 --stag=acdb --dtag=aBcd16b --attr-scales=src:per_dim_1 '
    r'--attr-zero-points=src:per_dim_0\+dst:per_dim_01 --runtime-dim-mask=2 ',
    '--ddt=u4 --stag=ba --dtag=ab --attr-scales=src:per_tensor:f16:1x32 --runtime-dim-mask=3 ',
    '--sdt=u4 --ddt=f16 --stag=ab .*--runtime-dim-mask=2 32x96'])


@pytest.mark.parametrize("batch, engine, match, skipped", [
    ("test_reorder_compensation", "host", "", 0),
    ("test_reorder_grouped", "host", "", 0),
    ("test_reorder_compensation", "opencl", "=OIhw16i16o .*20x17x3x3|=gOIhw4i16o4i .*3x20x17", 0),
    ("test_reorder_grouped", "opencl", "--stag=ba --dtag=ab .*(1x32|8x16) 64x128", 0),
    # 46 of its 900 problems: both directions, weights, strides, zero points, sum.
    ("test_reorder_cross_engine", "opencl", CROSS_ENGINE_SUBSET, 0),
    ("test_reorder_runtime_dims", "host", "", 0),
    # 61 of its 2260 problems: masks 2, 3, 13, 15, 31, 63; plain, blocked and weights
    # layouts; conversions, per-channel scales, zero points, sum.
    ("test_reorder_runtime_dims", "opencl", RUNTIME_DIMS_SUBSET, 0),
    ("test_reorder_quantize", "host", "", 0),
    # 7 of its 180 problems: u8/u4 with f16 scales and u8 zero points per 1x128,
    # s4 with e8m0 scales and s8 zero points per 1x32, MXFP4.
    ("test_reorder_quantize", "opencl", "--dtag=ba --attr-scales=dst:per_dim_01:f16:1x128 --attr-zero-points=dst:per_dim_01:u8:1x128 32x256|--ddt=f4_e2m1 .*e8m0:1x32 32x96|--ddt=s4 .*e8m0:1x32 --attr-zero-points=dst:per_dim_01:s8:1x32", 0),
])
def test_clayouts_own_batches_pass(request, batch, engine, match, skipped):
    if engine == "opencl":
        request.getfixturevalue("cl_engine")
    args = [f"--engine={engine}"] + ([f"--match={match}"] if match else [])
    rc, lines, err = run(*args, "--reorder", f"--batch={BATCHES / batch}")
    c = counts(lines)
    print(lines[-2:])
    assert rc == 0, "\n".join(x for x in lines if "FAILED" in x or "INVALID" in x)[:3000] + err
    assert c["failed"] == c["invalid_arguments"] == c["unimplemented"] == c["mistrusted"] == 0
    assert c["passed"] > 0 and c["skipped"] == skipped
    assert all("CASE_NOT_SUPPORTED" in x for x in lines if ":SKIPPED (" in x)
