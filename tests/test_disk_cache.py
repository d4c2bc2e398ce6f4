"""The persistent cache (clayout/disk_cache.py) and what keeps its entries:
compiled Mako templates (gpu/templates.py), OpenCL program binaries
(gpu/binaries.py, backends/opencl.py) and SPIR-V modules (gpu/spirv.py).

The unit tests drive a DiskCache in a folder of their own
(``CLAYOUT_CACHE=tmp_path/...``): entries round-trip, the folders and files
are private, anything truncated, corrupt, tampered or not the user's is
rejected with one warning per file, a folder others may write is not used,
the size bound drops the entry used longest ago, and writers racing on one
key (threads and processes) always leave one whole entry.

The other tests run scripts in fresh Pythons sharing one cache folder, as
two runs of an application do: the first renders, builds and stores; the
second loads and compiles nothing, and its kernels and results are the same
bytes; a corrupt entry costs a rebuild and a warning, never a wrong result.
"""
import hashlib
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import clayout as cly
from clayout import disk_cache as dc
from clayout.disk_cache import DiskCache, disk_cache, entry_key, stable_text
from clayout.gpu import build
from clayout.gpu.templates import CachedLookup

KIND = "spirv"  # one of disk_cache.KINDS: entries() lists those folders alone
KEY = hashlib.sha256(b"an entry").hexdigest()


# -- helpers -------------------------------------------------------------------------

@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The DiskCache of a folder of this test's own, not yet created."""
    monkeypatch.setenv("CLAYOUT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CLAYOUT_CACHE_BYTES", raising=False)
    return disk_cache()


@pytest.fixture
def cache_warnings(caplog):
    """The cache's warnings on the ``clayout`` logger, as text."""
    caplog.set_level(logging.WARNING, logger="clayout")
    return lambda: [r.getMessage() for r in caplog.records
                    if r.name == "clayout" and r.levelno == logging.WARNING]


def entry_path(cache, kind=KIND, key=KEY):
    return os.path.join(cache.folder, kind, key)


def write(path, data: bytes):
    with open(path, "wb") as f:
        f.write(data)


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def well_formed(payload: bytes) -> bytes:
    """An entry's bytes as the cache writes them: magic, SHA-256, payload."""
    return dc.MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def flip_last_byte(path):
    data = bytearray(read(path))
    data[-1] ^= 0xFF
    write(path, bytes(data))


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def needs_root():
    if os.getuid() != 0:
        pytest.skip("chown needs root")


def run_python(script: str, cache_folder, *args, **env) -> dict:
    """Run ``script`` (with ``args``) in a fresh Python with
    CLAYOUT_CACHE=``cache_folder``; returns what its last stdout line
    reports (JSON) with its stderr under ``"stderr"``. The script ends with
    ``report(**values)``."""
    environ = {k: v for k, v in os.environ.items() if k != "CLAYOUT_VERBOSE"}
    environ.update(CLAYOUT_CACHE=str(cache_folder), **env)
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(script), *args],
                          capture_output=True, text=True, timeout=300, env=environ)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    result["stderr"] = done.stderr
    return result


# What every script starts with: report() prints its values and the cache's counts.
PRELUDE = textwrap.dedent("""
    import json
    from clayout.disk_cache import disk_cache

    def report(**values):
        counts = {f"{kind}:{what}": n for (kind, what), n in disk_cache().counts.items()}
        print(json.dumps(dict(values, counts=counts)))
""")


def kernel_lines(stderr: str, event: str, name: str) -> list[str]:
    """The verbose lines of ``event`` (build, load) for the kernel ``name``."""
    return [line for line in stderr.splitlines()
            if line.split(",")[1:3] == ["kernel", event] and line.split(",")[5] == name]


def valid_entries(folder, kind) -> list[str]:
    """The names of ``kind``'s entries in ``folder`` that load (checked by a new DiskCache)."""
    checker = DiskCache(str(folder))
    names = sorted(os.listdir(os.path.join(folder, kind)))
    return [n for n in names if checker.load(kind, n) is not None]


# -- unit level: one DiskCache, no device ---------------------------------------------

