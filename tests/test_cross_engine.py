"""Cross-engine reorder: a host source into an OpenCL destination (cpu2gpu)
and back (gpu2cpu), in one primitive. Results against tests/reference.py;
bytes outside the destination's elements; every way it runs (the device
converts, the host converts, one transfer); events and the host memories
they guard; errors; threads."""
import logging
import re
import threading
import time

import numpy as np
import pyopencl as cl
import pytest

import clayout as cly
from reference import (assert_bytes, assert_padding_zero, assert_same, element_offsets, is_int,
                       logical_of, per_slice, raw_of, ref_reorder, sample_values)

DIMS = (2, 19, 3, 5)  # 19 channels: a tail in the 16-blocked layouts
DIRECTIONS = ["cpu2gpu", "gpu2cpu"]
COMPLETE = cl.command_execution_status.COMPLETE


def sides(direction, host_engine, cl_engine):
    """(src engine, dst engine) of a direction."""
    return (host_engine, cl_engine) if direction == "cpu2gpu" else (cl_engine, host_engine)


def convert(variant, monkeypatch):
    """Make the device or the host convert (CLAYOUT_CROSS_CONVERT); "" lets
    clayout choose."""
    if variant:
        monkeypatch.setenv("CLAYOUT_CROSS_CONVERT", variant)
    else:
        monkeypatch.delenv("CLAYOUT_CROSS_CONVERT", raising=False)


def run(r, src, dst, wait_for=None):
    s = cly.Stream(r.engine)
    event = r.execute(s, src, dst, wait_for=wait_for)
    s.wait()
    return event


# =============================================================================
# Results, both directions, every way of running
# =============================================================================

CASES = [  # sdt, ddt, src tag, dst tag, attributes
    ("f32", "f32", "abcd", "aBcd16b", {}),
    ("f32", "f32", "abcd", "abcd", {}),
    ("bf16", "bf16", "aBcd16b", "acdb", {}),
    ("f32", "s8", "abcd", "acdb", {"src_scales": ("scale", 0b10), "dst_zero_points": ("zp", 0)}),
    ("s8", "f32", "aBcd16b", "abcd", {"src_zero_points": ("zp", 0b10), "dst_scales": ("scale", 0)}),
    ("f32", "bf16", "acdb", "abcd", {}),
    ("u8", "f16", "abcd", "aBcd16b", {"src_scales": ("scale", 0)}),
    ("s32", "u8", "abcd", "abcd", {}),
    ("f16", "s32", "acdb", "abcd", {"dst_scales": ("scale", 0b10)}),
]


def attr_values(spec, rng):
    """(clayout Attr, reference keyword arguments) of a case's attributes."""
    kw, ref = {}, {}
    names = {"src_scales": "src_scale", "dst_scales": "dst_scale",
             "src_zero_points": "src_zp", "dst_zero_points": "dst_zp"}
    for name, (kind, mask) in spec.items():
        count = int(np.prod([DIMS[d] for d in range(4) if mask >> d & 1]))
        if kind == "scale":
            values = rng.uniform(0.1, 3.0, count).astype(np.float32)
            kw[name] = cly.Scales(values, mask=mask)
        else:
            values = rng.integers(-5, 6, count).astype(np.int32)
            kw[name] = cly.ZeroPoints(values, mask=mask)
        ref[names[name]] = per_slice(values, mask, DIMS)
    return (cly.Attr(**kw) if kw else None), ref


@pytest.mark.parametrize("variant", ["", "device", "host"])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("sdt, ddt, stag, dtag, spec", CASES,
                         ids=[f"{c[0]}-{c[2]}-to-{c[1]}-{c[3]}{'-attr' if c[4] else ''}"
                              for c in CASES])
