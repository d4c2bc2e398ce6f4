"""examples/quantize_weights.py on real weights (silero-vad's, `make weights`)
and on a small file written here with the awkward shapes real models lack.

The script checks its own results (half a step per value, blocked bytes, bit
for bit round trips), so a wrong kernel fails its run; these tests also read
the tensor list from the file's header themselves and recompute the errors
it prints with NumPy. Without the weights the real-weights test skips,
telling to run `make weights`; under CI=true it fails, as CI downloads them.
"""
import json
import os
import pathlib
import struct
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).parents[1]
SCRIPT = ROOT / "examples" / "quantize_weights.py"
SILERO = ROOT / "examples" / "weights" / "silero_vad_16k.safetensors"
GROUP = 32


def missing(what: str):
    """Skip, or fail under CI, which must have run `make weights`."""
    message = f"{what}: run `make weights`"
    if os.environ.get("CI"):
        pytest.fail(message + " -- CI runs it before the tests", pytrace=False)
    pytest.skip(message)


@pytest.fixture(autouse=True)
def needs_safetensors():
    try:
        import safetensors.numpy  # noqa: F401
    except ImportError:
        missing("the example reads weights with safetensors (the [weights] extra)")


def run_example(path: pathlib.Path) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def header(path: pathlib.Path) -> dict:
    """The tensors' entries of a .safetensors header: an 8-byte little-endian
    length, then that much JSON."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        entries = json.loads(f.read(length))
    entries.pop("__metadata__", None)
    return entries


def rows(output: str, names) -> dict:
    """For each name, the lines of the output that begin with it."""
    return {n: [line for line in output.splitlines() if line.split()[:1] == [n]] for n in names}


def write_safetensors(path: pathlib.Path, tensors: dict) -> None:
    """A .safetensors file of NumPy arrays (f32 or s32), by the format alone."""
    names = {np.dtype(np.float32): "F32", np.dtype(np.int32): "I32"}
    entries, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        entries[name] = {"dtype": names[array.dtype], "shape": list(array.shape),
                         "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(entries).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def expected_errors(w: np.ndarray) -> tuple[float, float]:
    """Max |error| and relative RMS error of s4 with absmax/7 scales per 1x32
    group of w viewed (rows, rest) and zero-padded to whole groups."""
    view = w.reshape(w.shape[0], -1)
    cols = view.shape[1]
    view = np.pad(view, ((0, 0), (0, -cols % GROUP)))
    absmax = np.abs(view.reshape(view.shape[0], -1, GROUP)).max(axis=2)
    s = np.repeat(np.where(absmax > 0, absmax / 7, 1).astype(np.float32), GROUP, axis=1)
    q = np.clip(np.rint(view / s), -8, 7)
    error = np.abs((s * q).astype(np.float32) - view)[:, :cols].astype(np.float64)
    x = view[:, :cols].astype(np.float64)
    return error.max(), np.sqrt((error ** 2).mean() / (x ** 2).mean())


FORMATS = ("s4", "u4+zp", "MXFP4")


def check_output(output: str, entries: dict) -> None:
    """Every f32 tensor of two or more dims in the quantization table once per
    format, with its shape, the same bits as NumPy, and a worst error of at
    most half a step for the integer formats (MX saturates at 6 X: at most
    two of its X); every 3-D one blocked and back bit for bit; the rest
    listed as kept."""
    weights = {n: e["shape"] for n, e in entries.items()
               if len(e["shape"]) >= 2 and e["dtype"] == "F32"}
    found = rows(output, weights)
    for name, shape in weights.items():
        lines = found[name]
        expected = len(FORMATS) + (1 if len(shape) == 3 else 0)
        assert len(lines) == expected, f"{name}: {lines} (expected {expected} lines)"
        for fmt, line in zip(FORMATS, lines):
            fields = line.split()
            assert fields[1] == "x".join(map(str, shape)) and fields[2] == fmt, line
            bound = 2.0 if fmt == "MXFP4" else 0.5
            assert float(fields[4]) <= bound + 1e-5, f"{name}: {fields[4]} steps: {line}"
            assert "same bits as NumPy" in line, line
        if len(shape) == 3:
            assert lines[-1].endswith("round trip bit for bit"), lines[-1]
    kept = [line for line in output.splitlines() if line.startswith("kept f32")]
    for name in set(entries) - set(weights):
        assert kept and name in kept[0].split(": ")[1].split(", "), \
            f"{name} neither quantized nor listed as kept"


def test_silero_weights():
    if not SILERO.exists():
        missing(f"{SILERO} is missing")
    output = run_example(SILERO)
    print(output)  # shown with -s: the figures docs/quantization.md quotes
    check_output(output, header(SILERO))


def test_awkward_shapes(tmp_path):
    """Rows that need padding, an all-zero group, an all-zero row, values far
    apart in one row, blocked dims with tails, and tensors to leave alone."""
    rng = np.random.default_rng(21)
    matrix = rng.normal(0, 0.1, (40, 70)).astype(np.float32)
    matrix[3, 32:64] = 0  # a group of zeros: its scale must not be 0
    matrix[5] = 0
    matrix[7, 0] = 300.0  # one large value: its group's step grows, others' do not
    tensors = {
        "matrix": matrix,
        "first.weight": rng.normal(0, 1, (20, 3, 5)).astype(np.float32),   # Oiw16o, O tail
        "conv.weight": rng.normal(0, 1, (18, 17, 2)).astype(np.float32),   # OIw16i16o, tails
        "conv.bias": rng.normal(0, 1, (18,)).astype(np.float32),
        "counts": rng.integers(-5, 5, (4, 64)).astype(np.int32),
    }
    path = tmp_path / "awkward.safetensors"
    write_safetensors(path, tensors)
    output = run_example(path)
    check_output(output, header(path))

    found = rows(output, tensors)
    assert "padded to 96" in found["matrix"][0]
    assert "Oiw16o" in found["first.weight"][-1] and "OIw16i16o" in found["conv.weight"][-1]
    for name in ("matrix", "first.weight", "conv.weight"):
        fields = found[name][0].split()   # the s4 line
        max_error, rel_rms = expected_errors(tensors[name])
        assert float(fields[3]) == pytest.approx(max_error, rel=1e-2), found[name][0]
        assert float(fields[5].rstrip("%")) / 100 == pytest.approx(rel_rms, rel=1e-2, abs=1e-4)


def test_missing_file_names_make_weights(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "none.safetensors")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "make weights" in done.stderr, done.stderr
