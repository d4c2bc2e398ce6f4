"""Which SYCL device an engine takes, and how the planner sees it."""
from __future__ import annotations

from ..errors import UnimplementedError
from ..gpu.profile import DeviceProfile, _strategy_from_env


def matching_cl_device(device):
    """The pyopencl Device that is the same device as the OpenCL-backend
    SYCL ``device`` (same platform, name and driver), or None."""
    from .opencl import opencl_devices

    platform = device.sycl_platform.name.strip()
    for candidate in opencl_devices():
        if (candidate.platform.name.strip() == platform
                and candidate.name.strip() == device.name.strip()
                and candidate.driver_version.strip() == device.driver_version.strip()):
            return candidate
    return None


def profile_of(device) -> DeviceProfile:
    """A Level Zero device as the planner sees it, from what dpctl tells."""
    kind = "gpu" if device.is_gpu else "cpu" if device.is_cpu else "accelerator"
    sizes = tuple(device.sub_group_sizes or ())
    profile = DeviceProfile(
        name=device.name.strip(), kind=kind, vendor=device.vendor.strip(),
        compute_units=device.max_compute_units,
        preferred_multiple=max(sizes) if kind == "gpu" and sizes else 1,
        max_work_group_size=device.max_work_group_size, local_mem=device.local_mem_size,
        fp16=device.has_aspect_fp16, fp64=device.has_aspect_fp64)
    profile = profile.with_strategy(profile.strategy_of_kind)
    strategy = _strategy_from_env(profile.strategy)
    return profile if strategy == profile.strategy else profile.with_strategy(strategy)


def usable(device) -> bool:
    return device.backend.name in ("opencl", "level_zero") and \
        device.has_aspect_usm_device_allocations


def default_device(dpctl):
    """SYCL's default device if clayout can use it (OpenCL or Level Zero,
    with USM), else the first device that can, GPUs first. Raises
    UnimplementedError when none can."""
    try:
        default = dpctl.select_default_device()
    except Exception:  # noqa: BLE001 - no device at all
        default = None
    devices = sorted(dpctl.get_devices(), key=lambda d: not d.is_gpu)
    for device in ([default] if default is not None else []) + devices:
        if usable(device):
            return device
    found = ", ".join(f"{d.name.strip()} ({d.backend.name})" for d in devices) or "none"
    raise UnimplementedError(
        f"engine 'sycl': no SYCL device clayout can use (an OpenCL or Level Zero device "
        f"with USM device allocations); devices found: {found}. Install a runtime such as "
        f"Intel's OpenCL CPU runtime (pip install intel-opencl-rt, then the ICD file "
        f"clayout's docs/engines.md describes) or use Engine('opencl')")
