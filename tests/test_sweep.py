"""A randomized exactness sweep of reorders and shuffles (issue 33).

Seeded problems (tests/sweep_cases.py: layouts with 0-3 inner blocks, tails,
gapped strides, windows of parents, 1-6 dims, every pair of twelve types,
scales, zero points, sum, shuffles) run on the pass's device engine and on
the host engine (tests/sweep_run.py); every destination buffer is checked
whole against tests/reference.py (tests/sweep_check.py). Their kernels for
CPU_PROFILE, GPU_PROFILE and the device with the strategy the pass does not
run are built too, without running (tests/sweep_builds.py).

Settings (environment):

* CLAYOUT_SWEEP_PROBLEMS: problems per pass (default: DEFAULT_PROBLEMS, sized
  to CI's time; `make fuzz` runs thousands);
* CLAYOUT_SWEEP_SEED: the seed (default SEED). Each pass (implementation and
  strategy) takes its own range of indices of that seed, so passes cover
  different problems; problem (seed, index) is the same anywhere;
* CLAYOUT_SWEEP_ONLY: indices (comma-separated) to run alone: a failure
  prints the command that reruns it.
"""
import math
import os

import numpy as np
import pytest

import reference as ref
from conftest import TEST_PLATFORM
from small_types_reference import all_codes, decode, encode, is_nan_code
from sweep_builds import KernelBuilds
from sweep_cases import BLOCKS, NIBBLES, TYPES, Case, Layout, make_case
from sweep_check import Expectation, geometry, round_small, store, zero_elements
from sweep_run import Sweep

#: Problems per pass when CLAYOUT_SWEEP_PROBLEMS is not set, by implementation.
#: A problem takes about 0.11 s on PoCL (0.12 s with the GPU strategy), 0.10 s
#: on Intel's runtime and on SYCL, one core each (building kernels is most of
#: it): the four passes of `make test` spend about 4.5 minutes on the sweep,
#: half that of CI's wall time (two passes run at a time), and each strategy
#: gets 2600 problems, run or built.
DEFAULT_PROBLEMS = {"pocl": 500, "intel": 800, "sycl": 800}
SEED = 33
CHUNK = 50
#: Where each pass's indices start, by (implementation, strategy).
PASS_START = {("pocl", "cpu"): 0, ("pocl", "gpu"): 10**6, ("intel", "cpu"): 2 * 10**6,
              ("intel", "gpu"): 3 * 10**6, ("sycl", "cpu"): 4 * 10**6,
              ("sycl", "gpu"): 5 * 10**6, ("", "cpu"): 6 * 10**6, ("", "gpu"): 7 * 10**6}


def _indices():
    only = os.environ.get("CLAYOUT_SWEEP_ONLY", "").strip()
    if only:
        return [int(i) for i in only.split(",")]
    count = int(os.environ.get("CLAYOUT_SWEEP_PROBLEMS", DEFAULT_PROBLEMS.get(TEST_PLATFORM,
                                                                              500)))
    strategy = os.environ.get("CLAYOUT_STRATEGY", "").strip().lower() or "cpu"
    start = PASS_START.get((TEST_PLATFORM, strategy), 0)
    return list(range(start, start + count))


SWEEP_SEED = int(os.environ.get("CLAYOUT_SWEEP_SEED", SEED))
INDICES = _indices()
CHUNKS = [INDICES[i:i + CHUNK] for i in range(0, len(INDICES), CHUNK)]


@pytest.fixture(scope="module")
def sweep(cl_engine, request):
    """The sweep's counts and failures, and the builds for the other
    profiles; the counts are printed when the module ends."""
    state = Sweep()
    builds = KernelBuilds(cl_engine, state.counts)
    yield state, builds
    plugins = request.config.pluginmanager
    reporter, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\nsweep (seed {SWEEP_SEED}, {cl_engine!r}): {state.summary()}")


@pytest.mark.parametrize("indices", CHUNKS, ids=[f"{c[0]}-{c[-1]}" for c in CHUNKS])
def test_sweep(sweep, cl_engine, host_engine, indices):
    state, builds = sweep
    before = len(state.failures)
    state.run_chunk([make_case(SWEEP_SEED, i) for i in indices], cl_engine, host_engine, builds)
    new = state.failures[before:]
    assert not new, f"{len(new)} failures of {len(indices)} problems (seed {SWEEP_SEED}):\n\n" \
        + "\n\n".join(new)


# =============================================================================
# The sweep's own pieces, without a device
# =============================================================================

def _codes(values, dt):
    """The codes (ints) of f8_e4m3 / f4_e2m1 values."""
    if dt == "f4_e2m1":
        return ref.nibble_codes(values, dt).astype(int).tolist()
    return np.asarray(values).view(np.uint8).astype(int).tolist()


@pytest.mark.parametrize("dt", ["f8_e4m3", "f4_e2m1"])
def test_round_small_agrees_with_the_encoder(dt):
    """round_small (vectorised) against small_types_reference.encode (exact
    rational arithmetic) on every code's value, the midpoints between
    neighbours and the f32 values next to them, overflow, inf, NaN, zeros."""
    values = sorted({abs(decode(c, dt)) for c in all_codes(dt) if not is_nan_code(c, dt)})
    xs = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e30, 2.0**-20]
    for a, b in zip(values, values[1:] + [values[-1] * 1.0625 + 1]):
        mid = (a + b) / 2
        xs += [a, mid, float(np.nextafter(np.float32(mid), np.float32(0))),
               float(np.nextafter(np.float32(mid), np.float32(np.inf)))]
    xs += [-x for x in xs]
    got = _codes(round_small(np.array(xs), dt), dt)
    for x, g in zip(xs, got):
        w = encode(x, dt)
        assert g == w or (is_nan_code(w, dt) and is_nan_code(g, dt)), \
            f"{dt} {x!r}: round_small gives {g:#x}, the encoder {w:#x}"


