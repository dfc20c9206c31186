"""Compiled pan executables are reused only for the same model text, flags and compiler
(engine/pan_cache.py)."""
from __future__ import annotations

import os

import pytest

from warpspin.engine import pan_cache, spin
from warpspin.engine.spin import check
from warpspin.lower import lower
from warpspin.syncir.protocols import ring


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPSPIN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _compiles(monkeypatch) -> list:
    runs = []
    real = spin._run

    def counting(cmd, cwd, timeout, what):
        if what.startswith("gcc"):
            runs.append(cmd)
        return real(cmd, cwd, timeout, what)
    monkeypatch.setattr(spin, "_run", counting)
    return runs


def test_the_same_model_is_compiled_once_and_gives_the_same_search(cache, monkeypatch):
    runs = _compiles(monkeypatch)
    model = lower(ring(stages=2, trips=3, consumers=2, bug="two-behind"), fuse=False)
    first, second = check(model, timeout_s=60), check(model, timeout_s=60)
    assert len(runs) == 1 and len(os.listdir(cache)) == 1
    assert (first.states, first.transitions, first.kind) == \
        (second.states, second.transitions, second.kind)
    assert second.kind == "parity-aliasing" and second.events == first.events


def test_another_model_or_other_flags_compile_again(cache, monkeypatch):
    runs = _compiles(monkeypatch)
    a = lower(ring(stages=2, trips=3, consumers=2))
    b = lower(ring(stages=2, trips=4, consumers=2))
    check(a, timeout_s=60)
    check(b, timeout_s=60)
    check(a, timeout_s=60, memory_mb=512)   # -DMEMLIM differs
    check(a, timeout_s=60, vector_size=2048)  # -DVECTORSZ
    assert len(runs) == 4 and len(os.listdir(cache)) == 4


def test_every_file_spin_writes_is_in_the_key(tmp_path):
    for name in pan_cache.SPIN_OUTPUTS:
        (tmp_path / name).write_text("x")
    key = pan_cache.cache_key(str(tmp_path), ["gcc", "-O0"])
    for name in pan_cache.SPIN_OUTPUTS:
        (tmp_path / name).write_text("y")
        assert pan_cache.cache_key(str(tmp_path), ["gcc", "-O0"]) != key, name
        (tmp_path / name).write_text("x")
    assert pan_cache.cache_key(str(tmp_path), ["gcc", "-O0"]) == key
    assert pan_cache.cache_key(str(tmp_path), ["gcc", "-O1"]) != key


def test_an_empty_directory_name_turns_it_off(monkeypatch, tmp_path):
    monkeypatch.setenv("WARPSPIN_CACHE_DIR", "")
    runs = _compiles(monkeypatch)
    model = lower(ring(stages=2, trips=3, consumers=2))
    check(model, timeout_s=60)
    check(model, timeout_s=60)
    assert len(runs) == 2


def test_the_least_recently_used_entries_go(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(pan_cache, "MAX_ENTRIES", 3)
    exe = tmp_path / "exe"
    exe.write_bytes(b"\x7fELF")
    for i in range(5):
        pan_cache.store(f"k{i}", str(exe))
        os.utime(cache / f"k{i}", (1000 + i, 1000 + i))
    pan_cache.store("k5", str(exe))
    assert sorted(os.listdir(cache)) == ["k3", "k4", "k5"]
    assert pan_cache.fetch("k4", str(tmp_path / "got"))
    assert not pan_cache.fetch("k0", str(tmp_path / "no"))
