"""`warpspin doctor` and `warpspin --version`: what is found, and for what is missing the one
command that installs it."""
import pytest

from warpspin import doctor
from warpspin.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"warpspin {doctor.version()}"


def test_doctor_finds_everything_here(capsys):
    """make test installs the DSL, SPIN and gcc: all found, and a kernel traces."""
    pytest.importorskip("cutlass")
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "everything warpspin needs is here" in out
    for name in ("CuTe DSL", "SPIN", "gcc", "tracing on the CPU"):
        assert any(line.split()[0] == "ok" and name in line for line in out.splitlines()), name


def test_a_missing_tool_is_named_with_its_install_command(monkeypatch):
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    text, ok = doctor.report(doctor.checks(trace=False))
    assert not ok
    assert "missing  SPIN" in text and "help: apt-get install -y spin" in text
    assert "help: apt-get install -y gcc" in text


def test_a_missing_dsl_is_named_with_its_install_command(monkeypatch):
    real = doctor.metadata.version

    def version(name):
        if name == doctor.DSL_PACKAGE:
            raise doctor.metadata.PackageNotFoundError(name)
        return real(name)
    monkeypatch.setattr(doctor.metadata, "version", version)
    text, ok = doctor.report(doctor.checks())
    assert not ok and "tracing on the CPU" not in text
    assert f"help: python -m pip install '{doctor.DSL_PACKAGE}=={doctor.DSL_PIN}'" in text


def test_the_pin_doctor_names_is_the_one_ci_installs():
    import os
    import tomllib
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert f"{doctor.DSL_PACKAGE}=={doctor.DSL_PIN}" in extras["dsl"]
