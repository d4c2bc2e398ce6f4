"""The benchdnn-compatible command line: syntax, outcomes, and oneDNN's own batch files."""
import io
import os
import pathlib
import subprocess
import sys

import pytest

from clayout.benchdnn import Session, batch_tokens, main

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "benchdnn"


def run(*tokens, mode="C", engine="opencl"):
    out = io.StringIO()
    session = Session(out=out)
    session.run_tokens([f"--mode={mode}", f"--engine={engine}", *tokens], pathlib.Path.cwd())
    return session, out.getvalue().splitlines()


def test_comma_lists_multiply_problems(cl_engine):
    session, lines = run("--reorder", "--sdt=f32,s8", "--ddt=f32,u8,bf16", "2x3x4", "3x5")
    assert session.counts["tests"] == 2 * 3 * 2 == session.counts["passed"]
    assert lines[0].startswith("0:PASSED") and "__REPRO: --reorder" in lines[0]


def test_reset_restores_defaults(cl_engine):
    session, lines = run("--reorder", "--sdt=s8", "2x3", "--reset", "2x3")
    assert "--sdt=s8" in lines[0] and "--sdt" not in lines[1]


def test_batch_files_join_continuations_and_drop_comments(tmp_path):
    batch = tmp_path / "batch"
    batch.write_text("# a comment\n--reorder --sdt=f32 \\\n  --ddt=s8  # trailing\n"
                     "--attr-scales=src:common:2, \\\n    dst:per_dim_1\n2x16x3x4\n")
    assert batch_tokens(batch) == ["--reorder", "--sdt=f32", "--ddt=s8",
                                   "--attr-scales=src:common:2,dst:per_dim_1", "2x16x3x4"]


def test_unsupported_options_skip_with_the_reason(cl_engine):
    session, lines = run("--reorder", "--runtime-dim-mask=63", "2x3", "--oflag=zp_comp:1", "2x3",
                         "--reset", "--cross-engine=cpu", "2x3")
    assert session.counts["skipped"] == 3 and session.counts["failed"] == 0
    assert "runtime dims" in lines[0] and "--oflag" in lines[1] and "cross-engine" in lines[2]


def test_unknown_type_is_unimplemented_and_invalid_case_skipped(cl_engine):
    session, lines = run("--reorder", "--sdt=f4_e2m1", "2x3", "--reset",
                         "--attr-zero-points=src:common:1", "2x3")
    assert "UNIMPLEMENTED (data type f4_e2m1" in lines[0]
    assert "SKIPPED (invalid case: src_zero_point" in lines[1]


def test_named_problems_and_meta_tags(cl_engine):
    session, lines = run("--reorder", "--stag=axb", "--dtag=aBx16b", '2x17x3x3_n"tail"',
                         "--shuffle", "--tag=aBx8b", "--group=3", "--dir=BWD_D", "2x12x5")
    assert session.counts["passed"] == 2, lines


def test_performance_mode_prints_times(cl_engine):
    session, lines = run("--reorder", "--stag=abx", "--dtag=axb", "2x16x8x8", mode="P")
    assert any(line.startswith("perf,") and "GB/s" in line for line in lines)


def test_bad_problem_is_an_error_not_a_crash(capsys):
    assert main(["--engine=host", "--reorder", "2xAx3"]) == 2
    assert "2xAx3" in capsys.readouterr().err


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
    summary = done.stdout.strip().splitlines()[-1]
    print(summary)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert summary.startswith("tests:") and " failed:0" in summary
    assert " passed:0 " not in summary