def test_results_match_the_reference(host_engine, cl_engine, monkeypatch, direction, variant,
                                     sdt, ddt, stag, dtag, spec):
    convert(variant, monkeypatch)
    rng = np.random.default_rng(len(sdt + ddt + stag + dtag))
    values = sample_values(sdt, DIMS, rng, specials=not spec)
    attr, ref = attr_values(spec, rng)
    src_engine, dst_engine = sides(direction, host_engine, cl_engine)
    src_md, dst_md = cly.MemoryDesc(DIMS, sdt, tag=stag), cly.MemoryDesc(DIMS, ddt, tag=dtag)
    src = cly.Memory(src_md, src_engine, raw=raw_of(values, stag, sdt, pad_byte=0x5A))
    dst = cly.Memory(dst_md, dst_engine, raw=np.full(dst_md.size, 0x7F, np.uint8))
    r = cly.Reorder(src_md, dst_md, src_engine=src_engine, dst_engine=dst_engine, attr=attr)
    assert r.impl.startswith(f"cross:{direction} ") and r.engine == cl_engine
    if variant == "device":
        assert ("upload+ocl:" if direction == "cpu2gpu" else "+download") in r.impl
    elif variant == "host":
        assert "host:numpy" in r.impl
    elif sdt == ddt and stag == dtag and not spec:  # one transfer, nothing to convert
        assert r.impl == f"cross:{direction} {'upload' if direction == 'cpu2gpu' else 'download'}"
    else:  # measured: the device converts wherever it has a kernel
        assert "ocl:generated" in r.impl
    event = run(r, src, dst)
    assert isinstance(event, cl.Event) and event.command_execution_status == COMPLETE
    want, pre = ref_reorder(values, sdt, ddt, **ref)
    raw = dst.raw()
    assert_same(logical_of(raw, DIMS, dtag, ddt), want, src=values, pre=pre,
                quantized=is_int(ddt), any_nan=True)
    assert_padding_zero(raw, DIMS, dtag, ddt)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_sum_reads_the_old_destination_on_its_own_engine(host_engine, cl_engine, monkeypatch,
                                                         direction):
    convert("", monkeypatch)
    rng = np.random.default_rng(3)
    values = sample_values("f32", DIMS, rng, specials=False)
    old = rng.integers(-100, 100, DIMS).astype(np.int8)
    src_engine, dst_engine = sides(direction, host_engine, cl_engine)
    src_md = cly.MemoryDesc(DIMS, "f32", tag="acdb")
    dst_md = cly.MemoryDesc(DIMS, "s8", tag="aBcd16b")
    src = cly.Memory(src_md, src_engine, raw=raw_of(values, "acdb", "f32"))
    dst = cly.Memory(dst_md, dst_engine, raw=raw_of(old, "aBcd16b", "s8", pad_byte=0x11))
    scales = rng.uniform(0.5, 2, 19).astype(np.float32)
    attr = cly.Attr(src_scales=cly.Scales(scales, mask=0b10), dst_zero_points=3, sum_beta=0.5)
    r = cly.Reorder(src_md, dst_md, src_engine=src_engine, dst_engine=dst_engine, attr=attr)
    # The old values live beside dst: on the device going up, on the host coming down.
    assert r.impl == ("cross:cpu2gpu upload+ocl:generated" if direction == "cpu2gpu"
                      else "cross:gpu2cpu download+host:numpy")
    assert "sum post-op reads dst's old values" in r.explain()
    run(r, src, dst)
    want, pre = ref_reorder(values, "f32", "s8", src_scale=per_slice(scales, 0b10, DIMS),
                            dst_zp=np.int32(3), beta=0.5, old=old)
    raw = dst.raw()
    assert_same(logical_of(raw, DIMS, "aBcd16b", "s8"), want, pre=pre, quantized=True)
    assert_padding_zero(raw, DIMS, "aBcd16b", "s8")


# =============================================================================
# The destination's bytes outside its elements
# =============================================================================

PARENT = (3, 24, 4, 6)