def test_a_stored_entry_loads_back(cache):
    cache.store(KIND, KEY, b"payload \x00\xff")
    assert cache.load(KIND, KEY) == b"payload \x00\xff"
    assert cache.counts[KIND, "stored"] == 1 and cache.counts[KIND, "hit"] == 1


def test_an_absent_entry_is_a_miss(cache):
    assert cache.load(KIND, KEY) is None
    assert cache.counts == {(KIND, "miss"): 1}


def test_folders_are_created_private_and_entries_readable_by_the_user_alone(cache):
    cache.store(KIND, KEY, b"x")
    assert mode(cache.folder) == 0o700
    assert mode(os.path.join(cache.folder, KIND)) == 0o700
    assert mode(entry_path(cache)) == 0o600


def test_a_cache_folder_removed_while_in_use_comes_back_private(cache):
    cache.store(KIND, KEY, b"x")
    shutil.rmtree(cache.folder)  # rm -rf ~/.cache/clayout while an application runs
    cache.store(KIND, KEY, b"x")
    assert mode(cache.folder) == 0o700


@pytest.mark.parametrize("damage", ["truncated", "corrupted byte", "no magic",
                                    "digest kept, payload changed"])
def test_a_damaged_entry_is_rejected_removed_and_warned_about_once(cache, cache_warnings, damage):
    cache.store(KIND, KEY, b"the payload " * 10)
    path = entry_path(cache)
    good = read(path)
    damaged = {
        "truncated": good[:len(dc.MAGIC) + 20],
        "corrupted byte": good[:-1] + bytes([good[-1] ^ 1]),
        "no magic": good[len(dc.MAGIC):],
        "digest kept, payload changed": good.replace(b"the payload", b"THE PAYLOAD"),
    }[damage]
    for _ in range(2):  # loaded twice: rejected twice, warned once
        write(path, damaged)
        assert cache.load(KIND, KEY) is None
        assert not os.path.exists(path)
    assert cache.counts[KIND, "rejected"] == 2 and cache.counts[KIND, "hit"] == 0
    assert len([w for w in cache_warnings() if path in w]) == 1


def test_an_entry_the_user_does_not_own_is_neither_loaded_nor_removed(cache, cache_warnings):
    needs_root()
    cache.store(KIND, KEY, b"payload")
    path = entry_path(cache)
    os.chown(path, 12345, 12345)
    assert cache.load(KIND, KEY) is None
    assert cache.load(KIND, KEY) is None
    assert os.path.exists(path) and read(path) == well_formed(b"payload")
    assert cache.counts[KIND, "rejected"] == 2 and cache.counts[KIND, "hit"] == 0
    assert len([w for w in cache_warnings() if path in w]) == 1


def _unusable_folder(tmp_path, monkeypatch, spoil):
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o700)
    spoil(folder)
    monkeypatch.setenv("CLAYOUT_CACHE", str(folder))
    return disk_cache()


@pytest.mark.parametrize("how", ["writable by others", "owned by another user"])
def test_a_folder_others_control_is_not_used(tmp_path, monkeypatch, cache_warnings, how):
    if how == "writable by others":
        spoil = lambda folder: os.chmod(folder, 0o777)  # noqa: E731
    else:
        needs_root()
        spoil = lambda folder: os.chown(folder, 12345, 12345)  # noqa: E731
    cache = _unusable_folder(tmp_path, monkeypatch, spoil)
    planted = tmp_path / "shared" / KIND
    planted.mkdir()
    write(planted / KEY, well_formed(b"planted"))
    cache.store(KIND, "other", b"payload")
    assert cache.load(KIND, KEY) is None  # not even a well-formed entry
    assert os.listdir(planted) == [KEY]  # nothing written
    assert cache.counts == {}
    assert len([w for w in cache_warnings() if cache.folder in w]) == 1


def test_clayout_cache_off_keeps_nothing(monkeypatch):
    monkeypatch.setenv("CLAYOUT_CACHE", "off")
    assert disk_cache() is None


