"""Builds and runs the C++ unit tests of the core (tests/cpp/core_tests.cpp)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def core_tests(tmp_path_factory) -> Path:
    cmake = shutil.which("cmake")
    assert cmake, "cmake is needed to build the C++ unit tests (pip install cmake)"
    build = tmp_path_factory.mktemp("cpp")
    for command in (
        [cmake, "-S", str(ROOT), "-B", str(build), "-DMONOPROP_PYTHON=OFF", "-DMONOPROP_TESTS=ON",
         "-DCMAKE_BUILD_TYPE=Debug"],
        [cmake, "--build", str(build), "-j", "2"],
    ):
        run = subprocess.run(command, capture_output=True, text=True)
        assert run.returncode == 0, f"{' '.join(command)} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return build / "core_tests"


def test_core_unit_tests_pass(core_tests: Path) -> None:
    run = subprocess.run([str(core_tests)], capture_output=True, text=True, timeout=300)
    summary = re.search(r"(\d+) passed, (\d+) failed", run.stdout)
    assert summary, run.stdout + run.stderr
    assert int(summary.group(2)) == 0 and run.returncode == 0, run.stdout
    assert int(summary.group(1)) > 1000  # the randomized algebra checks ran