@pytest.mark.parametrize("dims, tag", [((5, 7), "AB4b3a"), ((4, 5, 7), "Cba3c"),
                                       ((2, 17, 5, 3), "aCdB16b3c"), ((7, 18), "BA16b5a"),
                                       ((6, 3, 17, 2), "bdCA2c8c5a"), ((3, 0, 2), "Bac4b")])
def test_geometry_of_tags_is_the_reference_layout(dims, tag):
    at, pad = geometry(dims, Layout(tag))
    assert np.array_equal(at, ref.element_offsets(dims, tag))
    assert sorted(pad.tolist()) == np.nonzero(ref.padding_mask(dims, tag))[0].tolist()


def test_geometry_of_a_window_reaching_the_padded_end():
    # The window's own padding is channels 20..23 of its parent's last block;
    # channels 0..15 are the parent's and no padding of the window's.
    at, pad = geometry((2, 4, 3), Layout("aBc8b", None, (2, 20, 3), (0, 16, 0)))
    every = ref.element_offsets((2, 24, 3), "aBc8b")
    assert np.array_equal(at, every[:, 16:20])
    assert sorted(pad.tolist()) == sorted(every[:, 20:24].reshape(-1).tolist())


def _right_result(expect):
    """The destination buffer a correct run leaves (from the reference)."""
    case = expect.case
    out = expect.dst_raw.copy()
    zero_elements(out, expect.dst_pad, case.ddt)
    store(out, expect.dst_at, expect.want, case.ddt)
    return out


def _span(layout, dims):
    """Elements from the buffer's start to past its last element or padding."""
    whole = Layout(layout.tag, layout.strides)
    at, pad = geometry(layout.parent or dims, whole)
    return max(int(np.max(at, initial=-1)), int(np.max(pad, initial=-1))) + 1


@pytest.mark.parametrize("dt, layout, dims", [
    ("f32", Layout("aBc4b", (69, 22, 5), (3, 9, 4), (1, 4, 0)), (2, 5, 3)),
    ("u4", Layout("Ab3a", None, (7, 5), (3, 1)), (4, 3)),
    ("bf16", Layout(None, (40, 1, 8)), (3, 5, 4)),
])
def test_the_check_catches_each_kind_of_wrong_byte(dt, layout, dims):
    """A right buffer passes; one changed element, padding, gap or parent
    byte (nibble for u4) fails."""
    case = Case(1, 0, "reorder", dims, "f32", dt, Layout("abc"[:len(dims)]), layout)
    size = _span(layout, dims)
    expect = Expectation(case, math.prod(dims) * 4, (size + 1) // 2 if dt in NIBBLES else
                         size * ref.itemsize(dt), np.random.default_rng(5))
    right = _right_result(expect)
    expect.check(right)
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(np.asarray(expect.want).astype(np.float64)).reshape(-1)
    elements = expect.dst_at.reshape(-1)
    places = {"element": int(elements[np.argmax(finite)]),
              "gap or parent": min(set(range(size)) - set(elements.tolist())
                                   - set(expect.dst_pad.tolist()))}
    if expect.dst_pad.size:
        places["padding"] = int(expect.dst_pad[0])
    assert len(places) == 3 or layout.tag is None
    for what, k in places.items():
        wrong = right.copy()
        if dt in NIBBLES:
            wrong[k // 2] ^= 0x1 << (4 * (k % 2))
        else:
            wrong[k * ref.itemsize(dt)] ^= 0x40  # changes a bf16's or an f32's value
        with pytest.raises(AssertionError):
            expect.check(wrong)
            pytest.fail(f"a changed {what} byte passed the check")


def test_the_problems_cover_the_space():
    """The first 1500 problems of a seed hold every type on both sides,
    0-3 inner blocks, blocks of 3 and 5, strides, windows, every attribute,
    backward shuffles and refusals; the same (seed, index) is the same problem."""
    cases = [make_case(7, i) for i in range(1500)]
    assert make_case(7, 11) == cases[11]
    reorders = [c for c in cases if c.kind == "reorder"]
    assert {c.sdt for c in reorders} == set(TYPES) == {c.ddt for c in reorders}
    layouts = [lay for c in cases for lay in (c.src, c.dst) if lay is not None]
    blocks = {len(ref.parse_tag(lay.tag)[1]) for lay in layouts if lay.tag}
    assert blocks == {0, 1, 2, 3}
    sizes = {s for lay in layouts if lay.tag for _, s in ref.parse_tag(lay.tag)[1]}
    assert set(BLOCKS) <= sizes
    assert any(lay.strides and lay.tag is None for lay in layouts)
    assert any(lay.strides and lay.tag for lay in layouts)
    assert any(lay.parent for lay in layouts)
    for name in ("src_scales", "dst_scales", "src_zero_points", "dst_zero_points", "sum_beta"):
        assert any(getattr(c, name) is not None for c in reorders), name
    assert any(c.shuffle and c.shuffle[2] for c in cases)
    assert any(c.refusal for c in cases)
    assert max(len(c.dims) for c in cases) == 6
