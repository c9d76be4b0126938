"""The examples run and agree with exact references: ground energies, dense state vectors
(vqe_tfim.py is the README's main job)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import monoprop

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Examples write files (vqe_tfim.png) to the working directory: keep them out of the tree.
    monkeypatch.chdir(tmp_path)


def run_example(name: str, *args: str) -> str:
    """stdout of ``python examples/<name> *args`` in the working directory; fails on an error."""
    run = launch_example(name, *args)
    assert run.returncode == 0, run.stderr
    return run.stdout


def launch_example(name: str, *args: str) -> subprocess.CompletedProcess:
    """``python examples/<name> *args`` in the working directory, as it ended."""
    return subprocess.run(
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


def tfim_graph_counts(n: int, layers: int) -> tuple[int, int]:
    """(terms, rotation pairs) of vqe_tfim.py's untruncated Heisenberg-picture graph, counted
    on Pauli strings as (x, z) bit masks, independently of the engine.

    Going through the gates last to first, every held string P that anticommutes with the
    gate's generator G rotates into G P (phases aside); {P, G P} is one rotation pair, counted
    once when both are held, and G P joins the held strings. No string is ever dropped: the
    cutoff is the chain length and no seed is given, so nothing is truncated.
    """

    def string(letter: str, qubits: list[int]) -> tuple[int, int]:
        x = sum(1 << q for q in qubits) if letter in "XY" else 0
        z = sum(1 << q for q in qubits) if letter in "ZY" else 0
        return x, z

    gates = [string("Y", [i]) for i in range(n)]
    for _ in range(layers):
        gates += [string("Z", [i, i + 1]) for i in range(n - 1)]
        gates += [string("X", [i]) for i in range(n)]
    held = {string("Z", [i, i + 1]) for i in range(n - 1)} | {string("X", [i]) for i in range(n)}
    n_cycles = 0
    for gx, gz in reversed(gates):
        pairs = {
            frozenset({(x, z), (x ^ gx, z ^ gz)})
            for x, z in held
            if ((x & gz) ^ (z & gx)).bit_count() % 2  # odd overlap: anticommute
        }
        n_cycles += len(pairs)
        held |= {p for pair in pairs for p in pair}
    return len(held), n_cycles


def test_vqe_tfim_reaches_the_exact_ground_energy(tmp_path: Path) -> None:
    out = run_example("vqe_tfim.py", "--qubits", "6", "--layers", "3")
    # The graph's size under graph_size()'s documented names, in its order (n_cos_only,
    # n_cycles): untruncated, so no cos-only entry, and the rotation pairs counted above.
    graph = re.search(r"(\d+) terms, graph_size\(\): n_cos_only (\d+), n_cycles (\d+)", out)
    assert graph, out
    terms, n_cycles = tfim_graph_counts(6, 3)
    assert (int(graph.group(1)), int(graph.group(2)), int(graph.group(3))) == (terms, 0, n_cycles)
    vqe = float(re.search(r"VQE energy\s+(-?[\d.]+)", out).group(1))
    exact, error = re.search(r"exact energy\s+(-?[\d.]+)\s+\(error (\S+)\)", out).groups()
    exact, error = float(exact), float(error)
    assert vqe >= exact - 1e-9, out  # variational: never below the ground state
    assert vqe - exact < 1e-3, out
    assert error == pytest.approx(vqe - exact, rel=1e-2, abs=1e-9), out  # printed to 3 digits
    assert re.search(r"evaluations in [\d.]+ s: \d+ evaluations/s", out), out
    # The convergence plot goes to the working directory by default.
    assert (tmp_path / "vqe_tfim.png").read_bytes().startswith(b"\x89PNG"), out


def test_vqe_tfim_plots_the_error_on_a_log_scale() -> None:
    spec = importlib.util.spec_from_file_location("vqe_tfim", EXAMPLES / "vqe_tfim.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    import matplotlib  # in the [test] extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    energies, norms, exact = (
        [-1.0, -1.9, -1.99, -1.999, -2.0 + 1e-9],
        [3.0, 1.0, 0.1, 1e-2, 1e-4],
        -2.0,
    )
    figure = example.convergence_figure(energies, norms, exact)
    try:
        top, bottom = figure.axes
        assert (top.get_yscale(), bottom.get_yscale()) == ("linear", "log")
        np.testing.assert_allclose(top.lines[0].get_ydata(), energies)
        # Energy minus the exact value, per evaluation: 1, 0.1, 0.01, 0.001, 1e-9.
        np.testing.assert_allclose(
            bottom.lines[0].get_ydata(), [1, 0.1, 0.01, 1e-3, 1e-9], rtol=1e-6
        )
    finally:
        plt.close(figure)
    # Without an exact value (above 12 qubits) the log panel shows the gradient norm.
    figure = example.convergence_figure(energies, norms, None)
    try:
        bottom = figure.axes[1]
        assert bottom.get_yscale() == "log" and bottom.get_ylabel() == "|gradient|"
        np.testing.assert_allclose(bottom.lines[0].get_ydata(), norms)
    finally:
        plt.close(figure)


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
        r"ADAPT energy\s+(-?[\d.]+) ± \S+\s+\((\d+) gates, (\d+) replays, (\d+) refreshes", out
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
    best = re.search(r"energy (-?[\d.]+) ± (\S+), untruncated\s+(-?[\d.]+)", second)
    energy, bound, untruncated = (float(v) for v in best.groups())
    # The best trial's angles, evaluated without truncation, are variational and close, and
    # within the trial's error bar (printed to two digits).
    assert ground - 1e-9 <= untruncated < ground + 1e-3, second
    assert abs(untruncated - energy) <= 1.06 * bound + 1e-9, second


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
    energies = re.findall(r"energy (-?[\d.]+ ± \S+), untruncated", first)
    assert energies and energies == re.findall(r"energy (-?[\d.]+ ± \S+), untruncated", second), (
        second
    )


def test_error_bars_hold_the_exact_value_and_shrink_with_the_tolerance() -> None:
    out = run_example(
        "error_bars.py", "--qubits", "10", "--steps", "4", "--points", "9", "--no-plot"
    )
    rows = re.findall(
        r"lower_atol (\S+) .*E = (\S+) ± (\S+) \(estimate (\S+), actual error (\S+)\).*"
        r"worst actual (\S+), worst bound (\S+)",
        out,
    )
    assert len(rows) == 3, out
    bounds = []
    for _, _, bound, estimate, actual, worst_actual, worst_bound in rows:
        assert float(actual) <= float(bound) and float(worst_actual) <= float(worst_bound), out
        assert 0.0 < float(estimate) <= float(bound), out
        bounds.append(float(bound))
    assert bounds == sorted(bounds, reverse=True), out  # tighter tolerance, smaller bound


def test_distributed_runs_as_one_process_and_matches_the_dense_state() -> None:
    """Without MPI (this suite's monoprop) the example runs as one rank; 6 qubits under a
    cutoff of 6 is exact, so its energy and gradient norm are those of the state vector."""
    import _dense_circuit as dc
    from dense_reference import basis_state

    out = run_example("distributed.py", "--rows", "2", "--cols", "3", "--cutoff", "6")
    assert "1 rank(s) x 1 thread(s)" in out, out
    assert "one rank alone" not in out, out  # nothing to compare with on one rank
    energy = float(re.search(r"energy (\S+),", out).group(1))
    norm = float(re.search(r"gradient norm (\S+)", out).group(1))
    terms = re.search(r"^\s+0 +(\d+) .*\|", out, re.MULTILINE)
    assert terms and f"terms in all {terms.group(1)}," in out, out

    spec = importlib.util.spec_from_file_location("distributed", EXAMPLES / "distributed.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    circuit = example.ansatz(2, 3, 2)
    theta = example.starting_point(circuit.n_parameters, 1)
    h = dc.operator_matrix(example.tfim_hamiltonian(2, 3, 1.0, 3.0), 6)
    # <psi|H|psi> for psi = U_L ... U_1 |0>, and d/dtheta_k = 2 Re <psi| H U_L..U_{k+1} i G_k
    # U_k ... U_1 |0>, accumulated from the last gate back.
    gates = dc.gate_unitaries(circuit, theta)
    states = [basis_state([], 6)]
    for u, _, _ in gates:
        states.append(u @ states[-1])
    bra = h @ states[-1]
    gradient = np.zeros(circuit.n_parameters)
    for k in reversed(range(len(gates))):
        u, g, slot = gates[k]
        gradient[slot] += 2 * np.vdot(bra, 1j * g @ states[k + 1]).real
        bra = u.conj().T @ bra
    assert energy == pytest.approx(np.vdot(states[-1], h @ states[-1]).real, abs=1e-10), out
    assert norm == pytest.approx(np.linalg.norm(gradient), abs=1e-9), out


def test_distributed_stops_at_its_memory_limit() -> None:
    # 60 MB is about what Python, numpy and monoprop take before the build (which needs some
    # 75 MB more): the example is refused either at construction or during the build.
    run = launch_example("distributed.py", "--memory-limit", "60M")
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(r"^refused: .*memory budget of 60\.0 MB", run.stdout, re.MULTILINE), run.stdout


def load_example(name: str):
    """examples/<name> imported as a module (its main() not run)."""
    spec = importlib.util.spec_from_file_location(Path(name).stem, EXAMPLES / name)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


def test_qaoa_landscape_matches_the_dense_statevector() -> None:
    """The landscape of qaoa_landscape.py's propagator against Qiskit's own statevector of the
    same qaoa_ansatz circuit, bound by parameter object (not by slot), on a 10-node graph."""
    pytest.importorskip("qiskit")
    from qiskit.quantum_info import Statevector

    from monoprop.optimize import landscape

    example = load_example("qaoa_landscape.py")
    edges = example.random_regular_graph(10, seed=3)
    degrees = np.bincount(np.array(edges).ravel(), minlength=10)
    assert len(set(edges)) == 15 and all(a < b for a, b in edges) and set(degrees) == {3}
    hamiltonian = example.maxcut_hamiltonian(edges, 10)
    propagator, ansatz, gamma_slot, beta_slot = example.qaoa_propagator(hamiltonian)
    by_name = {parameter.name: parameter for parameter in ansatz.parameters}
    gamma, beta = by_name["γ[0]"], by_name["β[0]"]
    gammas, betas = np.array([0.0, 0.4, 1.3, 2.9]), np.array([0.1, 0.7, 1.2])
    out = landscape(propagator, [gammas, betas], parameters=[gamma_slot, beta_slot])
    for i, g in enumerate(gammas):
        for j, b in enumerate(betas):
            state = Statevector(ansatz.assign_parameters({gamma: g, beta: b}))
            assert out[i, j] == pytest.approx(state.expectation_value(hamiltonian).real, abs=1e-10)
    # The grid spans one period of <H> in each angle, as the example says.
    shifted = landscape(
        propagator,
        [gammas + example.GAMMA_PERIOD, betas + example.BETA_PERIOD],
        parameters=[gamma_slot, beta_slot],
    )
    np.testing.assert_allclose(shifted, out, atol=1e-10)


def test_qaoa_landscape_finds_and_refines_the_best_grid_point(tmp_path: Path) -> None:
    pytest.importorskip("qiskit")
    out = run_example("qaoa_landscape.py", "--nodes", "12", "--grid", "12", "--starts", "3")
    assert re.search(r"graph: 12 nodes, 18 edges", out), out
    assert re.search(r"12 x 12 = 144 points in [\d.]+ s", out), out
    number = r"(-?[\d.]+)"
    best = re.search(rf"best grid .*<H> {number}, expected cut {number} of 18 edges", out)
    refined = re.search(rf"refined .*<H> {number}, expected cut {number} of 18 edges", out)
    assert best and refined, out
    grid_energy, grid_cut = float(best.group(1)), float(best.group(2))
    energy, cut = float(refined.group(1)), float(refined.group(2))
    assert grid_cut == pytest.approx((18 - grid_energy) / 2, abs=1e-4), out
    assert energy <= grid_energy and cut >= grid_cut > 9, out  # better than a random cut
    assert (tmp_path / "qaoa_landscape.png").read_bytes().startswith(b"\x89PNG"), out


def test_qaoa_landscape_refuses_a_graph_that_cannot_be_3_regular() -> None:
    run = launch_example("qaoa_landscape.py", "--nodes", "9", "--no-plot")
    assert run.returncode == 2 and "no 3-regular graph has 9 nodes" in run.stderr, run.stderr
