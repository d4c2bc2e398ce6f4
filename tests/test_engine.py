"""Engine and Stream."""
import pytest

import clayout as cly


def test_host_engine_says_host(host_engine):
    assert repr(host_engine) == "<Engine host>"
    assert cly.Stream(host_engine).queue is None


def test_opencl_engine_names_its_device(cl_engine):
    assert "opencl" in repr(cl_engine) and cl_engine.caps.name in repr(cl_engine)
    profile = cl_engine.profile
    assert profile.max_work_group_size >= 1 and profile.kind in ("cpu", "gpu", "accelerator")
    assert profile.strategy in ("cpu", "gpu") and profile.compute_units >= 1


def test_profile_is_read_once_per_device(cl_engine):
    other = cly.Engine(cl_engine.kind, device=cl_engine.device)
    assert other.profile is cl_engine.profile


def test_strategy_can_be_forced(cl_engine, monkeypatch):
    monkeypatch.setenv("CLAYOUT_STRATEGY", "gpu")
    assert cly.Engine(cl_engine.kind, device=cl_engine.device).profile.strategy == "gpu"
    monkeypatch.setenv("CLAYOUT_STRATEGY", "fast")
    with pytest.raises(cly.InvalidArgumentError, match="CLAYOUT_STRATEGY='fast'"):
        cly.Engine(cl_engine.kind, device=cl_engine.device)


def test_default_engine_prefers_opencl(cl_engine, monkeypatch):
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    assert cly.Engine().kind == "opencl"


def test_pyopencl_ctx_picks_the_device(cl_engine, monkeypatch):
    monkeypatch.setenv("PYOPENCL_CTX", "0:0")
    assert cly.Engine().kind == "opencl"


def test_stream_adopts_a_queue_of_its_context(cl_engine):
    import pyopencl as cl

    queue = cl.CommandQueue(cl_engine.context)
    assert cly.Stream(cl_engine, queue=queue).queue is queue
    other = cl.Context([cl_engine.device])
    with pytest.raises(cly.InvalidArgumentError, match="another context"):
        cly.Stream(cl_engine, queue=cl.CommandQueue(other))


def test_unknown_engine_kind_is_named():
    with pytest.raises(cly.InvalidArgumentError, match="'cuda'"):
        cly.Engine("cuda")
