"""oneDNN itself as the oracle: clayout's reorders and shuffles against
oneDNN's own (its CPU engine, through tests/dnnl.py, in a worker process:
tests/onednn_side.py), on the same bytes, destination buffers compared
whole and guarded past their end (tests/onednn_runs.py).

Each differing element must fall in a named class of
tests/onednn_differences.py (with its reason: which side follows IEEE 754,
DESIGN.md or oneDNN's documentation, or a oneDNN defect with its minimal
reproducer below); anything else fails, so a new kind of difference shows
up. clayout's own result is checked against tests/reference.py first.

Problems: random ones (hypothesis, tests/onednn_cases.py) and those of
benchdnn's batch files (tests/onednn_batches.py) that oneDNN's CPU engine
runs. Settings (environment):

* CLAYOUT_ONEDNN_PROBLEMS: random problems drawn (default 600; CI's share);
* CLAYOUT_ONEDNN_SEED: their seed (default 35);
* CLAYOUT_ONEDNN_BATCH_STEP: run every Nth problem of each batch file
  (default: every 3rd of the small files, every 40th of test_reorder_ci's
  10 000, about 2 minutes in all); 1 runs them all (`make onednn-diff`).

oneDNN's CPU engine runs on SYCL over Intel's OpenCL CPU runtime: these
tests run on Intel's runtime (needs_intel), in `make test`'s test-onednn
pass. Under CI=true a oneDNN that
does not load fails them.
"""
import collections
import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings

import clayout as cly
import dnnl
import reference as ref
from onednn_batches import BATCHES, case_of, problems_of
from onednn_cases import problems
from onednn_differences import CLASSES, compare
from onednn_runs import run_both, run_clayout
from onednn_side import OneDNNRefuses, OneDNNWorker
from sweep_cases import Case, Layout, Values
from sweep_run import Prepared

pytestmark = pytest.mark.needs_intel

RANDOM_PROBLEMS = int(os.environ.get("CLAYOUT_ONEDNN_PROBLEMS", 600))
RANDOM_SEED = int(os.environ.get("CLAYOUT_ONEDNN_SEED", 35))
BIG_BATCH_STEP = int(os.environ.get("CLAYOUT_ONEDNN_BATCH_STEP", 40))
SMALL_BATCH_STEP = int(os.environ.get("CLAYOUT_ONEDNN_BATCH_STEP", 3))
REFUSED = (cly.InvalidArgumentError, cly.UnimplementedError)


def _unavailable(error):
    """Fail under CI (it installs oneDNN), skip with the reason elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"{error} -- CI requires oneDNN (make onednn)", pytrace=False)
    pytest.skip(str(error))


@pytest.fixture(scope="module")
def lib():
    """oneDNN in this process, for problems that cannot upset it."""
    try:
        return dnnl.onednn()
    except dnnl.Unavailable as error:
        _unavailable(error)


@pytest.fixture(scope="module")
def onednn():
    """oneDNN in its worker process (tests/onednn_side.py)."""
    try:
        worker = OneDNNWorker()
    except dnnl.Unavailable as error:
        _unavailable(error)
    yield worker
    worker.close()


class Tally:
    """What the problems of one test came to: runs, refusals by reason,
    and differing elements by class."""

    def __init__(self):
        self.counts, self.classes, self.failures = (collections.Counter(),
                                                    collections.Counter(), [])
        self.died = []  # problems whose oneDNN process died

    def run(self, case, engine, onednn):
        """Run ``case`` on both; keep a failure (clayout wrong, or a
        difference no class explains) with the problem's description."""
        self.counts["problems"] += 1
        try:
            run = run_both(case, engine, onednn)
        except OneDNNRefuses as e:
            self.counts[f"oneDNN: {e.reason.split(':')[0]}"] += 1
            if "process died" in e.reason:
                self.died.append(case.short())
            return
        except REFUSED as e:  # oneDNN ran it (run_both runs oneDNN first)
            self.failures.append(f"{case.short()}\n  clayout refuses what oneDNN runs: {e}")
            return
        self.counts["ran"] += 1
        try:
            run.problem.expect.check(run.clayout)
        except AssertionError as e:
            self.failures.append(f"{case.short()}\n  clayout is wrong: {str(e)[:800]}")
            return
        result = compare(run)
        self.classes.update(result.classes.keys())
        if result.unexplained:
            self.failures.append(
                f"{case.short()}\n  clayout {run.clayout_impl}, oneDNN {run.onednn_impl}; "
                f"explained: {result.classes}\n  " + "\n  ".join(result.unexplained)
                + "\n" + textwrap.indent(case.code(), "    "))

    def summary(self):
        ran = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        classes = ", ".join(f"{k} {v}" for k, v in self.classes.most_common()) or "none"
        died = "".join(f"\n  oneDNN's process died on: {text}" for text in self.died[:5])
        return f"{ran}; problems with differences, by class: {classes}{died}"

    def check(self, at_least):
        """Fail with every failure kept; and when fewer than ``at_least``
        problems ran on both (a binding that refuses everything proves nothing)."""
        print(self.summary())
        assert not self.failures, f"{len(self.failures)} problems:\n\n" + "\n\n".join(
            self.failures[:20])
        assert self.counts["ran"] >= at_least, self.summary()


