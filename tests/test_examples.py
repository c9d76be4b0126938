"""The README's main job: the TFIM VQE example reaches the exact ground energy."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import monoprop

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "vqe_tfim.py"


def test_vqe_tfim_reaches_the_exact_ground_energy() -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), "--qubits", "6", "--layers", "3"],
        capture_output=True,
        text=True,
        timeout=300,
        # The monoprop these tests import, installed or from a source tree.
        env={**os.environ, "PYTHONPATH": str(Path(monoprop.__file__).parents[1])},
    )
    assert run.returncode == 0, run.stderr
    vqe = float(re.search(r"VQE energy\s+(-?[\d.]+)", run.stdout).group(1))
    exact = float(re.search(r"exact energy\s+(-?[\d.]+)", run.stdout).group(1))
    assert vqe >= exact - 1e-9  # variational: never below the ground state
    assert vqe - exact < 1e-3, run.stdout