def windows():
    """(name, dst descriptor, its element offsets in f32 units of the
    parent buffer, parent elements): a channel window (gaps between its
    rows), an outer window (one run, not the whole buffer), strides with gaps."""
    parent = cly.MemoryDesc(PARENT, "f32", tag="abcd")
    full = element_offsets(PARENT, "abcd")
    dims = (2, 16, 4, 6)
    channel = parent.submemory(dims, (1, 5, 0, 0))
    outer = parent.submemory((1, 24, 4, 6), (2, 0, 0, 0))
    strides = (1000, 50, 12, 2)
    strided = cly.MemoryDesc(dims, "f32", strides=strides)
    return [
        ("channel window", channel, full[1:3, 5:21], parent.size // 4),
        ("outer window", outer, full[2:3], parent.size // 4),
        ("strided", strided, element_offsets(dims, strides=strides), strided.size // 4),
    ]


@pytest.mark.parametrize("variant", ["", "device", "host"])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("window", [0, 1, 2], ids=["channel-window", "outer-window", "strided"])
def test_bytes_outside_the_destination_are_untouched(host_engine, cl_engine, monkeypatch,
                                                     direction, variant, window):
    convert(variant, monkeypatch)
    name, dst_md, offsets, parent_elements = windows()[window]
    rng = np.random.default_rng(window)
    values = sample_values("s8", dst_md.dims, rng, specials=False)
    src_engine, dst_engine = sides(direction, host_engine, cl_engine)
    src_md = cly.MemoryDesc(dst_md.dims, "s8", tag="acdb")
    src = cly.Memory(src_md, src_engine, raw=raw_of(values, "acdb", "s8"))
    before = np.full(parent_elements * 4, 0xA5, np.uint8)
    parent = cly.Memory(cly.MemoryDesc((before.size,), "u8"), dst_engine, raw=before)
    dst = cly.Memory(dst_md, dst_engine, buffer=parent)
    attr = cly.Attr(src_scales=0.5)
    r = cly.Reorder(src_md, dst_md, src_engine=src_engine, dst_engine=dst_engine, attr=attr)
    if direction == "cpu2gpu" and window != 1:  # an upload of the span would write the gaps
        assert "upload+ocl:generated" in r.impl
    run(r, src, dst)
    got = parent.raw().view(np.float32)
    want, pre = ref_reorder(values, "s8", "f32", src_scale=np.float32(0.5))
    assert_same(got[offsets], want, what=name)
    outside = np.ones(parent_elements, bool)
    outside[offsets.reshape(-1)] = False
    assert_bytes(got[outside].view(np.uint8), before.view(np.float32)[outside].view(np.uint8),
                 what=f"bytes outside the {name}")


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("variant", ["device", "host"])
def test_a_4bit_window_keeps_the_nibbles_beside_it(host_engine, cl_engine, monkeypatch,
                                                   direction, variant):
    """u4 columns 1..3 of a 5x5 matrix: bytes shared with elements outside."""
    convert(variant, monkeypatch)
    parent_md = cly.MemoryDesc((5, 5), "u4", tag="ab")
    dst_md = parent_md.submemory((5, 3), (0, 1))
    src_md = cly.MemoryDesc((5, 3), "f32", tag="ab")
    values = np.arange(15, dtype=np.float32).reshape(5, 3) % 16
    src_engine, dst_engine = sides(direction, host_engine, cl_engine)
    src = cly.Memory.from_numpy(src_md, src_engine, values)
    before = np.full(parent_md.size, 0xCD, np.uint8)
    parent = cly.Memory(parent_md, dst_engine, raw=before)
    dst = cly.Memory(dst_md, dst_engine, buffer=parent)
    run(cly.Reorder(src_md, dst_md, src_engine=src_engine, dst_engine=dst_engine), src, dst)
    got, old = nibbles(parent.raw()), nibbles(before)
    inside = np.zeros(got.size, bool)
    inside[(np.arange(5)[:, None] * 5 + np.arange(1, 4)).reshape(-1)] = True
    assert_same(got[inside].reshape(5, 3), values.astype(np.uint8), what="the window")
    assert_bytes(got[~inside], old[~inside], what="nibbles outside the window")


def nibbles(raw):
    """The 4-bit units of bytes, low nibble first."""
    out = np.empty(raw.size * 2, np.uint8)
    out[0::2], out[1::2] = raw & 0xF, raw >> 4
    return out


# =============================================================================
# Events: never blocking, and the host memories they guard
# =============================================================================

def plain(engine, dims=(4, 32, 8, 8), fill=None, dt="f32"):
    md = cly.MemoryDesc(dims, dt, tag="abcd")
    if fill is None:
        return cly.Memory(md, engine)
    return cly.Memory.from_numpy(md, engine, np.full(dims, fill, md.dtype.numpy))


def in_thread(call):
    """Start ``call()`` in a thread; returns (thread, results list)."""
    results = []
    thread = threading.Thread(target=lambda: results.append(call()), daemon=True)
    thread.start()
    return thread, results


def still_waiting(thread, event=None):
    time.sleep(0.3)
    return thread.is_alive() and (event is None or event.command_execution_status != COMPLETE)


@pytest.mark.parametrize("variant", ["", "host"])
def test_a_download_returns_at_once_and_to_numpy_waits_for_it(host_engine, cl_engine,
                                                              monkeypatch, variant):
    convert(variant, monkeypatch)
    src, dst = plain(cl_engine, fill=2.5), plain(host_engine)
    dst_md = cly.MemoryDesc(src.md.dims, "f16", tag="acdb")
    dst = cly.Memory(dst_md, host_engine)
    r = cly.Reorder(src.md, dst_md, src_engine=cl_engine, dst_engine=host_engine)
    gate = cl.UserEvent(cl_engine.context)
    start = time.perf_counter()
    event = r.execute(cly.Stream(cl_engine), src, dst, wait_for=[gate])
    assert time.perf_counter() - start < 0.2
    reader, got = in_thread(dst.to_numpy)
    raw_reader, raw = in_thread(dst.raw)
    assert still_waiting(reader, event) and raw_reader.is_alive()
    gate.set_status(COMPLETE)
    reader.join(10)
    raw_reader.join(10)
    assert (got[0] == 2.5).all() and got[0].dtype == np.float16
    assert event.command_execution_status == COMPLETE
    assert_bytes(raw[0][:dst_md.size], np.full(dst_md.size // 2, 2.5, np.float16).view(np.uint8))


@pytest.mark.parametrize("variant", ["", "host"])
def test_an_upload_keeps_its_host_source_from_clayouts_writes_until_it_has_read(
        host_engine, cl_engine, monkeypatch, variant):
    convert(variant, monkeypatch)
    src, dst = plain(host_engine, fill=1.0), plain(cl_engine, dt="s8")
    r = cly.Reorder(src.md, dst.md, src_engine=host_engine, dst_engine=cl_engine,
                    attr=cly.Attr(src_scales=3.0))
    gate = cl.UserEvent(cl_engine.context)
    event = r.execute(cly.Stream(cl_engine), src, dst, wait_for=[gate])
    assert event.command_execution_status != COMPLETE
    # A host reorder writing the source waits for the upload to read it.
    writer, _ = in_thread(lambda: cly.reorder(plain(host_engine, fill=7.0), src))
    assert still_waiting(writer, event)
    gate.set_status(COMPLETE)
    writer.join(10)
    assert not writer.is_alive()
    assert (dst.to_numpy() == 3).all()  # the values from before the write
    assert (src.to_numpy() == 7).all()


def test_a_host_memory_goes_down_and_up_again_without_waiting(host_engine, cl_engine):
    a, b = plain(cl_engine, fill=-3.0), plain(cl_engine, dt="bf16")
    middle = cly.Memory(cly.MemoryDesc(a.md.dims, "f32", tag="aBcd16b"), host_engine)
    down = cly.Reorder(a.md, middle.md, src_engine=cl_engine, dst_engine=host_engine)
    up = cly.Reorder(middle.md, b.md, src_engine=host_engine, dst_engine=cl_engine,
                     attr=cly.Attr(dst_scales=2.0))
    gate = cl.UserEvent(cl_engine.context)
    first = down.execute(cly.Stream(cl_engine), a, middle, wait_for=[gate])
    second = up.execute(cly.Stream(cl_engine), middle, b)  # another stream, no wait_for
    # A host reorder reading the host memory waits for the download too.
    copier, copied = in_thread(lambda: cly.reorder(middle, plain(host_engine)))
    assert still_waiting(copier, second) and first.command_execution_status != COMPLETE
    gate.set_status(COMPLETE)
    copier.join(10)
    assert (b.to_numpy().astype(np.float32) == -1.5).all()
    assert second.command_execution_status == COMPLETE


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_wait_for_events_gate_the_reorder_and_a_failed_one_fails_it(host_engine, cl_engine,
                                                                    direction):
    src_engine, dst_engine = sides(direction, host_engine, cl_engine)
    src, dst = plain(src_engine, fill=4.0), plain(dst_engine, dt="u8")
    r = cly.Reorder(src.md, dst.md, src_engine=src_engine, dst_engine=dst_engine)
    s = cly.Stream(cl_engine)
    gate = cl.UserEvent(cl_engine.context)
    event = r.execute(s.queue, src, dst, wait_for=[gate])  # a pyopencl queue is a stream too
    time.sleep(0.2)
    assert event.command_execution_status != COMPLETE
    gate.set_status(COMPLETE)
    event.wait()
    assert (dst.to_numpy() == 4).all()
    failed = cl.UserEvent(cl_engine.context)
    r.execute(s, src, dst, wait_for=[failed])
    failed.set_status(-1)
    with pytest.raises(cly.ExecutionError):
        dst.to_numpy()
    s.wait()


# =============================================================================
# Errors
# =============================================================================

def test_engine_arguments_that_conflict_or_cannot_be_served(host_engine, cl_engine):
    md = cly.MemoryDesc((2, 3), "f32")
    with pytest.raises(cly.InvalidArgumentError, match="engine=.*src_engine=.*alone"):
        cly.Reorder(md, md, engine=cl_engine, src_engine=host_engine)
    with pytest.raises(cly.InvalidArgumentError, match="dst_engine 'host'"):
        cly.Reorder(md, md, src_engine=host_engine, dst_engine="host")
    other = cly.Engine("opencl", context=cl.Context([cl_engine.device]))
    with pytest.raises(cly.UnimplementedError, match="two OpenCL engines of different contexts"):
        cly.Reorder(md, md, src_engine=cl_engine, dst_engine=other)
    runtime = cly.MemoryDesc((cly.RUNTIME_DIM, 3), "f32", tag="ab")
    with pytest.raises(cly.UnimplementedError, match="runtime dims in a cross-engine"):
        cly.Reorder(runtime, runtime, src_engine=host_engine, dst_engine=cl_engine)
    # Equal engines, however given, make the ordinary reorder.
    for r in (cly.Reorder(md, md, src_engine=cl_engine, dst_engine=cl_engine),
              cly.Reorder(md, md, engine=cl_engine, src_engine=cl_engine),
              cly.Reorder(md, md, engine=host_engine, dst_engine=host_engine)):
        assert not r.impl.startswith("cross:") and r.src_engine == r.dst_engine == r.engine
    assert cly.Reorder(md, md, engine=cl_engine).src_engine == cl_engine


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_memories_and_streams_are_checked_against_descriptors_and_engines(
        host_engine, cl_engine, direction):
    src_engine, dst_engine = sides(direction, host_engine, cl_engine)
    md, other_md = cly.MemoryDesc((2, 16), "f32"), cly.MemoryDesc((2, 16), "s8")
    r = cly.Reorder(md, other_md, src_engine=src_engine, dst_engine=dst_engine)
    s = cly.Stream(cl_engine)
    src, dst = cly.Memory(md, src_engine), cly.Memory(other_md, dst_engine)
    cases = [
        ((s, cly.Memory(md, dst_engine), dst),
         re.escape(f"src memory lives on {dst_engine!r}") + ".*takes its src on"),
        ((s, src, cly.Memory(other_md, src_engine)),
         re.escape(f"dst memory lives on {src_engine!r}") + ".*takes its dst on"),
        ((s, cly.Memory(other_md, src_engine), dst), "does not match the primitive's src"),
        ((s, src, cly.Memory(md, dst_engine)), "does not match the primitive's dst"),
        ((s, src.md, dst), "is not a clayout Memory"),
        ((cly.Stream(host_engine), src, dst), "runs on a stream of its OpenCL engine"),
        ((cly.Stream(cly.Engine("opencl", context=cl.Context([cl_engine.device]))), src, dst),
         "neither a Stream of"),
    ]
    for args, message in cases:
        with pytest.raises(cly.InvalidArgumentError, match=message):
            r.execute(*args)
    foreign = cl.UserEvent(cl.Context([cl_engine.device]))
    with pytest.raises(cly.InvalidArgumentError, match="another context"):
        r.execute(s, src, dst, wait_for=[foreign])
    with pytest.raises(cly.InvalidArgumentError, match="expected a list"):
        r.execute(s, src, dst, wait_for=cl.UserEvent(cl_engine.context))
    foreign.set_status(COMPLETE)
    run(r, src, dst)  # the right ones still work


def test_shuffles_across_engines_are_still_refused(host_engine, cl_engine):
    md = cly.MemoryDesc((2, 4), "f32")
    with pytest.raises(cly.UnimplementedError, match="shuffle across engines"):
        cly.shuffle(cly.Memory(md, host_engine), cly.Memory(md, cl_engine), 1, 2)


# =============================================================================
# The one-call form, zero elements, compensation, what runs
# =============================================================================

@pytest.mark.parametrize("direction", DIRECTIONS)
def test_the_one_call_form_runs_across_engines_and_waits(host_engine, cl_engine, direction):
    src_engine, dst_engine = sides(direction, host_engine, cl_engine)
    values = np.arange(2 * 19 * 3 * 5, dtype=np.float32).reshape(DIMS) - 100
    src = cly.Memory.from_numpy(cly.MemoryDesc(DIMS, "f32", tag="acdb"), src_engine, values)
    dst = cly.Memory(cly.MemoryDesc(DIMS, "s8", tag="aBcd16b"), dst_engine)
    assert cly.reorder(src, dst, attr=cly.Attr(dst_scales=4.0)) is dst
    if dst_engine is host_engine:  # written when the call returns: nothing left pending
        assert dst._host_events(write=True) == []
    want, _ = ref_reorder(values, "f32", "s8", dst_scale=np.float32(4))
    assert_same(dst.to_numpy(), want)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_zero_elements_move_nothing(host_engine, cl_engine, direction):
    src_engine, dst_engine = sides(direction, host_engine, cl_engine)
    md = cly.MemoryDesc((2, 0, 3), "f32")
    r = cly.Reorder(md, md, src_engine=src_engine, dst_engine=dst_engine)
    assert r.impl == f"cross:{direction} none (zero elements)"
    assert isinstance(run(r, cly.Memory(md, src_engine), cly.Memory(md, dst_engine)), cl.Event)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_compensation_is_written_on_either_side(host_engine, cl_engine, direction):
    src_engine, dst_engine = sides(direction, host_engine, cl_engine)
    dims = (20, 17, 3, 3)
    rng = np.random.default_rng(12)
    values = rng.integers(-60, 60, dims).astype(np.float32)
    extra = cly.Extra(compensation_mask=0b1, asymm_compensation_mask=0b1)
    dst_md = cly.MemoryDesc(dims, "s8", tag="OIhw16i16o", extra=extra)
    src = cly.Memory.from_numpy(cly.MemoryDesc(dims, "f32", tag="abcd"), src_engine, values)
    dst = cly.Memory(dst_md, dst_engine)
    r = cly.Reorder(src.md, dst_md, src_engine=src_engine, dst_engine=dst_engine)
    assert r.impl == ("cross:cpu2gpu upload+ocl:generated" if direction == "cpu2gpu"
                      else "cross:gpu2cpu download+host:numpy")
    run(r, src, dst)
    raw = dst.raw()
    q = values.astype(np.int64)  # whole values: s8 without rounding
    assert_same(logical_of(raw, dims, "OIhw16i16o", "s8"), values.astype(np.int8))
    padded_o = 32
    sums = np.zeros(padded_o, np.int64)
    sums[:20] = q.sum(axis=(1, 2, 3))
    comp = raw[dst_md.compensation_offset:].view("<i4")[:2 * padded_o]
    assert_same(comp, np.concatenate([-128 * sums, -sums]).astype(np.int32))


def test_explain_and_verbose_say_what_runs(host_engine, cl_engine, monkeypatch, caplog):
    convert("", monkeypatch)
    src_md = cly.MemoryDesc((2, 32, 4, 4), "f32", tag="nchw")
    dst_md = cly.MemoryDesc((2, 32, 4, 4), "s8", tag="nChw16c")
    with caplog.at_level(logging.DEBUG, logger="clayout"):
        r = cly.Reorder(src_md, dst_md, src_engine=host_engine, dst_engine=cl_engine,
                        attr=cly.Attr(src_scales=2.0))
        run(r, cly.Memory(src_md, host_engine), cly.Memory(dst_md, cl_engine))
        deadline = time.monotonic() + 5
        while not any(",exec," in m for m in caplog.messages) and time.monotonic() < deadline:
            time.sleep(0.01)  # the exec line comes from a watcher thread
    label = "cross:cpu2gpu upload+ocl:generated:reorder_f32_abcd_to_s8_aBcd16b"
    assert r.impl == "cross:cpu2gpu upload+ocl:generated"
    lines = r.explain().splitlines()
    assert lines[0] == "cross:cpu2gpu upload: declined: the values are converted"
    assert lines[1].startswith("cross:cpu2gpu host:numpy+upload: declined: the device converts")
    assert lines[2] == f"{label}: runs"
    assert "on the device: ocl:copy: declined: the values are converted" in lines
    assert any(line.startswith("strategy ") for line in lines)  # the kernel's own report
    create = [m for m in caplog.messages if ",create,host2opencl,reorder," in m]
    execs = [m for m in caplog.messages if ",exec,host2opencl,reorder," in m]
    assert len(create) == 1 and label in create[0] and "2x32x4x4" in create[0]
    assert len(execs) == 1 and execs[0].endswith("ms")
    assert any(",decline,host2opencl,reorder,cross:cpu2gpu upload (" in m
               for m in caplog.messages)


# =============================================================================
# Threads
# =============================================================================

@pytest.mark.parametrize("direction", DIRECTIONS)
def test_one_primitive_shared_by_threads(host_engine, cl_engine, direction):
    src_engine, dst_engine = sides(direction, host_engine, cl_engine)
    src_md = cly.MemoryDesc((3, 32, 5, 5), "f32", tag="nchw")
    dst_md = cly.MemoryDesc((3, 32, 5, 5), "bf16", tag="nChw16c")
    r = cly.Reorder(src_md, dst_md, src_engine=src_engine, dst_engine=dst_engine)
    errors = []

    def work(k):
        try:
            s = cly.Stream(cl_engine)
            for i in range(6):
                values = np.full(src_md.dims, k * 10 + i, np.float32)
                src = cly.Memory.from_numpy(src_md, src_engine, values)
                dst = cly.Memory(dst_md, dst_engine)
                r.execute(s, src, dst)  # no wait: to_numpy waits for the write
                got = dst.to_numpy().astype(np.float32)
                if not (got == values).all():
                    errors.append((k, i, got.reshape(-1)[:4]))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append((k, repr(error)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