# -- random problems ---------------------------------------------------------------

def test_random_problems_match_onednn_or_a_named_class(cl_engine, onednn):
    tally = Tally()

    @seed(RANDOM_SEED)
    @settings(max_examples=RANDOM_PROBLEMS, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(problems())
    def one(case):
        tally.run(case, cl_engine, onednn)

    one()
    # About half the random problems are ones oneDNN's CPU runs (f64, 4-bit
    # types and many layouts have no implementation there).
    tally.check(at_least=RANDOM_PROBLEMS // 4)


# -- benchdnn's batch files --------------------------------------------------------

@pytest.mark.parametrize("driver, path", BATCHES, ids=[p.name for _, p in BATCHES])
def test_batch_file_matches_onednn_or_a_named_class(cl_engine, onednn, lib, driver, path):
    problems_list = problems_of(driver, path)
    step = BIG_BATCH_STEP if len(problems_list) > 2000 else SMALL_BATCH_STEP
    tally = Tally()
    for problem in problems_list[::step]:
        case, reason = case_of(problem)
        if case is None:
            tally.counts[f"left out: {reason.split(':')[0]}"] += 1
            continue
        tally.run(case, cl_engine, onednn)
    if tally.counts["ran"] == 0 and tally.counts["problems"] == tally.counts[
            "oneDNN: unimplemented"] > 0 and not tally.failures:
        # The ISA decides (f16 shuffles: none on an AMD EPYC's avx512_core_bf16);
        # the other files still prove the binding runs.
        pytest.skip(f"oneDNN implements none of {path.name}'s {tally.counts['problems']} "
                    f"problems with the ISA it uses on this CPU ({lib.isa})")
    tally.check(at_least=1)


def test_batch_files_are_there():
    if not BATCHES and os.environ.get("CI"):
        pytest.fail("../shared/benchdnn has no batch files: CI runs with shared/ beside the "
                    "checkout")
    assert {driver for driver, _ in BATCHES} <= {"reorder", "shuffle"}


# -- the binding -------------------------------------------------------------------

@pytest.mark.parametrize("dims, dt, kw", [
    ((2, 16, 3, 3), "f32", {"tag": "nChw16c"}), ((2, 20, 3, 3), "s8", {"tag": "nhwc"}),
    ((40, 24, 3, 3), "f32", {"tag": "OIhw4i16o4i"}), ((2, 32, 16, 3, 3), "bf16",
                                                      {"tag": "gOIhw16i16o"}),
    ((32, 1, 1, 3, 3), "f32", {"tag": "Goihw16g"}), ((5, 7), "f16", {"strides": (9, 1)}),
    ((3, 17, 2), "u8", {"tag": "bAc8a"}), ((20, 3, 2), "u8", {"tag": "bAc8a"}),
    ((5, 3, 18, 2), "f16", {"tag": "cAdB4a4b"}), ((4, 6), "s32", {"tag": "ba"}),
])
def test_descriptors_from_clayout_lay_out_as_the_reference_says(lib, dims, dt, kw):
    """A MemoryDesc through from_memory_desc: oneDNN's size is clayout's, and
    oneDNN's reorder of 0, 1, 2... from plain puts each at the reference's
    offset (tests/reference.py)."""
    md = cly.MemoryDesc(dims, dt, **kw)
    desc = lib.from_memory_desc(md)
    assert desc.size == md.size
    plain = lib.memory_desc(dims, dt, "abcde"[:len(dims)])
    count = int(np.prod(dims))
    values = (np.arange(count) % 100).astype(ref.NP[dt]).reshape(dims)
    out = lib.memory(desc)
    prim = lib.reorder(plain, desc)
    prim.execute(prim.bind(lib.memory(plain, values.view(np.uint8).reshape(-1)), out))
    if "tag" in kw:
        offsets = ref.element_offsets(dims, ref.abstract_tag(kw["tag"]))
    else:
        offsets = ref.element_offsets(dims, strides=kw["strides"])
    got = out.read().view(ref.NP[dt])
    assert np.array_equal(got[offsets], values)


# -- the comparison itself ---------------------------------------------------------

def _run(onednn, engine, case):
    return run_both(case, engine, onednn)


def test_an_unexplained_difference_fails(cl_engine, onednn):
    """A layout change (a bit copy on both sides) whose oneDNN bytes are
    altered in one element: no class may explain it."""
    case = Case(7, 1, "reorder", (2, 16, 3, 3), "f32", "f32", Layout("nchw"), Layout("nChw16c"))
    run = _run(onednn, cl_engine, case)
    assert compare(run).equal
    run.onednn[run.problem.expect.dst_at.reshape(-1)[5] * 4] ^= 1
    result = compare(run)
    assert result.unexplained and not result.classes


def test_a_changed_padding_byte_is_unexplained(cl_engine, onednn):
    case = Case(7, 2, "reorder", (2, 13, 3, 3), "f32", "s8", Layout("nchw"), Layout("nChw16c"),
                src_scales=Values(0, (2.0,)))
    run = _run(onednn, cl_engine, case)
    pad = run.problem.expect.dst_pad
    assert pad.size and not compare(run).unexplained
    run.onednn[pad[0]] = 7
    assert "outside the elements" in " ".join(compare(run).unexplained)


def test_a_named_class_explains_only_its_own_difference(cl_engine, onednn):
    """dst scales: oneDNN's reciprocal is one ulp off; a difference of two
    ulps there is no class's."""
    case = Case(7, 3, "reorder", (64,), "s8", "f32", Layout("a"), Layout("a"),
                dst_scales=Values(0, (7.0,)))
    run = _run(onednn, cl_engine, case)
    result = compare(run)
    assert set(result.classes) <= {"dst_scale_reciprocal"} and not result.unexplained
    at = run.problem.expect.dst_at.reshape(-1)
    values = run.onednn.view(np.float32)
    values[at[3]] = np.nextafter(np.nextafter(values[at[3]], np.inf), np.inf)
    assert compare(run).unexplained


def test_an_f8_direct_copy_is_trusted_only_inside_its_buffer(cl_engine, onednn):
    """The CI failure of stop 48, on a Xeon: oneDNN's jit_direct_copy of f8
    wrote past its buffer and zeros inside it. Its elements are its defect's
    only when it wrote past; the same zeros from a copy that stayed inside
    are unexplained. (Built from clayout's run here: on some CPUs oneDNN
    does not take that implementation.)"""
    case = Case(1, 13, "reorder", (16, 1, 16), "f8_e5m2", "f8_e5m2", Layout("cBa4b"),
                Layout("cBa4b"))
    run = _run(onednn, cl_engine, case)
    at = run.problem.expect.dst_at.reshape(-1)
    run.onednn = run.clayout.copy()
    run.onednn[at[[8, 24]]] = 0
    run.onednn_impl = "jit_direct_copy:uni"
    result = compare(run)
    assert result.unexplained and not result.classes
    run.onednn_past = 12
    result = compare(run)
    assert set(result.classes) == {"onednn_f8_direct_copy_writes_past"} and not result.unexplained


def test_every_class_is_on_the_docs_page():
    page = open(os.path.join(os.path.dirname(__file__), "..", "docs", "onednn.md")).read()
    missing = [name for name in CLASSES if f"`{name}`" not in page]
    assert not missing, f"docs/onednn.md does not explain {missing}"


# -- the oneDNN defects of the table, each by a minimal reproducer -----------------
# Each shows that oneDNN still writes the wrong value and that clayout writes
# the right one (tests/reference.py's). When oneDNN is mended, its test
# fails: the class then leaves the table.

def _shows_here(lib, impl, wanted, defect):
    """Skip, with the reason, where oneDNN picks another implementation than
    ``wanted`` (the one with ``defect``) on this CPU: its choice depends on the
    ISA it uses (an AMD EPYC's avx512_core_bf16 takes simple:any for f8
    copies, where the Xeons CI has run on take jit_direct_copy)."""
    if not impl.startswith(wanted):
        pytest.skip(f"oneDNN picks {impl}, not {wanted}, with the ISA it uses on this CPU "
                    f"({lib.isa}): {defect} cannot show here")


def _both(onednn, engine, case):
    run = _run(onednn, engine, case)
    run.problem.expect.check(run.clayout)  # clayout right
    at = run.problem.expect.dst_at.reshape(-1)
    return run, at


def test_onednn_masked_zero_points_reproducer(cl_engine, onednn):
    case = Case(1, 1, "reorder", (2, 4), "u8", "s32", Layout("ab"), Layout("ab"),
                src_zero_points=Values(0b10, (1, 2, 3, 4)))
    run, at = _both(onednn, cl_engine, case)
    src = run.problem.expect.values.reshape(-1).astype(np.int64)
    got = run.onednn.view(np.int32)[at]
    assert np.array_equal(got, src - 1), "oneDNN now applies each zero point: drop the class"


def test_onednn_zero_points_dropped_reproducer(cl_engine, onednn):
    case = Case(1, 6, "reorder", (8, 8), "s32", "s32", Layout(None, (8, 1)), Layout("Ab8a"),
                src_zero_points=Values(0, (11,)))
    run, at = _both(onednn, cl_engine, case)
    src = run.problem.expect.values.reshape(-1)
    got = run.onednn.view(np.int32)[at]
    small = np.abs(src.astype(np.int64)) < 2**24  # (larger ones go through f32 there)
    assert small.sum() > 8 and np.array_equal(got[small], src[small]), \
        "oneDNN now applies this zero point: drop the class"


def test_onednn_direct_copy_of_windows_reproducer(cl_engine, onednn):
    window = Layout("Bac4b", None, (8, 9, 26), (2, 8, 2))
    case = Case(1, 7, "reorder", (3, 1, 23), "f32", "f32", window, window)
    run, at = _both(onednn, cl_engine, case)
    assert run.onednn_impl.startswith("jit_direct_copy") and \
        not np.array_equal(run.onednn, run.clayout), "oneDNN now copies windows right"


def test_onednn_s32_zero_point_wraps_reproducer(cl_engine, onednn):
    """s32 2^31 - 1 minus a zero point of -2, scaled by 4, with a sum: oneDNN's
    simple:any wraps around to a negative value."""
    case = Case(1, 8, "reorder", (1, 1, 2, 16), "s32", "f32", Layout("dcba"), Layout("dcba"),
                src_scales=Values(0, (4.0,)), src_zero_points=Values(0b1100, (-2,) * 32),
                sum_beta=2.0)
    problem = Prepared(case)
    expect = problem.expect
    expect.src_raw[:] = np.full(32, 2**31 - 1, np.int32).view(np.uint8)
    expect.dst_raw[:] = 0
    result, impl, _ = onednn.run(case, expect.src_raw, expect.dst_raw)
    clayout, _ = run_clayout(problem, cl_engine)
    assert np.all(clayout.view(np.float32) == np.float32(2**33))
    assert impl.startswith("simple") and np.all(result.view(np.float32) < 0), \
        f"oneDNN ({impl}) no longer wraps: drop the class"


def test_onednn_f8_direct_copy_writes_past_reproducer(cl_engine, onednn, lib):
    case = Case(1, 11, "reorder", (10, 1, 16), "f8_e5m2", "f8_e5m2", Layout("cBa4b"),
                Layout("cBa4b"))
    run, _ = _both(onednn, cl_engine, case)
    _shows_here(lib, run.onednn_impl, "jit_direct_copy", "onednn_f8_direct_copy_writes_past")
    assert run.onednn_past, \
        "oneDNN's f8 direct copy now stays inside its destination: drop the class"


def test_onednn_gapped_scale_mask_reproducer(cl_engine, onednn):
    case = Case(1, 2, "reorder", (2, 4, 2), "f32", "f32", Layout("abc"), Layout("abc"),
                dst_scales=Values(0b101, (1.0, 2.0, 4.0, 8.0)))
    run, at = _both(onednn, cl_engine, case)
    want = run.problem.expect.want.reshape(-1)
    got = run.onednn.view(np.float32)[at]
    assert not np.array_equal(got[8:], want[8:]), "oneDNN now reads gapped dst scales right"


def test_onednn_f8_sum_dropped_reproducer(cl_engine, onednn, lib):
    """f32 ones into f8_e5m2 ones with a sum of 1.0: 2.0 everywhere, but
    oneDNN's tail elements keep 1.0."""
    case = Case(1, 5, "reorder", (546,), "f32", "f8_e5m2", Layout("a"), Layout("a"),
                sum_beta=1.0)
    problem = Prepared(case)
    expect = problem.expect
    ones_src = np.ones(546, np.float32).view(np.uint8)
    expect.src_raw[:] = ones_src
    expect.dst_raw[:] = np.ones(546, ml_dtypes.float8_e5m2).view(np.uint8)
    result, impl, _ = onednn.run(case, expect.src_raw, expect.dst_raw)
    clayout, _ = run_clayout(problem, cl_engine)
    assert np.all(clayout.view(ml_dtypes.float8_e5m2) == 2.0)
    _shows_here(lib, impl, "jit", "onednn_f8_sum_dropped")
    got = result.view(ml_dtypes.float8_e5m2).astype(np.float32)
    assert np.any(got == 1.0), f"oneDNN ({impl}) now adds the sum everywhere: drop the class"


def test_onednn_narrow_scales_reproducer(cl_engine, onednn):
    case = Case(1, 3, "reorder", (4,), "f32", "f32", Layout("a"), Layout("a"),
                src_scales=Values(0, (0.5,), "f16"))
    run, at = _both(onednn, cl_engine, case)
    want = run.problem.expect.want.reshape(-1)
    got = run.onednn.view(np.float32)[at]
    assert run.onednn_impl.startswith("simple") and not np.array_equal(got, want), \
        "oneDNN now reads an f16 scale right"


def test_onednn_4bit_destination_reproducer(cl_engine, onednn):
    case = Case(1, 4, "reorder", (8,), "s8", "s4", Layout("a"), Layout("a"))
    run, at = _both(onednn, cl_engine, case)
    assert not np.array_equal(run.onednn, run.clayout), "oneDNN now writes s8 -> s4 right"


def test_onednn_shuffle_of_4_bit_types_crashes():
    """oneDNN's CPU shuffle of s4 corrupts the heap (the process aborts):
    the suite never runs one in its own process (tests/onednn_runs.py)."""
    script = textwrap.dedent("""
        import dnnl
        lib = dnnl.onednn()
        for _ in range(20):
            d = lib.memory_desc((3, 12), "s4", "AB16b16a")
            p = lib.shuffle(d, d, 1, 6, backward=True)
            src, dst = lib.memory(d), lib.memory(d)
            p.execute(p.bind(src, dst))
        print("survived")
        """)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    if "Unavailable" in done.stderr:
        pytest.skip(done.stderr.strip().splitlines()[-1])
    assert done.returncode != 0 and "survived" not in done.stdout, \
        "oneDNN's s4 shuffle no longer crashes: let tests/onednn_runs.py run it"


def test_onednn_4bit_source_writes_past_its_destination():
    """u4 12x1 into a bf16 window of 12 in a parent of 15: oneDNN's
    simple:any writes the parent's element past the window (and past a
    buffer's end it can corrupt the heap: the suite runs oneDNN in a worker
    process, and guards the bytes after each destination buffer)."""
    script = textwrap.dedent("""
        import numpy as np
        import dnnl
        lib = dnnl.onednn()
        src = lib.memory_desc((12, 1), "u4", "ab")
        dst = lib.memory_desc((12, 1), "bf16", "ba", parent=(15, 1), offsets=(2, 0))
        p = lib.reorder(src, dst)
        parent = lib.memory(dst.parent, np.full(30, 0x55, np.uint8))
        p.execute(p.bind(lib.memory(src, np.arange(6, dtype=np.uint8)),
                         lib.memory(dst, like=parent)))
        after = parent.read()
        print(p.impl, "outside changed:", bool((after[28:30] != 0x55).any()))
        """)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    if "Unavailable" in done.stderr:
        pytest.skip(done.stderr.strip().splitlines()[-1])
    assert done.returncode != 0 or "outside changed: True" in done.stdout, \
        f"oneDNN no longer writes past the window ({done.stdout.strip()}): review the " \
        f"class onednn_4bit_simple_any"


def test_onednn_failed_f8_primitive_fails_every_later_one():
    """s32 10x1 BA2b4a into f8_e4m3: oneDNN's primitive creation returns
    dnnl_runtime_error, and every later creation in the process (f32 ab to
    ba) fails too: the suite's worker process starts again after one
    (tests/onednn_side.py)."""
    script = textwrap.dedent("""
        import dnnl
        lib = dnnl.onednn()
        def create(dims, sdt, ddt, stag, dtag):
            try:
                lib.reorder(lib.memory_desc(dims, sdt, stag), lib.memory_desc(dims, ddt, dtag))
                return "ok"
            except dnnl.DnnlError as e:
                return e.status
        print(create((4, 4), "f32", "f32", "ab", "ba"),
              create((10, 1), "s32", "f8_e4m3", "BA2b4a", "BA2b4a"),
              create((4, 4), "f32", "f32", "ba", "ab"), lib.isa)
        """)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    if "Unavailable" in done.stderr:
        pytest.skip(done.stderr.strip().splitlines()[-1])
    *statuses, isa = done.stdout.split() or ["(nothing)"]
    if statuses == ["ok", "dnnl_unimplemented", "ok"]:
        pytest.skip(f"oneDNN implements no s32 -> f8_e4m3 reorder with the ISA it uses on "
                    f"this CPU ({isa}): the failing creation cannot show here")
    assert statuses == ["ok", "dnnl_runtime_error", "dnnl_runtime_error"], \
        f"oneDNN changed ({done.stdout.strip()} {done.stderr[-300:]}): review onednn_side.py"


def test_the_worker_starts_again_after_a_poisoning_problem(onednn, lib):
    case = Case(1, 9, "reorder", (10, 1), "s32", "f8_e4m3", Layout("BA2b4a"), Layout("BA2b4a"))
    problem = Prepared(case)
    before = onednn.restarts
    with pytest.raises(OneDNNRefuses) as refusal:
        onednn.run(case, problem.expect.src_raw, problem.expect.dst_raw)
    if refusal.value.reason.startswith("unimplemented"):
        pytest.skip(f"oneDNN implements no s32 -> f8_e4m3 reorder with the ISA it uses on "
                    f"this CPU ({lib.isa}): no problem poisons its process here")
    assert refusal.value.reason.startswith("runtime_error"), refusal.value.reason
    assert onednn.restarts == before + 1
    plain = Case(1, 10, "reorder", (4, 4), "f32", "f32", Layout("ab"), Layout("ba"))
    problem = Prepared(plain)
    result, impl, _ = onednn.run(plain, problem.expect.src_raw, problem.expect.dst_raw)
    assert result.size == 64


def test_the_worker_gives_up_on_a_problem_past_its_timeout():
    """A oneDNN call that does not come back (here: a timeout far shorter
    than a 4 MB transpose takes) is a refusal, not a hung suite; the worker
    starts again."""
    case = Case(1, 12, "reorder", (1024, 1024), "f32", "f32", Layout("ab"), Layout("ba"))
    problem = Prepared(case)
    try:
        worker = OneDNNWorker()
    except dnnl.Unavailable as error:
        _unavailable(error)
    try:
        worker.timeout = 1e-6
        with pytest.raises(OneDNNRefuses, match="hangs"):
            worker.run(case, problem.expect.src_raw, problem.expect.dst_raw)
        assert worker.restarts == 1
        worker.timeout = 120.0
        result, _, _ = worker.run(case, problem.expect.src_raw, problem.expect.dst_raw)
        assert result.size == problem.expect.dst_raw.size
    finally:
        worker.close()
