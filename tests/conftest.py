"""Engines for the tests. Under CI=true a missing OpenCL device fails the
tests that need one; elsewhere they are skipped with the reason.

CLAYOUT_TEST_PLATFORM=pocl|intel runs the suite on that OpenCL
implementation alone: it points OCL_ICD_VENDORS (before anything asks
OpenCL for its platforms) at the ICD folder scripts/ensure_intel_opencl.sh
wrote in the virtual environment, so every engine, and every Python the
tests start, sees that implementation and no other. Unset: the system's
ICD files decide.

CLAYOUT_TEST_PLATFORM=sycl runs on Intel's OpenCL runtime too, but through
SYCL (dpctl): the device engine of every fixture (``cl_engine``, the
device side of ``engine``) is then ``Engine("sycl")`` on its CPU device,
whose memories are USM."""
import atexit
import dataclasses
import os
import shutil
import sys
import tempfile

import pytest

#: The implementations CLAYOUT_TEST_PLATFORM names, by their platform's name.
PLATFORMS = {"pocl": "Portable Computing Language", "intel": "Intel(R) OpenCL",
             "sycl": "Intel(R) OpenCL"}
#: The ICD folder each one uses.
ICD_FOLDERS = {"pocl": "pocl", "intel": "intel", "sycl": "intel"}
TEST_PLATFORM = os.environ.get("CLAYOUT_TEST_PLATFORM", "")
#: What the device implementations' names start with on the tests' device engine.
DEVICE_IMPL = "sycl:" if TEST_PLATFORM == "sycl" else "ocl:"
if TEST_PLATFORM:
    _folder = os.path.join(sys.prefix, "etc", "OpenCL", "clayout",
                           ICD_FOLDERS.get(TEST_PLATFORM, TEST_PLATFORM))
    if TEST_PLATFORM not in PLATFORMS or not os.path.isdir(_folder):
        raise pytest.UsageError(
            f"CLAYOUT_TEST_PLATFORM={TEST_PLATFORM!r}: expected one of {sorted(PLATFORMS)} "
            f"with its ICD folder {_folder} (bash scripts/ensure_intel_opencl.sh writes it)")
    os.environ["OCL_ICD_VENDORS"] = _folder

# The persistent cache (clayout/disk_cache.py) of this run alone, empty at
# the start: no test depends on what an earlier run or the user left there,
# and each kernel the suite builds twice is loaded from its binary the second time.
if "CLAYOUT_CACHE" not in os.environ:
    os.environ["CLAYOUT_CACHE"] = tempfile.mkdtemp(prefix="clayout-test-cache-")
    atexit.register(shutil.rmtree, os.environ["CLAYOUT_CACHE"], ignore_errors=True)

# Tiers (clayout/tiers.py) build kernels on a background thread: each test's
# primitives build their own kernels instead, so a run does each build once
# and its timing is its own; tests/test_tiers.py turns them on.
os.environ.setdefault("CLAYOUT_TIERS", "off")

import clayout as cly  # noqa: E402 - after OCL_ICD_VENDORS
from clayout.engine import opencl_devices  # noqa: E402


def _sycl_engine():
    try:
        return cly.Engine("sycl", device="opencl:cpu")
    except (ImportError, cly.UnimplementedError) as error:
        if os.environ.get("CI"):
            pytest.fail(f"{error} -- CI requires the SYCL engine", pytrace=False)
        pytest.skip(str(error))


def _opencl_engine():
    if TEST_PLATFORM == "sycl":
        return _sycl_engine()
    if not opencl_devices():
        message = "no OpenCL device (install pocl-opencl-icd)"
        if os.environ.get("CI"):
            pytest.fail(message + " -- CI requires one", pytrace=False)
        pytest.skip(message)
    engine = cly.Engine("opencl")
    if TEST_PLATFORM and engine.device.platform.name != PLATFORMS[TEST_PLATFORM]:
        pytest.fail(f"CLAYOUT_TEST_PLATFORM={TEST_PLATFORM}, but the engine runs on "
                    f"{engine.device.platform.name!r}", pytrace=False)
    return engine


