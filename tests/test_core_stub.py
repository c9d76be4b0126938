"""monoprop/_core.pyi is what pybind11-stubgen makes of the built module, and ships with
py.typed, so type checkers see the compiled core's signatures as they are."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import monoprop

COMMITTED = Path(__file__).resolve().parents[1] / "monoprop" / "_core.pyi"
INSTALLED = Path(monoprop.__file__).resolve().parent

# Values that depend on how the module was built, not on its interface.
BUILD_VALUES = [
    (re.compile(r"^has_mpi: bool = .*$", re.M), "has_mpi: bool = <build>"),
    (re.compile(r"^__build_type__: str = .*$", re.M), "__build_type__: str = <build>"),
]


def interface(stub: str) -> str:
    for pattern, replacement in BUILD_VALUES:
        stub = pattern.sub(replacement, stub)
    return stub


def test_the_typing_markers_ship_with_the_package():
    assert (INSTALLED / "py.typed").is_file()
    assert (INSTALLED / "_core.pyi").is_file()


def test_the_committed_stub_matches_the_built_module(tmp_path):
    pytest.importorskip(
        "pybind11_stubgen", reason="pybind11-stubgen is not installed (the [test] extra has it)"
    )
    # The child imports the same monoprop as this test: its parent directory goes first.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(INSTALLED.parent), *sys.path]))
    subprocess.run(
        [sys.executable, "-m", "pybind11_stubgen", "monoprop._core", "-o", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    fresh = (tmp_path / "monoprop" / "_core.pyi").read_text()
    assert interface(fresh) == interface(COMMITTED.read_text()), (
        "monoprop/_core.pyi is out of date; regenerate it with "
        "`python -m pybind11_stubgen monoprop._core -o .` from a directory whose monoprop "
        "is the built one, and copy monoprop/_core.pyi over the committed file."
    )