def test_the_size_bound_removes_the_entry_used_longest_ago(cache, monkeypatch):
    payload = b"x" * 1000
    entry = len(well_formed(payload))
    key = {name: hashlib.sha256(name.encode()).hexdigest() for name in "abcd"}
    monkeypatch.setenv("CLAYOUT_CACHE_BYTES", str(3 * entry))
    for name in "abc":
        cache.store(KIND, key[name], payload)
    # Stored in the order a, b, c (an hour apart: the clock's tick cannot tie them) ...
    now = time.time()
    for age, name in zip((3, 2, 1), "abc"):
        os.utime(entry_path(cache, key=key[name]), (now - age * 3600,) * 2)
    assert cache.load(KIND, key["a"]) == payload  # ... then a used again: b is the oldest
    cache.store(KIND, key["d"], payload)
    assert sorted(os.listdir(os.path.join(cache.folder, KIND))) == \
        sorted(key[name] for name in "acd")


def test_trim_and_clear_touch_nothing_but_entries(tmp_path, monkeypatch):
    """A cache pointed at a folder that holds other files, or whose kind
    folder is a link elsewhere: the size bound and clear() remove entries
    (files named as keys in the kinds' folders) and nothing else."""
    home = tmp_path / "home"
    (home / "Documents").mkdir(parents=True)
    (home / "Documents" / "thesis.tex").write_bytes(b"x" * 5000)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / KEY).write_bytes(well_formed(b"y" * 5000))
    home.chmod(0o700)
    os.symlink(elsewhere, home / "programs")  # a kind's folder that is a link
    monkeypatch.setenv("CLAYOUT_CACHE", str(home))
    monkeypatch.setenv("CLAYOUT_CACHE_BYTES", "10")  # everything is over the bound
    cache = disk_cache()
    cache.store(KIND, KEY, b"z" * 100)
    stray = home / KIND / "notes.txt"
    stray.write_bytes(b"mine")
    assert cache.clear() == 0 or not os.path.exists(entry_path(cache))
    assert (home / "Documents" / "thesis.tex").exists() and stray.exists()
    assert (elsewhere / KEY).exists()


def test_a_cache_that_cannot_be_written_warns_once(cache, cache_warnings, monkeypatch):
    """A full disk or a read-only folder: one warning for the folder, then
    no more writes by this process; what is there still loads."""
    import errno
    import tempfile

    cache.store(KIND, KEY, b"first")
    tries = []

    def full(*args, **kwargs):
        tries.append(args)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", full)
    for n in range(4):
        cache.store(KIND, hashlib.sha256(bytes([n])).hexdigest(), b"more")
    assert len(tries) == 1  # no write tried after the first failure
    assert cache.load(KIND, KEY) == b"first"
    assert len([m for m in cache_warnings() if "cannot be written" in m]) == 1


def test_a_linked_entry_is_not_followed(cache, tmp_path):
    cache.store(KIND, KEY, b"real")
    target = tmp_path / "target"
    target.write_bytes(well_formed(b"planted"))
    os.remove(entry_path(cache))
    os.symlink(target, entry_path(cache))
    assert cache.load(KIND, KEY) is None
    assert target.read_bytes() == well_formed(b"planted")


