"""Bad input to `warpspin check` is one line on stderr and exit status 3, never a traceback nor
a verdict; with --json or --sarif -, stdout is exactly one document whatever FUNC prints."""
import json
import os
import subprocess
import sys

import pytest

from warpspin.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RING = os.path.join(ROOT, "examples", "syncir_ring.py") + ":ring_correct"

TARGETS = '''
import os, sys
sys.path.insert(0, {examples!r})
from syncir_ring import ring_correct

def pair():
    return (1, 2)

def bare():
    return (lambda *a: None), 5

def noisy():
    print("quack cache: export failed (a library talking)")
    os.write(1, b"written below Python\\n")
    return ring_correct()

def raises():
    raise RuntimeError("boom")
'''


@pytest.fixture
def targets(tmp_path):
    path = tmp_path / "targets.py"
    path.write_text(TARGETS.format(examples=os.path.join(ROOT, "examples")))
    return str(path)


def _one_line_error(capsys, status):
    out = capsys.readouterr()
    assert status == 3
    assert "Traceback" not in out.err and "Traceback" not in out.out
    return out


@pytest.mark.parametrize("argv,says", [
    (["--arch", "sm_80"], "invalid choice: 'sm_80'"),
    (["--param", "K"], "expected NAME=V"),
    (["--param", "K=abc"], "values must be integers"),
    (["--param", "K=3..1"], "empty range"),
    (["--frob"], "unrecognized arguments: --frob"),
    (["--timeout", "-1"], "the time limit must be positive"),
    (["--timeout", "x"], "is not a number"),
    (["--jobs", "0"], "at least one core"),
    (["--memory", "0"], "at least 1 MB"),
    (["--engine", "z3"], "invalid choice: 'z3'"),
    (["--json", "--sarif", "-"], "both want stdout"),
])
def test_bad_flags_are_one_line_and_status_3(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        status = main(["check", RING, *argv])
        raise SystemExit(status)
    out = _one_line_error(capsys, e.value.code)
    assert says in out.err and len(out.err.strip().splitlines()) == 1, out.err
    assert out.out == ""


def test_an_unwritable_sarif_path_is_found_before_the_check(tmp_path, capsys):
    status = main(["check", RING, "--sarif", str(tmp_path / "missing" / "x.sarif")])
    out = _one_line_error(capsys, status)
    assert "no writable folder" in out.err and out.out == ""


@pytest.mark.parametrize("func,says", [
    ("pair", "its first element is a int, not the @cute.jit function"),
    ("bare", "its second element is a int, not the tuple of launch arguments"),
    ("raises", "raised RuntimeError: boom"),
    ("nosuch", "no function 'nosuch'"),
])
def test_a_func_that_returns_the_wrong_thing_is_bad_input(targets, func, says, capsys):
    status = main(["check", f"{targets}:{func}"])
    out = _one_line_error(capsys, status)
    assert "ERROR" in out.out and says in out.out, out.out


def test_a_missing_file_is_bad_input(capsys):
    status = main(["check", "/no/such/file.py:f"])
    out = _one_line_error(capsys, status)
    assert "no such file" in out.out


@pytest.mark.parametrize("flag", [["--json"], ["--sarif", "-"]])
def test_stdout_is_one_document_whatever_func_prints(targets, flag):
    """In a subprocess: the print of FUNC and a write to file descriptor 1 go to stderr."""
    p = subprocess.run([sys.executable, "-c", "import sys; from warpspin.cli import main; "
                        "sys.exit(main(sys.argv[1:]))", "check", f"{targets}:noisy", "--jobs", "1",
                        *flag], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert ("targets" in doc) if flag == ["--json"] else (doc["version"] == "2.1.0")
    assert "a library talking" in p.stderr and "written below Python" in p.stderr


def test_an_internal_error_is_one_line_not_a_traceback(monkeypatch, capsys):
    import warpspin.cli as cli

    def broken(*a, **k):
        raise KeyError("a bug")
    monkeypatch.setattr(cli, "check_target", broken)
    status = main(["check", RING])
    out = _one_line_error(capsys, status)
    assert "internal error (a bug of warpspin's" in out.err and "KeyError" in out.err