def pytest_collection_modifyitems(config, items):
    """Tests marked ``needs_intel`` run on Intel's runtime (the intel and
    sycl passes): the PoCL pass leaves them out; tests marked
    ``opencl_only`` use pyopencl objects with the device engine: the SYCL
    pass leaves them out. Deselected, not skipped: another pass runs them."""
    marker = {"pocl": "needs_intel", "sycl": "opencl_only"}.get(TEST_PLATFORM)
    if marker is None:
        return
    dropped = [item for item in items if item.get_closest_marker(marker)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not item.get_closest_marker(marker)]


@pytest.fixture(scope="session")
def oclgrind():
    """The oclgrind command (a simulated device that reports out-of-bounds
    accesses and races), run as `oclgrind python ...`. CI installs it and
    fails without it; elsewhere the test is skipped with the reason."""
    path = shutil.which("oclgrind")
    if path is None:
        message = "oclgrind is not installed (apt-get install oclgrind)"
        if os.environ.get("CI"):
            pytest.fail(message + " -- CI requires it", pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def host_engine():
    return cly.Engine("host")


@pytest.fixture(scope="session")
def cl_engine():
    return _opencl_engine()


@pytest.fixture(scope="session", params=["host", "opencl"])
def engine(request):
    """Each test that takes `engine` runs on the host and on OpenCL."""
    if request.param == "host":
        return cly.Engine("host")
    return _opencl_engine()


#: One engine per strategy and device for the whole run: each Engine makes
#: its own OpenCL context, and on NVIDIA's driver a context per test ran
#: out of host memory ("Context failed: OUT_OF_HOST_MEMORY") a few hundred
#: tests into the suite.
_STRATEGY_ENGINES = {}


def _engine_with_strategy(cl_engine, strategy, compute_units=None, skip_shapes=()):
    """cl_engine's device planned with ``strategy``; with ``compute_units``,
    planned as for a device of that many (the plans of small problems
    depend on it: a test of a kernel's shape pins it, so that it holds on
    a GPU of 132 as on a CPU of 2); with ``skip_shapes``, planned past
    those kernel shapes (gpu/shapes.py), and without tuned tables (so that
    a test of the next shape still reaches it)."""
    # (cl_engine lives as long as the run, so its id stays its own)
    key = (strategy, compute_units, skip_shapes, id(cl_engine))
    if key not in _STRATEGY_ENGINES:
        saved = os.environ.get("CLAYOUT_STRATEGY")
        os.environ["CLAYOUT_STRATEGY"] = strategy  # read when the engine is made
        try:
            engine = cly.Engine(cl_engine.kind, device=cl_engine.device)
        finally:
            if saved is None:
                del os.environ["CLAYOUT_STRATEGY"]
            else:
                os.environ["CLAYOUT_STRATEGY"] = saved
        if compute_units is not None:
            engine.profile = dataclasses.replace(engine.profile, compute_units=compute_units)
        if skip_shapes:
            tuning = dataclasses.replace(engine.profile.tuning, skip_shapes=tuple(skip_shapes))
            engine.profile = dataclasses.replace(engine.profile, tuning=tuning, tuned=())
        _STRATEGY_ENGINES[key] = engine
    return _STRATEGY_ENGINES[key]


@pytest.fixture
def cpu_engine(cl_engine):
    """The OpenCL device with the CPU strategy's plans, whatever
    CLAYOUT_STRATEGY says (for tests of those kernels' shape)."""
    return _engine_with_strategy(cl_engine, "cpu")


@pytest.fixture
def gpu_engine(cl_engine):
    """The OpenCL device with the GPU strategy's plans (striped and tiled
    kernels), whatever its kind and CLAYOUT_STRATEGY say."""
    return _engine_with_strategy(cl_engine, "gpu")


@pytest.fixture
def kernels_decline(monkeypatch):
    """Call it with data types: the generated kernels then decline every
    problem with one of them, which runs on the host fallback instead (for
    tests of that path, now that every type but e8m0 has a kernel)."""
    from clayout.implementations import GeneratedKernel

    original = GeneratedKernel.decline.__func__

    def decline_types(*types):
        def decline(cls, problem, engine):
            hit = {problem.src_md.data_type, problem.dst_md.data_type} & set(types)
            if hit and engine.is_device:
                return f"{sorted(hit)[0]}: declined by the test"
            return original(cls, problem, engine)
        monkeypatch.setattr(GeneratedKernel, "decline", classmethod(decline))
    return decline_types
