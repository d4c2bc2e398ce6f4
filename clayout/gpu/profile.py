"""The device profile: what the kernel planner may know about a device, read once.

The planner sees a ``DeviceProfile``, never a pyopencl device, so plans can
be made (and kernels rendered and read) for any profile without a device:
``CPU_PROFILE`` stands for PoCL on a plain CPU, where the constants in its
``Tuning`` were measured.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace

from ..errors import InvalidArgumentError

#: The kernel strategies a profile can choose (CLAYOUT_STRATEGY forces one).
STRATEGIES = ("cpu", "gpu")


@dataclass(frozen=True)
class Tuning:
    """Plan constants measured on one kind of device.

    ``block_sizes``: the BxB register transposes tried, best first
    (measured on PoCL and Intel's runtime, 2 AVX-512 cores, f32 and bf16
    8x256x56x56, in turns with copy: 16 over 8 took nhwc->nchw from
    0.36-0.43 to 0.56-0.64 of copy on PoCL and 0.31-0.34 to 0.44-0.46 on
    Intel, bf16 nhwc->nchw 0.36-0.40 to 0.47 on Intel, nchw->nhwc 0.41-0.46
    to 0.48-0.50 on Intel, others level; clang's NVPTX and AMDGPU targets
    keep a 16x16 f32 block without spills). ``byte_block_sizes``: the
    same into a destination of 1-byte elements, whose rows shrink to 16
    bytes as they are converted (PoCL, f32 nchw -> s8 nChw16c, five runs
    in turn: 16 at 0.73-0.93 of copy, median 0.90; 8 at 0.61-0.84, 0.70).
    ``nibble_block_sizes``: the same for 4-bit types moved bit for bit, whose
    rows are words of B nibbles (16: a ulong, 8: a uint); ``nibble_grid``:
    its neighbouring work-items' blocks, along the destination's rows
    (fastest) by along the source's (gpu/plan_cpu.py, ``_lane_grid``);
    ``nibble_pack_grid``: the same for a conversion into a 4-bit
    destination, whose wider source reads best along its own rows
    (measured on PoCL and Intel's runtime, f32 ab -> s4 ba with 1x32
    groups, 4096x4096: 0.26-0.28 of copy in a grid of 16x16, 0.46-0.54 in
    1x16; u4 ba -> f16 ab kept 16x16: 0.32-0.37, 0.16-0.24 in 1x16).
    ``nibble_tile_sizes``: the nibbles a row T of the CPU strategy's tiles
    of 4-bit types moved bit for bit, tried first, best first
    (gpu/plan_nibble_tile.py: T/16 words of 16, so 32, 64 or 128);
    ``nibble_tile_rows``: the
    most source rows such a tile takes, a power of two from 32 to 1024
    (measured there; a tile takes at least T rows whatever it says).
    ``short_loop``: an
    innermost destination loop at most this long is not tiled for the
    source (its source lines stay in cache). ``source_order_bytes``: where
    the destination's innermost loop is a run of at least this many bytes
    contiguous in the source too, the CPU strategy's work-items step the
    other loops in the source's order, not the destination's (measured on
    PoCL and Intel's runtime, f32 nchw shuffled in groups of 4, 8x256x56x56,
    runs of 12.5 KiB: 0.50-0.69 of copy -> 0.84-0.96; abcd -> acbd with runs
    of 1-16 KiB: PoCL 0.44-0.60 -> 0.82-0.95, Intel's level; runs of 256
    and 512 bytes: PoCL better, Intel's 0.92 -> 0.80; 16-128 bytes: both
    worse). ``line_tile_lines``: a blocked shuffle's unrolled block of
    4-byte elements that reads at least this many source lines at each
    step of its work-items' fastest loop, each less than a cache line,
    takes as many steps of that loop as fill the lines (gpu/plan_unrolled.py;
    measured on PoCL and Intel's runtime, f32 nChw8c shuffled in groups of
    4, 1x272x56x56, 34 lines of 32 bytes a pixel: 0.29 and 0.20 ms -> 0.16
    and 0.12; 15 lines, C=116: level; 2-byte and 1-byte elements lost,
    their lanes cost more than the lines save). ``work_group``: the work-group
    size asked for (the kernel's own limit may be lower). ``items_per_unit``
    and ``max_chunks``: a launch of more than ``items_per_unit`` work-items
    per compute unit makes each work-item run up to ``max_chunks`` items
    spaced by the global size (on PoCL that measured 2x slower, so the CPU
    profile runs one item each).

    The GPU strategy also uses: ``vector_bytes``, what neighbouring
    work-items each move per access on the wider side, and ``narrow_bytes``
    at least on the narrower side (a warp of 32 then moves 512 bytes per
    instruction on both sides, so even a small tensor's last, partial warp
    leaves 256 or more on average: f32 -> s8 moves 16 elements a
    work-item, not 4);
    ``tile_bytes``, the most local memory a
    transpose's tile takes; ``lanes``, the warp its rows are shaped for where
    the device does not say its own.

    ``unroll_elements``: the most elements of the destination's innermost
    loops an unrolled block takes (gpu/plan_unrolled.py; a tile of the
    source's contiguous loop may take it up to 2x); below 4, no unrolled
    blocks.

    ``skip_shapes``: kernel shapes (gpu/shapes.py, by name) the planner
    passes over, so that the next one of the strategy's list serves (the
    last serves every problem, so it is never passed over): the tuner's
    candidates are the shapes themselves.
    """

    block_sizes: tuple[int, ...] = (16, 8, 4)
    byte_block_sizes: tuple[int, ...] = (16, 8, 4)
    nibble_block_sizes: tuple[int, ...] = (16, 8)
    nibble_grid: tuple[int, int] = (16, 16)
    nibble_pack_grid: tuple[int, int] = (1, 16)
    nibble_tile_sizes: tuple[int, ...] = (128, 64, 32)
    nibble_tile_rows: int = 512
    short_loop: int = 512
    source_order_bytes: int = 1024
    line_tile_lines: int = 16
    work_group: int = 256
    items_per_unit: int = 2048
    max_chunks: int = 1
    lanes: int = 32
    vector_bytes: int = 16
    narrow_bytes: int = 16
    tile_bytes: int = 16 << 10
    unroll_elements: int = 256
    skip_shapes: tuple[str, ...] = ()

    def changes(self, base: "Tuning") -> dict:
        """The fields that differ from ``base``, as JSON values."""
        return {f.name: list(getattr(self, f.name)) if isinstance(getattr(self, f.name), tuple)
                else getattr(self, f.name)
                for f in fields(self) if getattr(self, f.name) != getattr(base, f.name)}

    def changed(self, values: dict, shape_names=None) -> "Tuning":
        """This Tuning with ``values`` (field name -> JSON value) in place;
        ``shape_names``: the kernel shapes ``skip_shapes`` may name
        (gpu/shapes.py ``shape_names``; a misspelt one would skip nothing).
        Raises ValueError for an unknown field, a value of the wrong kind or
        a shape not in ``shape_names``."""
        known = {f.name: getattr(self, f.name) for f in fields(self)}
        out = {}
        for name, value in values.items():
            if name not in known:
                raise ValueError(f"unknown tuning parameter {name!r}")
            if name == "skip_shapes":
                if not isinstance(value, list) or not all(
                        isinstance(v, str) and v for v in value):
                    raise ValueError(f"{name}: expected a list of shape names, got {value!r}")
                unknown = [v for v in value if shape_names is not None and v not in shape_names]
                if unknown:
                    raise ValueError(f"{name}: unknown kernel shape(s) {unknown}; the shapes "
                                     f"are {sorted(shape_names)}")
                value = tuple(value)
            elif isinstance(known[name], tuple):
                if not isinstance(value, list) or not value or not all(
                        type(v) is int and v > 0 for v in value):
                    raise ValueError(f"{name}: expected a list of positive integers, "
                                     f"got {value!r}")
                if name in ("nibble_grid", "nibble_pack_grid") and len(value) != 2:
                    raise ValueError(f"{name}: expected two counts (along the destination's "
                                     f"rows, along the source's), got {value!r}")
                if name == "nibble_tile_sizes" and not set(value) <= {32, 64, 128}:
                    raise ValueError(f"{name}: expected sizes of 32, 64 or 128 (2, 4 or 8 "
                                     f"words of 16 nibbles a row), got {value!r}")
                if name == "nibble_block_sizes" and not set(value) <= {8, 16}:
                    raise ValueError(f"{name}: expected sizes of 8 or 16 (a uint or a ulong "
                                     f"of nibbles), got {value!r}")
                value = tuple(value)
            elif type(value) is not int or value <= 0:
                raise ValueError(f"{name}: expected a positive integer, got {value!r}")
            elif name == "nibble_tile_rows" and value not in (32, 64, 128, 256, 512, 1024):
                # (its private array is rows x 64 bytes: past 1024 it leaves any L1 cache)
                raise ValueError(f"{name}: expected a power of two from 32 to 1024, "
                                 f"got {value!r}")
            out[name] = value
        return replace(self, **out)


#: Measured on PoCL 3.1 (pthread), 2 cores; see benchmarks/.
CPU_TUNING = Tuning()
#: Not yet measured on a GPU (none was lent so far): coalesced accesses of
#: 16-byte vectors, 16 KiB tiles (several work-groups fit in any GPU's local
#: memory), a grid-stride loop of up to 4 items for big launches.
#: A nibble transpose's warp: 8 blocks of 16 nibbles (64 bytes) along the
#: destination's rows by 4 (32 bytes, a sector) along the source's.
GPU_TUNING = Tuning(items_per_unit=8192, max_chunks=4, nibble_grid=(8, 4),
                    nibble_pack_grid=(8, 4))


@dataclass(frozen=True)
class DeviceProfile:
    """One device as the planner sees it.

    ``kind`` is "cpu", "gpu" or "accelerator"; ``strategy`` the kernel
    family the planner uses ("cpu" or "gpu"), from the kind unless
    CLAYOUT_STRATEGY says otherwise. ``preferred_multiple`` is the SIMD
    width work-groups should be a multiple of (NVIDIA's warp, AMD's
    wavefront; 1 where the device does not say). ``base_align`` is the
    alignment of buffers, in bytes. ``little_endian``: the device's byte
    order (a nibble transpose reads a word's nibbles in it, the GPU's
    quantize kernel stages codes as words). ``subgroups`` lists the
    sub-group extensions the device has. ``max_groups_per_dim``: the work-groups
    NDRange dimensions 1 and 2 may each hold (OpenCL does not say; NVIDIA's
    driver allows 65,535, so every profile keeps to that). ``prefetch``: how
    kernels fetch a cache line ahead: "builtin" (clang's
    ``__builtin_prefetch``, the CPU's prefetch instruction; PoCL's and
    Intel's CPU runtimes, where it was measured) or "opencl" (OpenCL C's
    ``prefetch``, which PoCL ignores; Oclgrind and llvm-spirv refuse the
    builtin).
    """

    name: str = "generic"
    kind: str = "cpu"
    vendor: str = ""
    strategy: str = "cpu"
    compute_units: int = 1
    preferred_multiple: int = 1
    max_work_group_size: int = 1024
    local_mem: int = 32 << 10
    base_align: int = 128
    little_endian: bool = True
    subgroups: tuple[str, ...] = ()
    fp16: bool = False
    fp64: bool = True
    prefetch: str = "opencl"
    tuning: Tuning = field(default_factory=Tuning)
    max_groups_per_dim: int = 65535
    #: (family, strategy, Tuning) per kernel family that ``python -m clayout
    #: tune`` measured on this device (gpu/families.py); ``for_problem``
    #: applies them. ``forced``: CLAYOUT_STRATEGY chose the strategy, so
    #: only entries of that strategy apply.
    tuned: tuple = ()
    forced: bool = False

    @property
    def strategy_of_kind(self) -> str:
        """The strategy this kind of device gets unless told otherwise."""
        return "gpu" if self.kind == "gpu" else "cpu"

    def with_strategy(self, strategy: str) -> "DeviceProfile":
        """This profile with another strategy (and that strategy's tuning);
        of its tuned entries, only those of that strategy then apply."""
        if strategy not in STRATEGIES:
            raise InvalidArgumentError(
                f"strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
        return replace(self, strategy=strategy,
                       tuning=CPU_TUNING if strategy == "cpu" else GPU_TUNING, forced=True)

    def for_problem(self, problem) -> "DeviceProfile":
        """The profile to plan ``problem`` with: this one, with the strategy
        and Tuning measured for the problem's family where a tuning table
        gave some (``tuned``)."""
        if not self.tuned:
            return self
        from .families import family_of

        family = family_of(problem)
        # One object per (profile, family): plan caches key profiles by identity.
        key = (id(self), family)
        kept = _FOR_FAMILY.get(key)
        if kept is not None and kept[0] is self:
            return kept[1]
        out = replace(self, tuned=(), forced=False)
        for name, strategy, tuning in self.tuned:
            if name == family and (strategy == self.strategy or not self.forced):
                out = replace(out, strategy=strategy, tuning=tuning)
                break
        _FOR_FAMILY[key] = (self, out)  # holds ``self``: its id is not reused meanwhile
        return out


_FOR_FAMILY: dict = {}

#: A stand-in for PoCL on two cores: plans and renders without a device.
CPU_PROFILE = DeviceProfile(name="cpu", compute_units=2, fp16=False, fp64=True,
                            prefetch="builtin")
#: A stand-in for a GPU (an NVIDIA H200's numbers): plans, renders and
#: access reports without one.
GPU_PROFILE = DeviceProfile(name="gpu", kind="gpu", vendor="NVIDIA Corporation", strategy="gpu",
                            compute_units=132, preferred_multiple=32, local_mem=48 << 10,
                            fp16=True, fp64=True, tuning=GPU_TUNING)


#: The OpenCL platforms whose CPU devices compile clang's prefetch builtin
#: into the CPU's instruction (PoCL 3.1, Intel's CPU runtime 2026.2).
BUILTIN_PREFETCH = ("Portable Computing Language", "Intel(R) OpenCL")


def _strategy_from_env(default: str) -> str:
    text = os.environ.get("CLAYOUT_STRATEGY", "").strip().lower()
    if not text:
        return default
    if text not in STRATEGIES:
        raise InvalidArgumentError(
            f"CLAYOUT_STRATEGY={text!r}: expected one of {', '.join(STRATEGIES)}")
    return text


_PROFILES: dict = {}


def read_profile(device) -> DeviceProfile:
    """The profile of a pyopencl Device: queried on first use, then kept.
    CLAYOUT_STRATEGY (cpu or gpu), read each time, overrides the strategy."""
    key = device.int_ptr
    if key not in _PROFILES:
        _PROFILES[key] = _query(device)
    profile = _PROFILES[key]
    strategy = _strategy_from_env(profile.strategy_of_kind)
    if strategy != profile.strategy:
        profile = _PROFILES.setdefault((key, strategy), profile.with_strategy(strategy))
    return profile


def _query(device) -> DeviceProfile:
    import pyopencl as cl

    kinds = ((cl.device_type.GPU, "gpu"), (cl.device_type.ACCELERATOR, "accelerator"),
             (cl.device_type.CPU, "cpu"))
    kind = next((name for bit, name in kinds if device.type & bit), "accelerator")
    extensions = device.extensions.split()
    multiple = 1
    for attribute in ("warp_size_nv", "wavefront_width_amd"):
        try:
            multiple = int(getattr(device, attribute))
            break
        except (cl.Error, AttributeError):
            continue
    profile = DeviceProfile(
        name=device.name.strip(),
        kind=kind,
        vendor=device.vendor.strip(),
        compute_units=device.max_compute_units,
        preferred_multiple=multiple,
        max_work_group_size=device.max_work_group_size,
        local_mem=device.local_mem_size,
        base_align=device.mem_base_addr_align // 8,
        little_endian=bool(device.endian_little),
        subgroups=tuple(e for e in extensions if "subgroup" in e),
        fp16="cl_khr_fp16" in extensions,
        fp64="cl_khr_fp64" in extensions or bool(getattr(device, "double_fp_config", 0)),
        prefetch="builtin" if kind == "cpu" and device.platform.name.strip() in BUILTIN_PREFETCH
        else "opencl",
    )
    return profile.with_strategy(profile.strategy_of_kind)
