"""Builds and runs the C++ unit tests of the core (core_tests: each part's tests beside it
as csrc/monoprop/<part>.test.cpp, run by tests/cpp/main.cpp): once plain, once under
AddressSanitizer and UndefinedBehaviorSanitizer."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from cmake_build import ROOT, cmake_build

BUILDS = {
    "debug": [],
    "sanitizers": [
        "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fno-omit-frame-pointer "
        "-fno-sanitize-recover=all"
    ],
}


@pytest.fixture(scope="module", params=sorted(BUILDS))
def core_tests(request, tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp(f"cpp-{request.param}")
    cmake_build(
        ROOT,
        build,
        "-DMONOPROP_PYTHON=OFF",
        "-DMONOPROP_TESTS=ON",
        "-DCMAKE_BUILD_TYPE=Debug",
        *BUILDS[request.param],
    )
    return build / "core_tests"


def test_core_unit_tests_pass(core_tests: Path) -> None:
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "print_stacktrace=1"}
    run = subprocess.run([str(core_tests)], capture_output=True, text=True, timeout=600, env=env)
    summary = re.search(r"(\d+) passed, (\d+) failed", run.stdout)
    assert summary, run.stdout + run.stderr
    assert int(summary.group(2)) == 0 and run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "runtime error" not in run.stderr, run.stderr[-3000:]  # UBSan findings
    assert int(summary.group(1)) > 1000  # the randomized algebra checks ran