def test_threads_writing_one_key_at_once_leave_one_whole_entry(cache):
    size, writers = 256 * 1024, 12
    payloads = {bytes([n]) * size for n in range(writers)}
    torn = []
    start = threading.Barrier(writers)

    def write_and_read(n):
        start.wait()
        for _ in range(15):
            cache.store(KIND, KEY, bytes([n]) * size)
            got = cache.load(KIND, KEY)
            if got is not None and got not in payloads:
                torn.append(len(got))

    threads = [threading.Thread(target=write_and_read, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert torn == [] and cache.counts[KIND, "rejected"] == 0
    assert cache.load(KIND, KEY) in payloads
    assert os.listdir(os.path.join(cache.folder, KIND)) == [KEY]  # no *.part left


# Stores and loads one key for a second from a common start; prints how
# many loads were not one of the writers' whole payloads, and the rejects.
RACER = """
import sys, time
from clayout.disk_cache import DiskCache
folder, key, n, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
size = 1 << 20
cache, bad = DiskCache(folder), 0
time.sleep(max(0.0, start - time.time()))
while time.time() < start + 1.0:
    cache.store("spirv", key, bytes([n]) * size)
    got = cache.load("spirv", key)
    if got is not None and (len(got) != size or got.count(got[:1]) != size):
        bad += 1
print(bad, cache.counts["spirv", "rejected"])
"""


def test_processes_writing_one_key_at_once_leave_one_whole_entry(cache):
    cache.store(KIND, "first", b"")  # the folders exist before the race
    start, writers = time.time() + 3.0, 4
    racers = [subprocess.Popen([sys.executable, "-c", RACER, cache.folder, KEY, str(n),
                                str(start)], stdout=subprocess.PIPE, text=True)
              for n in range(1, writers + 1)]
    results = [r.communicate(timeout=120)[0].split() for r in racers]
    assert all(r.returncode == 0 for r in racers)
    assert results == [["0", "0"]] * writers  # no torn load, nothing rejected
    assert cache.load(KIND, KEY) in {bytes([n]) * (1 << 20) for n in range(1, writers + 1)}
    assert sorted(os.listdir(os.path.join(cache.folder, KIND))) == sorted(["first", KEY])


def test_stable_text_is_equal_for_equal_descriptors_built_two_ways():
    by_tag = cly.MemoryDesc((2, 3, 4, 5), "f32", tag="nchw")
    by_strides = cly.MemoryDesc((2, 3, 4, 5), "f32", strides=(60, 20, 5, 1))
    assert by_tag == by_strides
    assert stable_text(by_tag) == stable_text(by_strides)
    assert entry_key("k", by_tag) == entry_key("k", by_strides)


def test_stable_text_tells_apart_descriptors_whose_repr_is_the_same():
    md = cly.MemoryDesc((2, 3, 4, 5), "f32", tag="nchw")
    # offset0 as MemoryDesc.from_array sets it for a pyopencl array at an offset.
    at_7, at_8 = md._replace(offset0=7), md._replace(offset0=8)
    assert repr(at_7) == repr(at_8) and at_7 != at_8
    assert stable_text(at_7) != stable_text(at_8)
    assert entry_key("k", at_7) != entry_key("k", at_8)


@pytest.mark.parametrize("value", [object(), threading.Lock(), np.zeros(3), [1, {2: object()}]])
def test_stable_text_refuses_an_object_without_a_stable_form(value):
    with pytest.raises(TypeError, match="no stable text"):
        stable_text(value)


# -- compiled templates (gpu/templates.py) --------------------------------------------

# Renders one kernel from its plan (no device): its source and the cache's counts.
RENDER = """
import clayout as cly
from clayout.gpu.plan import plan_kernel
from clayout.gpu.profile import CPU_PROFILE
from clayout.gpu.render import render_kernel
from clayout.problem import Problem

src = cly.MemoryDesc((2, 19, 5, 7), "f32", tag="nchw")
dst = cly.MemoryDesc(src.dims, "s8", tag="nChw16c")
attr = cly.Attr(src_scales=0.5, dst_zero_points=3)
report(source=render_kernel(plan_kernel(Problem("reorder", src, dst, attr, None), CPU_PROFILE)))
"""


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """(cache folder, result) of RENDER run first with an empty cache."""
    folder = tmp_path_factory.mktemp("templates") / "cache"
    return folder, run_python(RENDER, folder)


def _counts(result, kind):
    return {what.split(":")[1]: n for what, n in result["counts"].items()
            if what.startswith(kind + ":")}


def _copy(folder, tmp_path):
    copy = tmp_path / "cache"
    shutil.copytree(folder, copy)
    return copy


def test_a_first_process_stores_the_templates_it_compiles(rendered):
    folder, first = rendered
    counts = _counts(first, "templates")
    assert counts["stored"] >= 1 and counts["stored"] == counts["miss"]
    assert "hit" not in counts
    assert len(os.listdir(folder / "templates")) == counts["stored"]


def test_a_second_process_loads_the_templates_and_renders_the_same_source(rendered, tmp_path):
    folder, first = rendered
    second = run_python(RENDER, _copy(folder, tmp_path))
    assert _counts(second, "templates") == {"hit": _counts(first, "templates")["stored"]}
    assert second["source"] == first["source"] and "__kernel" in second["source"]


def test_a_corrupt_template_entry_is_compiled_again_and_replaced(rendered, tmp_path):
    folder, first = rendered
    copy = _copy(folder, tmp_path)
    names = sorted(os.listdir(copy / "templates"))
    for name in names:
        flip_last_byte(copy / "templates" / name)
    again = run_python(RENDER, copy)
    assert _counts(again, "templates") == {"rejected": len(names), "stored": len(names)}
    assert again["source"] == first["source"]
    assert "clayout cache:" in again["stderr"]  # the warning (logging's last resort)
    assert valid_entries(copy, "templates") == names


def test_an_entry_that_is_not_compiled_code_is_compiled_again(rendered, tmp_path):
    folder, first = rendered
    copy = _copy(folder, tmp_path)
    names = sorted(os.listdir(copy / "templates"))
    for name in names:  # whole entries, digests right, but no marshalled code inside
        write(copy / "templates" / name, well_formed(b"not marshal data"))
    again = run_python(RENDER, copy)
    assert _counts(again, "templates")["stored"] == len(names)
    assert again["source"] == first["source"]


def test_an_edited_template_is_a_miss(tmp_path, cache):
    (tmp_path / "t.mako").write_text("first ${x}\n")
    first = CachedLookup(directories=[str(tmp_path)]).get_template("t.mako")
    assert first.render(x=1) == "first 1\n"
    assert CachedLookup(directories=[str(tmp_path)]).get_template("t.mako").render(x=2) == \
        "first 2\n"
    assert (cache.counts["templates", "miss"], cache.counts["templates", "hit"]) == (1, 1)
    (tmp_path / "t.mako").write_text("edited ${x}\n")
    edited = CachedLookup(directories=[str(tmp_path)]).get_template("t.mako")
    assert edited.render(x=3) == "edited 3\n"
    assert (cache.counts["templates", "miss"], cache.counts["templates", "stored"]) == (2, 2)


def test_a_template_loaded_from_the_cache_is_not_loaded_again_at_each_render(tmp_path, cache):
    """clayout's lookup (gpu/templates.LOOKUP) looks at no file times: a
    template file newer than its cached code (an install, a checkout) is
    not read again at every render."""
    from clayout.gpu import templates

    (tmp_path / "t.mako").write_text("text ${x}\n")
    CachedLookup(directories=[str(tmp_path)]).get_template("t.mako")  # stores it
    lookup = CachedLookup(directories=[str(tmp_path)], filesystem_checks=False)
    assert templates.LOOKUP.filesystem_checks is False
    hits = cache.counts["templates", "hit"]
    later = time.time() + 100
    os.utime(tmp_path / "t.mako", (later, later))
    for x in range(3):
        assert lookup.get_template("t.mako").render(x=x) == f"text {x}\n"
    assert cache.counts["templates", "hit"] == hits + 1


# -- program binaries (gpu/binaries.py, OpenCLBackend.build) --------------------------

@pytest.fixture(scope="module")
def opencl(cl_engine):
    """The OpenCL engine of the tests' device. The SYCL pass's device engine
    builds through dpctl, which takes source or SPIR-V and loads no program
    binaries (SyclBackend.has_program is False): nothing of this part
    applies there, and the intel pass runs it on the same runtime."""
    if cl_engine.kind == "sycl":
        pytest.skip("program binaries are cached for OpenCL engines only; "
                    "the SYCL engine builds every program through dpctl")
    return cl_engine


SRC = cly.MemoryDesc((3, 19, 5, 7), "f32", tag="nchw")
DST = cly.MemoryDesc(SRC.dims, "f32", tag="nChw16c")

# One Reorder on the engine its arguments name: its kernel's name, the
# output's bytes (SHA-256), whether the result is right, how many times
# clang or llvm-spirv ran, and the verbose lines (stderr). It waits for its
# own kernel: a cold primitive may run on a stand-in while that builds on a
# background thread (clayout/tiers.py), and one the exit drops stores nothing.
REORDER = f"""
import hashlib, sys, numpy as np, clayout as cly
from clayout.gpu import spirv
tools_ran, run = [], spirv._run
def counted(command, source):
    tools_ran.append(command[0])
    return run(command, source)
spirv._run = counted
eng = cly.Engine(*sys.argv[1:])
src_md = cly.MemoryDesc({SRC.dims}, "f32", tag="nchw")
dst_md = cly.MemoryDesc(src_md.dims, "f32", tag="nChw16c")
x = np.random.default_rng(7).standard_normal(src_md.dims).astype(np.float32)
r = cly.Reorder(src_md, dst_md, engine=eng)
s = cly.Stream(eng)
dst = cly.Memory(dst_md, eng)
r.execute(s, cly.Memory.from_numpy(src_md, eng, x), dst)
s.wait()
report(kernel=r._implementation.kernel.name, output=hashlib.sha256(dst.raw()).hexdigest(),
       correct=bool(np.array_equal(dst.to_numpy(), x)), tools_ran=len(tools_ran))
"""


def reorder(cache_folder, *engine, **env) -> dict:
    """REORDER's report on ``cly.Engine(*engine)``, verbose lines in its stderr."""
    return run_python(REORDER, cache_folder, *engine, CLAYOUT_VERBOSE="1", **env)


@pytest.fixture(scope="module")
def built(opencl, tmp_path_factory):
    """(cache folder, result) of REORDER run first with an empty cache."""
    folder = tmp_path_factory.mktemp("programs") / "cache"
    return folder, reorder(folder, "opencl")


def test_a_first_process_builds_the_kernel_and_stores_its_binary(built):
    folder, first = built
    assert first["correct"]
    assert len(kernel_lines(first["stderr"], "build", first["kernel"])) == 1
    assert kernel_lines(first["stderr"], "load", first["kernel"]) == []
    assert _counts(first, "programs")["stored"] >= 1
    assert valid_entries(folder, "programs")


def test_a_second_process_loads_the_kernel_and_builds_nothing(built, tmp_path):
    folder, first = built
    second = reorder(_copy(folder, tmp_path), "opencl")
    assert len(kernel_lines(second["stderr"], "load", first["kernel"])) == 1
    assert kernel_lines(second["stderr"], "build", first["kernel"]) == []
    assert _counts(second, "programs").get("hit", 0) >= 1
    assert second["output"] == first["output"] and second["correct"]


@pytest.mark.parametrize("damage", ["corrupt", "refused by the driver"])
def test_a_bad_program_entry_is_rebuilt_with_a_warning(built, tmp_path, damage):
    folder, first = built
    copy = _copy(folder, tmp_path)
    names = sorted(os.listdir(copy / "programs"))
    for name in names:
        if damage == "corrupt":  # the digest no longer matches
            flip_last_byte(copy / "programs" / name)
        else:  # a whole entry, but no binary the driver takes
            write(copy / "programs" / name, well_formed(b"\x7fELF not a program" * 64))
    again = reorder(copy, "opencl")
    assert again["correct"] and again["output"] == first["output"]
    assert "clayout cache:" in again["stderr"]
    counts = _counts(again, "programs")
    assert counts["rejected"] >= 1 and counts.get("hit", 0) == 0  # a refused binary is no hit
    assert len(kernel_lines(again["stderr"], "build", first["kernel"])) == 1
    # Written again: the next process loads it.
    third = reorder(copy, "opencl")
    assert len(kernel_lines(third["stderr"], "load", first["kernel"])) == 1
    assert third["output"] == first["output"]


def test_execute_compiles_nothing_on_a_warm_path(opencl, built, tmp_path, monkeypatch):
    folder, _ = built
    monkeypatch.setenv("CLAYOUT_CACHE", str(_copy(folder, tmp_path)))
    compiled = []  # (thread, source) of every compile_program call
    original = build.compile_program

    def counting(context, source, options):
        compiled.append((threading.get_ident(), source))
        return original(context, source, options)

    monkeypatch.setattr(build, "compile_program", counting)
    prim = cly.Reorder(SRC, DST, engine=opencl)
    name = prim._implementation.plan.name
    assert not [s for _, s in compiled if f" {name}(" in s]  # loaded, not compiled
    before = len(compiled)
    stream = cly.Stream(opencl)
    x = np.arange(SRC.nelems(), dtype=np.float32).reshape(SRC.dims)
    dst = cly.Memory(DST, opencl)
    for _ in range(3):
        prim.execute(stream, cly.Memory.from_numpy(SRC, opencl, x), dst)
    stream.wait()
    assert np.array_equal(dst.to_numpy(), x)
    here = threading.get_ident()  # a background build of another kernel may run meanwhile
    assert [t for t, _ in compiled[before:] if t == here] == []


def test_a_binary_of_other_code_is_a_miss(opencl, built, tmp_path, monkeypatch):
    """Entries are keyed by the code and templates that render a kernel
    (disk_cache.code_digest): after an edit of clayout the old binary is
    never loaded; the kernel is compiled and stored under the new key."""
    from clayout import disk_cache

    folder, _ = built
    monkeypatch.setenv("CLAYOUT_CACHE", str(_copy(folder, tmp_path)))
    compiled = []
    original = build.compile_program
    monkeypatch.setattr(build, "compile_program",
                        lambda context, source, options: compiled.append(source) or
                        original(context, source, options))
    monkeypatch.setattr(disk_cache, "_code_digest", ["another version of clayout's code"])
    cly.kernel_cache.clear()
    monkeypatch.setenv("CLAYOUT_TIERS", "off")
    prim = cly.Reorder(SRC, DST, engine=opencl)
    name = prim._implementation.plan.name
    assert [s for s in compiled if f" {name}(" in s], "a binary of other code was loaded"
    cache = disk_cache.disk_cache()
    assert cache.counts["programs", "stored"] >= 1
    cly.kernel_cache.clear()


# -- SPIR-V modules (gpu/spirv.py) ----------------------------------------------------

@pytest.fixture(scope="module")
def spirv_tools_present():
    """clang and llvm-spirv, as tests/test_spirv.py wants them: a skip
    without them, a failure under CI (which installs them)."""
    from clayout.gpu.spirv import spirv_tools

    if spirv_tools() is None:
        message = ("clang and llvm-spirv of one LLVM release are not installed "
                   "(bash scripts/ensure_spirv_tools.sh)")
        if os.environ.get("CI"):
            pytest.fail(message + " -- CI requires them", pytrace=False)
        pytest.skip(message)


# Compiles one kernel to SPIR-V under a stable key. With FORBID set, the
# source cannot be rendered and clang cannot run: only a hit returns.
SPIRV = """
import hashlib, os
from clayout.gpu import spirv

def render():
    return "__kernel void scale(__global float *x) { x[get_global_id(0)] *= 2.0f; }\\n"

if os.environ.get("FORBID"):
    def render():
        raise AssertionError("rendered on a hit")
    def run(command, source):
        raise AssertionError(f"ran {command[0]} on a hit")
    spirv._run = run
module = spirv.compile_spirv(render, ["-cl-fp32-correctly-rounded-divide-sqrt"],
                             key=("test_disk_cache", "scale", 1))
report(module=hashlib.sha256(module).hexdigest(), magic=module[:4].hex())
"""


def test_a_spirv_module_comes_from_the_cache_in_a_fresh_process(spirv_tools_present,
                                                                tmp_path):
    folder = tmp_path / "cache"
    first = run_python(SPIRV, folder)
    assert _counts(first, "spirv") == {"miss": 1, "stored": 1}
    assert first["magic"] == "03022307"  # SPIR-V's magic number, little-endian
    second = run_python(SPIRV, folder, FORBID="1")
    assert _counts(second, "spirv") == {"hit": 1}
    assert second["module"] == first["module"]


def test_a_sycl_engine_building_from_spirv_compiles_nothing_in_a_fresh_process(
        cl_engine, spirv_tools_present, tmp_path):
    if cl_engine.kind != "sycl":
        pytest.skip("the SYCL pass runs it (CLAYOUT_TEST_PLATFORM=sycl): the SYCL engine's "
                    "one use of the cache is its SPIR-V modules")
    folder, engine = tmp_path / "cache", ("sycl", "opencl:cpu")
    first = reorder(folder, *engine, CLAYOUT_SYCL_PROGRAM="spirv")
    assert _counts(first, "spirv")["stored"] >= 1 and first["tools_ran"] >= 2
    second = reorder(folder, *engine, CLAYOUT_SYCL_PROGRAM="spirv")
    assert second["tools_ran"] == 0 and set(_counts(second, "spirv")) == {"hit"}
    assert second["output"] == first["output"] and second["correct"] and first["correct"]
