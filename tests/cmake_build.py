"""CMake configure-and-build for the tests that compile C++ (the core's unit tests and the
C++ consumer example)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_checked(command: list[str]) -> None:
    """Runs `command`, failing the test with the tail of its output when it fails."""
    run = subprocess.run(command, capture_output=True, text=True)
    assert run.returncode == 0, (
        f"{' '.join(command)} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    )


def cmake_build(source: Path, build: Path, *options: str) -> None:
    """Configures `source` into `build` with `options` (Ninja when available) and builds it."""
    cmake = shutil.which("cmake")
    assert cmake, "cmake is needed to build C++ (pip install cmake)"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run_checked([cmake, "-S", str(source), "-B", str(build), *generator, *options])
    run_checked([cmake, "--build", str(build), "-j", "2"])
