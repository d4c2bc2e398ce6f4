"""scripts/gcn_check.py: clayout's kernels (dumped by CLAYOUT_DUMP_KERNELS,
see test_ptx_dump.py) compiled for AMD gfx90a.

The parsing tests read canned assembly and need nothing. The compile tests
need clang-15 and ROCm's device libraries (rocm-device-libs); they are
skipped, saying which is missing, without them (`make gcn` is not part of
CI)."""
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import clayout as cly

SCRIPT = pathlib.Path(__file__).parents[1] / "scripts" / "gcn_check.py"


def load_gcn_check():
    spec = importlib.util.spec_from_file_location("gcn_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gcn_check = load_gcn_check()

# CANNED_ASM is what `clang-15 -x cl -cl-std=CL1.2 -target amdgcn-amd-amdhsa
# -mcpu=gfx90a --rocm-device-lib-path=... -Xclang -finclude-default-header
# -cl-kernel-arg-info -O2 -S` made of this source, trimmed by hand: the ALU
# instructions, most of the kernel descriptors, the arguments clang adds
# (hidden_*), 5 of pairs' 8 dwordx4 loads and 13 of its 17 scratch stores
# left out. `t` (17 ints indexed at run time) does not fit in registers, so
# pairs keeps it in scratch (72 bytes); put is not inlined into wide.
CANNED_SOURCE = """\
__attribute__((noinline)) void put(__global ushort *q, ushort v) { q[get_global_id(0)] = v; }
__kernel void wide(__global const float4 *a, __global float4 *b, __global const uchar *c,
                   __global ushort *d) {
    size_t i = get_global_id(0);
    b[i] = a[i] * (float)c[i];
    put(d, 7);
}
__kernel void pairs(__global const double *a, __global int *b, int k) {
    int t[17];
    for (int j = 0; j < 17; ++j) t[j] = (int)a[j + get_global_id(0)];
    b[get_global_id(0)] = t[k % 17];
}
"""

CANNED_ASM = """\
	.text
	.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
	.hidden	put                             ; -- Begin function put
	.type	put,@function
put:                                    ; @put
	global_store_short v[0:1], v2, off
.Lfunc_end0:
	.size	put, .Lfunc_end0-put
                                        ; -- End function
; Function info:
; NumSgprs: 36
; NumVgprs: 32
; NumAgprs: 0
; TotalNumVgprs: 32
; ScratchSize: 0
	.type	wide,@function
wide:                                   ; @wide
	s_add_u32 flat_scratch_lo, s8, s11
	global_load_ubyte v1, v[10:11], off
	global_load_dwordx4 v[2:5], v[8:9], off
	global_store_dwordx4 v[6:7], v[2:5], off
	.amdhsa_kernel wide
		.amdhsa_private_segment_fixed_size 0
		.amdhsa_next_free_vgpr 32
	.end_amdhsa_kernel
.Lfunc_end1:
	.size	wide, .Lfunc_end1-wide
                                        ; -- End function
; Kernel info:
; NumSgprs: 39
; NumVgprs: 32
; NumAgprs: 0
; TotalNumVgprs: 32
; ScratchSize: 0
; LDSByteSize: 0 bytes/workgroup (compile time only)
; Occupancy: 8
	.type	pairs,@function
pairs:                                  ; @pairs
	global_load_dwordx4 v[0:3], v[34:35], off
	global_load_dwordx4 v[4:7], v[34:35], off offset:16
	global_load_dwordx4 v[8:11], v[34:35], off offset:32
	global_load_dwordx2 v[36:37], v[34:35], off offset:128
	buffer_store_dword v1, off, s[0:3], 0 offset:8
	buffer_store_dword v0, off, s[0:3], 0 offset:4
	buffer_store_dword v3, off, s[0:3], 0 offset:16
	buffer_store_dword v2, off, s[0:3], 0 offset:12
	buffer_load_dword v2, v0, s[0:3], 0 offen
	global_store_dword v[0:1], v2, off
	.amdhsa_kernel pairs
		.amdhsa_private_segment_fixed_size 72
		.amdhsa_next_free_vgpr 38
	.end_amdhsa_kernel
.Lfunc_end2:
	.size	pairs, .Lfunc_end2-pairs
                                        ; -- End function
; Kernel info:
; NumSgprs: 19
; NumVgprs: 38
; NumAgprs: 0
; TotalNumVgprs: 38
; ScratchSize: 72
; LDSByteSize: 0 bytes/workgroup (compile time only)
; Occupancy: 8
	.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     0
    .args:
      - .address_space:  global
        .is_const:       true
        .name:           a
        .offset:         0
        .size:           8
        .type_name:      'float4*'
        .value_kind:     global_buffer
      - .address_space:  global
        .name:           b
        .offset:         8
        .size:           8
        .type_name:      'float4*'
        .value_kind:     global_buffer
      - .address_space:  global
        .is_const:       true
        .name:           c
        .offset:         16
        .size:           8
        .type_name:      'uchar*'
        .value_kind:     global_buffer
      - .address_space:  global
        .name:           d
        .offset:         24
        .size:           8
        .type_name:      'ushort*'
        .value_kind:     global_buffer
    .group_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .kernarg_segment_size: 88
    .language:       OpenCL C
    .language_version:
      - 1
      - 2
    .max_flat_workgroup_size: 256
    .name:           wide
    .private_segment_fixed_size: 0
    .sgpr_count:     39
    .sgpr_spill_count: 0
    .symbol:         wide.kd
    .uses_dynamic_stack: false
    .vgpr_count:     32
    .vgpr_spill_count: 0
    .wavefront_size: 64
  - .agpr_count:     0
    .args:
      - .address_space:  global
        .is_const:       true
        .name:           a
        .offset:         0
        .size:           8
        .type_name:      'double*'
        .value_kind:     global_buffer
      - .address_space:  global
        .name:           b
        .offset:         8
        .size:           8
        .type_name:      'int*'
        .value_kind:     global_buffer
      - .name:           k
        .offset:         16
        .size:           4
        .type_name:      int
        .value_kind:     by_value
    .group_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .kernarg_segment_size: 80
    .language:       OpenCL C
    .language_version:
      - 1
      - 2
    .max_flat_workgroup_size: 256
    .name:           pairs
    .private_segment_fixed_size: 72
    .sgpr_count:     19
    .sgpr_spill_count: 0
    .symbol:         pairs.kd
    .uses_dynamic_stack: false
    .vgpr_count:     38
    .vgpr_spill_count: 0
    .wavefront_size: 64
amdhsa.target:   amdgcn-amd-amdhsa--gfx90a
amdhsa.version:
  - 1
  - 1
...

	.end_amdgpu_metadata
"""


def test_gcn_accesses_are_counted_per_function_by_width():
    counts = gcn_check.count_accesses(CANNED_ASM)
    assert set(counts) == {"put", "wide", "pairs"}
    none = {"flat": 0, "scratch_ld": 0, "scratch_st": 0}
    # global_store_short: 2 bytes.
    assert counts["put"] == {"ld": 0, "ld16": 0, "ld8": 0, "st": 1, "st16": 0, "st8": 0, **none}
    # global_load_ubyte, global_load_dwordx4; global_store_dwordx4. The
    # s_add_u32 to flat_scratch_lo is no memory access.
    assert counts["wide"] == {"ld": 2, "ld16": 1, "ld8": 0, "st": 1, "st16": 1, "st8": 0, **none}
    # 3 dwordx4 and 1 dwordx2 global loads, 1 global dword store; the
    # buffer_ accesses through s[0:3] are t in scratch, not global memory.
    assert counts["pairs"] == {"ld": 4, "ld16": 3, "ld8": 1, "st": 1, "st16": 0, "st8": 0,
                               "flat": 0, "scratch_ld": 1, "scratch_st": 4}


def test_gcn_access_widths_and_generic_addresses():
    widths = {"dwordx4": 16, "dwordx3": 12, "dwordx2": 8, "dword": 4, "short": 2,
              "ushort": 2, "short_d16_hi": 2, "sshort": 2, "byte": 1, "ubyte_d16": 1,
              "sbyte": 1, "byte_d16_hi": 1, "format_xyzw": None}
    assert {s: gcn_check.access_width(s) for s in widths} == widths
    hand = ("\t.type\tk,@function\nk:\n"
            "\tflat_load_dwordx4 v[0:3], v[0:1]\n"
            "\tflat_store_dword v[0:1], v2\n"
            "\tglobal_load_dwordx2 v[2:3], v[0:1], off\n"
            "\tglobal_store_byte_d16_hi v[0:1], v2, off\n"
            "\tscratch_store_dwordx4 off, v[0:3], s0\n"
            "\ts_load_dwordx4 s[0:3], s[4:5], 0x0\n"
            "\tds_read_b128 v[0:3], v4\n"
            ".Lfunc_end0:\n"
            "\tglobal_store_dword v[0:1], v2, off\n")  # outside any function
    assert gcn_check.count_accesses(hand) == {"k": {
        "ld": 1, "ld16": 0, "ld8": 1, "st": 1, "st16": 0, "st8": 0, "flat": 2,
        "scratch_ld": 0, "scratch_st": 1}}


def test_gcn_metadata_is_read_per_kernel():
    meta = gcn_check.parse_metadata(CANNED_ASM)
    # The arguments' own .name entries (a, b, c, d, k) are not kernels.
    assert meta == {
        "wide": {"agprs": 0, "lds": 0, "scratch": 0, "sgprs": 39, "sgpr_spills": 0,
                 "dynamic_stack": False, "vgprs": 32, "vgpr_spills": 0},
        "pairs": {"agprs": 0, "lds": 0, "scratch": 72, "sgprs": 19, "sgpr_spills": 0,
                  "dynamic_stack": False, "vgprs": 38, "vgpr_spills": 0}}


def test_gcn_comment_blocks_are_read_per_function():
    info = gcn_check.parse_comments(CANNED_ASM)
    assert info == {
        "put": {"kernel": False, "sgprs": 36, "vgprs": 32, "agprs": 0, "scratch": 0},
        "wide": {"kernel": True, "sgprs": 39, "vgprs": 32, "agprs": 0, "scratch": 0,
                 "occupancy": 8},
        "pairs": {"kernel": True, "sgprs": 19, "vgprs": 38, "agprs": 0, "scratch": 72,
                  "occupancy": 8}}


def test_gcn_summary_counts_scratch_and_vgprs():
    base = {"sha1": "0", "file": "f.cl", "ok": True, "agprs": 0, "sgprs": 10, "lds": 0,
            "vgpr_spills": 0, "sgpr_spills": 0, "dynamic_stack": False, "occupancy": 8,
            "cpu_only": False, **gcn_check._new_counts()}
    kernels = [{**base, "kernel": "a", "vgprs": 4, "scratch": 0, "ld": 2, "ld16": 1},
               {**base, "kernel": "b", "vgprs": 9, "scratch": 16, "st": 1},
               {**base, "kernel": "c", "vgprs": 30, "scratch": 0, "dynamic_stack": True},
               {**base, "kernel": "e", "vgprs": 263, "agprs": 7, "occupancy": 1, "scratch": 0},
               {**base, "kernel": "f", "vgprs": 40, "scratch": 8192, "cpu_only": True},
               {"sha1": "1", "file": "g.cl", "kernel": "d", "ok": False, "stage": "clang",
                "error": "error: x"}]
    total = gcn_check.summarise(kernels)
    assert (total["kernels"], total["programs"], total["failures"]) == (6, 2, 1)
    assert (total["scratching"], total["scratch_bytes"], total["using_agprs"]) == (3, 8208, 1)
    assert total["cpu_scratching"] == 1  # a CPU kernel's private tile: listed, not failed
    assert (total["min_vgprs"], total["median_vgprs"], total["max_vgprs"]) == (4, 30, 263)
    assert (total["ld"], total["ld16"], total["st"]) == (2, 1, 1)
    text = gcn_check.report({"run": kernels}, per_kernel=False)
    assert "FAILED [run] d" in text and "SCRATCH [run] b" in text
    assert "SCRATCH [run] c" in text and "dynamic stack" in text
    assert "AGPRS [run] e" in text and "occupancy 1" in text
    assert "CPU KERNEL SCRATCH (not failed) [run] f" in text
    assert "3 with scratch (8208 bytes), 1 using AGPRs; VGPRs min 4, median 30, max 263" in text


def _require_tools():
    missing = [] if shutil.which("clang-15") else ["clang-15"]
    libs = os.environ.get("ROCM_DEVICE_LIB_PATH") or gcn_check.find_device_libs()
    if libs is None or not pathlib.Path(libs, "ocml.bc").is_file():
        missing.append(f"{libs or 'amdgcn/bitcode'} (rocm-device-libs)")
    if missing:
        pytest.skip("make gcn's tools are missing: " + ", ".join(missing)
                    + " (not required in CI)")


def run_check(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_gcn_check_compiles_a_dumped_kernel(gpu_engine, tmp_path, monkeypatch):
    _require_tools()
    folder = tmp_path / "kernels"
    monkeypatch.setenv("CLAYOUT_DUMP_KERNELS", str(folder))
    # (not test_ptx_dump.py's shape: a program built earlier in the run is
    # not built, so not dumped, again)
    dims = (2, 4, 5, 3)
    src_md = cly.MemoryDesc(dims, "f32", tag="nchw")
    dst_md = cly.MemoryDesc(dims, "f32", tag="nhwc")
    src = cly.Memory.from_numpy(src_md, gpu_engine, np.ones(dims, np.float32))
    dst = cly.Memory(dst_md, gpu_engine)
    reorder = cly.Reorder(src_md, dst_md, engine=gpu_engine)
    reorder.execute(cly.Stream(gpu_engine), src, dst)
    monkeypatch.delenv("CLAYOUT_DUMP_KERNELS")
    name = reorder._implementation.kernel.name
    done = run_check(folder, "--json", tmp_path / "gcn.json")
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads((tmp_path / "gcn.json").read_text())
    totals = doc["totals"][str(folder)]
    assert totals["failures"] == 0 and totals["scratch_bytes"] == 0
    assert totals["kernels"] == len(list(folder.glob("*.cl")))
    kernel, = [k for k in doc["kernels"][str(folder)] if k["kernel"] == name]
    assert kernel["ok"] and kernel["vgprs"] > 0
    assert kernel["ld"] > 0 and kernel["st"] > 0  # a reorder reads and writes global memory
    assert name in done.stdout


def test_gcn_check_fails_on_scratch_and_on_a_kernel_that_does_not_compile(tmp_path):
    _require_tools()
    (tmp_path / "canned.cl").write_text(CANNED_SOURCE)
    done = run_check(tmp_path, "--json", tmp_path / "out" / "gcn.json")
    assert done.returncode == 1  # pairs keeps t in scratch
    kernels = {k["kernel"]: k for k in
               json.loads((tmp_path / "out" / "gcn.json").read_text())["kernels"][str(tmp_path)]}
    assert kernels["pairs"]["scratch"] > 0 and kernels["pairs"]["scratch_st"] > 0
    assert kernels["wide"]["scratch"] == 0
    # A float4 pointer is 16-byte aligned: one dwordx4 load and store (and
    # the helper's short store, counted with each kernel of the program).
    wide = kernels["wide"]
    assert (wide["ld"], wide["ld16"], wide["st"], wide["st16"]) == (2, 1, 2, 1)
    assert "SCRATCH" in done.stdout and "pairs" in done.stdout

    (tmp_path / "canned.cl").unlink()
    (tmp_path / "bad.cl").write_text(
        "__kernel void broken(__global float *p) { p[0] = no_such_name; }\n")
    (tmp_path / "good.cl").write_text(
        "__kernel void fine(__global float4 *p) { p[get_global_id(0)] *= 2.0f; }\n")
    done = run_check(tmp_path, "--json", tmp_path / "out" / "gcn.json")
    assert done.returncode == 1
    doc = json.loads((tmp_path / "out" / "gcn.json").read_text())
    assert doc["totals"][str(tmp_path)]["failures"] == 1
    broken, = [k for k in doc["kernels"][str(tmp_path)] if not k["ok"]]
    assert broken["kernel"] == "broken" and "no_such_name" in broken["error"]
    fine, = [k for k in doc["kernels"][str(tmp_path)] if k["ok"]]
    assert (fine["ld"], fine["ld16"], fine["st"], fine["st16"]) == (1, 1, 1, 1)
    assert fine["scratch"] == 0 and fine["vgprs"] > 0
    assert "FAILED" in done.stdout and "no_such_name" in done.stdout


def test_gcn_check_with_nothing_to_check_fails(tmp_path):
    _require_tools()
    done = run_check(tmp_path)
    assert done.returncode == 2 and "no .cl files" in done.stderr
