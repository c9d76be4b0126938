"""The examples run and reach the exact ground energy (vqe_tfim.py is the README's main job)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import monoprop

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Examples write files (vqe_tfim.png) to the working directory: keep them out of the tree.
    monkeypatch.chdir(tmp_path)


def run_example(name: str, *args: str) -> str:
    """stdout of ``python examples/<name> *args`` in the working directory; fails on an error."""
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            # The monoprop these tests import, installed or from a source tree.
            "PYTHONPATH": str(Path(monoprop.__file__).parents[1]),
            # One thread: these graphs are small, and two threads on a loaded two-core
            # machine were seen to stall a run by 10x and more.
            "monoprop_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        },
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_vqe_tfim_reaches_the_exact_ground_energy(tmp_path: Path) -> None:
    out = run_example("vqe_tfim.py", "--qubits", "6", "--layers", "3")
    vqe = float(re.search(r"VQE energy\s+(-?[\d.]+)", out).group(1))
    exact = float(re.search(r"exact energy\s+(-?[\d.]+)", out).group(1))
    assert vqe >= exact - 1e-9, out  # variational: never below the ground state
    assert vqe - exact < 1e-3, out
    # The convergence plot goes to the working directory by default.
    assert (tmp_path / "vqe_tfim.png").read_bytes().startswith(b"\x89PNG"), out


def test_noisy_vqe_recovers_the_noise_rate() -> None:
    out = run_example("noisy_vqe.py", "--qubits", "4", "--layers", "2", "--true-rate", "0.02")
    clean = float(re.search(r"VQE energy without noise\s+(-?[\d.]+)", out).group(1))
    noisy = float(re.search(r"VQE energy at rate \S+\s+(-?[\d.]+)", out).group(1))
    recovered = float(re.search(r"recovered rate ([\d.]+)", out).group(1))
    # Depolarizing pulls every Pauli term towards 0, so the best noisy energy lies above the
    # noiseless one; the fit recovers the rate behind the data up to its 1e-4 shot noise.
    assert noisy > clean + 1e-3, out
    assert abs(recovered - 0.02) < 1e-3, out


def test_vqe_hubbard_reaches_the_exact_ground_energy() -> None:
    out = run_example("vqe_hubbard.py", "--sites", "4", "--interaction", "4", "--layers", "2")
    hartree_fock = float(re.search(r"HF energy\s+(-?[\d.]+)", out).group(1))
    vqe = float(re.search(r"VQE energy\s+(-?[\d.]+)", out).group(1))
    exact = float(re.search(r"exact energy\s+(-?[\d.]+)", out).group(1))
    assert vqe >= exact - 1e-9, out  # variational: never below the ground state of the sector
    # Two layers bring 4 sites at U = 4 to about 8e-8 from the exact energy; HF is 1.48 above.
    assert vqe - exact < 1e-5, out
    assert vqe < hartree_fock - 1.0, out


def test_adapt_vqe_reaches_the_exact_ground_energy() -> None:
    out = run_example("adapt_vqe.py", "--qubits", "4", "--max-rounds", "30")
    adapt = re.search(
        r"ADAPT energy\s+(-?[\d.]+)\s+\((\d+) gates, (\d+) replays, (\d+) refreshes", out
    )
    exact = float(re.search(r"exact energy\s+(-?[\d.]+)", out).group(1))
    energy, gates, refreshes = float(adapt.group(1)), int(adapt.group(2)), int(adapt.group(4))
    rounds = re.findall(r"^round (\d+): gate (\S+)\s+\|grad\|", out, flags=re.MULTILINE)
    assert "converged" in out, out  # stopped on the gradient test, not on --max-rounds
    assert energy >= exact - 1e-9, out  # variational: never below the ground state
    assert energy - exact < 1e-8, out  # observed ~2e-15 at 4 qubits, h = 1
    # One gate per round, and the one Objective (made on the empty graph) refreshed its
    # functional once after each build_graph.
    assert [int(k) for k, _ in rounds] == list(range(1, gates + 1))
    assert refreshes == gates > 0


def test_optuna_study_resumes_from_its_sqlite_file(tmp_path: Path) -> None:
    args = ("--qubits", "4", "--seed", "0")
    first = run_example("optuna_study.py", "--trials", "6", *args)
    assert (tmp_path / "monoprop.db").exists(), first  # the default storage, in the cwd
    assert re.search(r"study 'tfim-4': 6 trials", first), first
    # A second worker (here, a later one) on the same storage adds to the same study, up to
    # the study's total --max-trials.
    second = run_example("optuna_study.py", "--trials", "5", "--max-trials", "8", *args)
    assert re.search(r"study 'tfim-4': 8 trials", second), second
    ground = float(re.search(r"ground energy\s+(-?[\d.]+)", second).group(1))
    untruncated = float(re.search(r"untruncated\s+(-?[\d.]+)", second).group(1))
    # The best trial's angles, evaluated without truncation, are variational and close.
    assert ground - 1e-9 <= untruncated < ground + 1e-3, second


def test_optuna_study_keeps_its_graphs_and_loads_them_again(tmp_path: Path) -> None:
    """With --graphs a second study over the same settings loads every graph the first built
    (nothing is rewritten) and finds the same energies."""
    args = ("--qubits", "4", "--seed", "0", "--trials", "4", "--graphs", "graphs")
    first = run_example("optuna_study.py", *args, "--study-name", "first")
    graphs = {
        p.name: (p / "monoprop.json").stat().st_mtime_ns for p in (tmp_path / "graphs").iterdir()
    }
    assert 1 <= len(graphs) <= 4 and all(name.startswith("tfim4-layers") for name in graphs), first
    second = run_example("optuna_study.py", *args, "--study-name", "second")
    again = {
        p.name: (p / "monoprop.json").stat().st_mtime_ns for p in (tmp_path / "graphs").iterdir()
    }
    assert again == graphs, second
    energies = re.findall(r"energy (-?[\d.]+), untruncated", first)
    assert energies and energies == re.findall(r"energy (-?[\d.]+), untruncated", second), second
