"""Where ptxas and nvdisasm are: the ones PyPI's nvidia-cuda-nvcc / nvidia-cuda-nvdisasm wheels
install (``make setup`` pins them), unless WARPSPIN_PTXAS / WARPSPIN_NVDISASM name others."""
from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache

PTXAS_PIN = "13.2.78"  # the wheels make setup installs (the release seed 004's listings came from)


def _wheel_bin(name: str) -> str | None:
    try:
        import nvidia
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for sub in ("cu13", "cuda_nvcc", "cuda_nvdisasm", "cu12"):
            path = os.path.join(root, sub, "bin", name)
            if os.access(path, os.X_OK):
                return path
    return None


@lru_cache(maxsize=None)
def find(name: str) -> str | None:
    """The path of `name` (ptxas or nvdisasm), or None."""
    env = os.environ.get(f"WARPSPIN_{name.upper()}")
    if env:
        return env if os.access(env, os.X_OK) else None
    return _wheel_bin(name) or shutil.which(name)


@lru_cache(maxsize=None)
def version(name: str) -> str | None:
    """`release 13.2, V13.2.78` of the tool, or None when it is missing or fails."""
    path = find(name)
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.stdout.splitlines():
        if "release" in line:
            return line.split("tools, ", 1)[-1].strip()
    return None


class ToolMissing(Exception):
    pass


def require(name: str) -> str:
    path = find(name)
    if path is None:
        wheel = "nvidia-cuda-nvcc" if name == "ptxas" else "nvidia-cuda-nvdisasm"
        raise ToolMissing(f"{name} not found: python -m pip install '{wheel}=={PTXAS_PIN}' "
                          f"(make setup installs it), or set WARPSPIN_{name.upper()}")
    return path
