"""The C++ package: builds and installs libmonoprop with its headers and CMake package
into a temporary prefix, builds the consumer in examples/cpp against it with
find_package(monoprop), and runs it at one and at two threads."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cmake_build import ROOT, cmake_build, run_checked

EXAMPLE = ROOT / "examples" / "cpp"
SUMMARY = "monoprop C++ example: all checks passed"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The install prefix of a Release build of the core (Python module off)."""
    build = tmp_path_factory.mktemp("cxx-build")
    prefix = tmp_path_factory.mktemp("cxx-prefix")
    cmake_build(
        ROOT,
        build,
        "-DMONOPROP_PYTHON=OFF",
        "-DMONOPROP_INSTALL_CXX=ON",
        "-DCMAKE_BUILD_TYPE=Release",
    )
    run_checked([shutil.which("cmake"), "--install", str(build), "--prefix", str(prefix)])
    return prefix


@pytest.fixture(scope="module")
def example(installed: Path, tmp_path_factory) -> Path:
    """examples/cpp built against the installed package only."""
    build = tmp_path_factory.mktemp("cxx-example")
    cmake_build(EXAMPLE, build, f"-DCMAKE_PREFIX_PATH={installed}", "-DCMAKE_BUILD_TYPE=Release")
    return build / "monoprop_example"


def test_install_layout(installed: Path) -> None:
    headers = installed / "include" / "monoprop"
    assert (headers / "monomial_propagator.h").is_file()
    assert (headers / "team.h").is_file()  # included by the headers, so shipped too
    configs = list(installed.glob("lib*/cmake/monoprop/monopropConfig.cmake"))
    assert len(configs) == 1, sorted(str(p) for p in installed.rglob("*"))
    package = configs[0].parent
    for name in ("monopropConfigVersion.cmake", "monopropTargets.cmake"):
        assert (package / name).is_file(), name
    assert list(package.parent.parent.glob("libmonoprop.so*")) or list(
        package.parent.parent.glob("libmonoprop*.dylib")
    )
    # The exported target carries OpenMP, which the config finds first.
    assert "find_dependency(OpenMP" in configs[0].read_text()
    targets = (package / "monopropTargets.cmake").read_text()
    assert "monoprop::monoprop" in targets and "OpenMP::OpenMP_CXX" in targets


@pytest.mark.parametrize("threads", ["1", "2"])
def test_cpp_example_runs(example: Path, threads: str) -> None:
    env = {**os.environ, "monoprop_NUM_THREADS": threads}
    run = subprocess.run([str(example)], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert SUMMARY in run.stdout, run.stdout + run.stderr
    assert f"(threads {threads}," in run.stdout, run.stdout
