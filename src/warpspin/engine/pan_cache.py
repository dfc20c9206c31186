"""A cache of compiled pan executables: the same model text compiled with the same flags by the
same compiler gives the same executable, so a second check of a kernel (the same target
checked again, SPIN shortening a happens-before counterexample of a model searched before, a
test suite) skips gcc, which costs more than the search on small models.

The key hashes every file `spin -a` wrote (pan.c includes pan.h, pan.m, pan.b, pan.t, pan.p,
which hold the model's embedded C), the compiler command with its flags, and the compiler
executable's size and modification time. Entries are written under a temporary name and
renamed into place, so two processes never see half an executable. At most MAX_ENTRIES are
kept (the least recently used go). `WARPSPIN_CACHE_DIR` names the directory (default
`$XDG_CACHE_HOME/warpspin/pan`, else `~/.cache/warpspin/pan`); set to an empty string it turns
the cache off.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from typing import Optional

MAX_ENTRIES = 256
SPIN_OUTPUTS = ("pan.c", "pan.h", "pan.m", "pan.b", "pan.t", "pan.p")


def cache_dir() -> Optional[str]:
    d = os.environ.get("WARPSPIN_CACHE_DIR")
    if d is not None:
        return d or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "warpspin", "pan")


def cache_key(model_dir: str, command: list[str]) -> str:
    h = hashlib.sha256()
    for name in SPIN_OUTPUTS:
        path = os.path.join(model_dir, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                h.update(name.encode() + b"\0" + f.read() + b"\0")
    h.update("\0".join(command).encode())
    cc = shutil.which(command[0]) or command[0]
    try:
        st = os.stat(cc)
        h.update(f"{cc}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    except OSError:
        h.update(cc.encode())
    return h.hexdigest()


def fetch(key: str, dest: str) -> bool:
    """Copy the cached executable for `key` to `dest` (True), or False when there is none."""
    d = cache_dir()
    if d is None:
        return False
    src = os.path.join(d, key)
    try:
        shutil.copyfile(src, dest)
        os.chmod(dest, 0o755)
        os.utime(src)  # recently used
        return True
    except OSError:
        return False


def store(key: str, exe: str) -> None:
    """Keep `exe` as the executable for `key` (best effort: a cache that cannot be written is
    no cache)."""
    d = cache_dir()
    if d is None:
        return
    try:
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, f".{key}.{os.getpid()}")
        shutil.copyfile(exe, tmp)
        os.replace(tmp, os.path.join(d, key))
        _evict(d)
    except OSError:
        pass


def _evict(d: str) -> None:
    entries = []
    for name in os.listdir(d):
        if name.startswith("."):
            continue
        try:
            entries.append((os.stat(os.path.join(d, name)).st_mtime, name))
        except OSError:
            pass
    for _, name in sorted(entries)[:max(0, len(entries) - MAX_ENTRIES)]:
        try:
            os.remove(os.path.join(d, name))
        except OSError:
            pass
