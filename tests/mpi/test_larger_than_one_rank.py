"""Larger than one process: a graph that one process's memory budget refuses is built over the
ranks, each under the same budget, with the value and gradient of an unlimited single process.

The budget is per process (each rank reads its own resident memory and its own
``monoprop_MEMORY_LIMIT``), so R ranks can hold what one cannot: each holds about 1/R of the
terms, while the entries that pair terms on two ranks are kept by both. The test measures the
workload first (every rank, unlimited: the distributed build and replay, then one process
alone), sets ``monoprop_MEMORY_LIMIT`` halfway between what a rank needed and what one process
needed, and then shows that one process is refused under it, unchanged, while the ranks build
under it and agree with the single process to 1e-12 (relative).

On two ranks the limit covers the build (which the budget governs); on four it covers the
value and gradient replay as well: a replay keeps both inputs of every entry two ranks share,
which on two ranks outweighs the half of the terms each holds. The measured need is that of a
replay on the shards' own graph; the replay under the limit lays the graph out over the ranks
only if the budget has room for that second copy. Resident memory is read from
/proc (Linux); freed heap is handed back with glibc's ``malloc_trim`` between the phases, so
that what the process holds is what its objects hold.

A second test launches ``examples/distributed.py`` on four ranks from the one-rank leg.
"""

from __future__ import annotations

import ctypes
import gc
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mpi4py")
from mpi4py import MPI  # noqa: E402

import monoprop  # noqa: E402
from monoprop import Circuit, ExpGate, Pauli, PauliOperator, PauliPropagator  # noqa: E402

WORLD = MPI.COMM_WORLD
ENV = "monoprop_MEMORY_LIMIT"
TOL = 1e-12  # relative

pytestmark = [
    pytest.mark.skipif(not monoprop.has_mpi, reason="monoprop was built without MPI"),
    pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc"),
]

# A 2D transverse-field Ising model on 8 x 9 qubits (keys of four words) under two layers of a
# Hamiltonian-variational ansatz with a weight cutoff of 5: 1.3 million terms, about 75 MB
# for one process's build and 100 MB with its replay; a few seconds on four ranks.
ROWS, COLS, LAYERS, CUTOFF = 8, 9, 2, 5
N = ROWS * COLS


def problem() -> tuple[PauliOperator, list[ExpGate]]:
    bonds = [(q, q + 1) for q in range(N) if (q + 1) % COLS]
    bonds += [(q, q + COLS) for q in range(N - COLS)]
    hamiltonian = {Pauli("ZZ", b): -1.0 for b in bonds}
    hamiltonian.update({Pauli("X", q): -3.0 for q in range(N)})
    gates = [ExpGate(PauliOperator({Pauli("Y", q): 1.0}, N)) for q in range(N)]
    for _ in range(LAYERS):
        gates += [ExpGate(PauliOperator({Pauli("ZZ", b): 1.0}, N)) for b in bonds]
        gates += [ExpGate(PauliOperator({Pauli("X", q): 1.0}, N)) for q in range(N)]
    return PauliOperator(hamiltonian, N), gates


def resident() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak() -> None:
    gc.collect()
    # Freed heap pages that malloc kept would count as held, and be reused without growing
    # the process.
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # restarts VmHWM, the peak resident memory


def peak() -> int:
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def state(prop) -> tuple:
    """What a refused build must leave as it was."""
    terms = dict(prop.evolved_operator(atol=0.0).terms)
    return prop.size(), prop.graph_layers, prop.graph_size(), prop.n_parameters, terms


@pytest.mark.mpi(min_size=2)
def test_a_build_one_process_refuses_fits_on_the_ranks(monkeypatch):
    observable, gates = problem()
    circuit = Circuit(gates, N)
    theta = np.random.default_rng(7).uniform(-0.3, 0.3, circuit.n_parameters)
    replay_too = WORLD.size >= 4
    context = f"{WORLD.size} ranks x {int(os.environ.get('monoprop_NUM_THREADS', '0'))} threads"

    # The footprints, unlimited: every rank's share, then one process alone (on every rank,
    # so that no rank waits while another works).
    monkeypatch.delenv(ENV, raising=False)
    reset_peak()
    held = resident()
    dist = PauliPropagator(observable, [], cutoff=CUTOFF, comm=WORLD)
    dist.build_graph(circuit)
    rank_build = peak() - held
    # What a rank needs: its replay on the shards' own graph. A layout over the ranks holds
    # the graph again, and is made only where the budget has room for it.
    dist._engine._set_replay_layout("never")
    dist.expectation_value_and_gradient(theta)
    rank_all = peak() - held
    del dist
    reset_peak()
    held = resident()
    alone = PauliPropagator(observable, [], cutoff=CUTOFF)
    alone.build_graph(circuit)
    one_build = peak() - held
    value_ref, gradient_ref = alone.expectation_value_and_gradient(theta)
    size_ref = alone.size()
    del alone

    rank_need = WORLD.allreduce(rank_all if replay_too else rank_build, op=MPI.MAX)
    one_need = WORLD.allreduce(one_build, op=MPI.MIN)
    mb = 1e-6
    assert rank_need < 0.85 * one_need, (
        f"{context}: a rank needed {rank_need * mb:.1f} MB "
        f"({'build and replay' if replay_too else 'build'}), one process "
        f"{one_need * mb:.1f} MB for its build: the work does not divide over the ranks"
    )
    reset_peak()
    limit = WORLD.allreduce(resident(), op=MPI.MAX) + (rank_need + one_need) // 2
    # Set as a user sets it for every rank of a launch; read at construction.
    monkeypatch.setenv(ENV, str(limit))

    # One process under the limit: refused before it passes the limit, and unchanged.
    reset_peak()
    alone = PauliPropagator(observable, [], cutoff=CUTOFF)
    assert alone.memory_limit is None  # not given: the environment's
    before = state(alone)
    with pytest.raises(MemoryError) as refused:
        alone.build_graph(circuit)
    message = str(refused.value)
    # Its traceback holds the build's frames, and with them the propagator and what it grew to.
    del refused
    assert f"{ENV}={limit}" in message, message
    assert re.search(r"build_graph stopped at layer \d+ of \d+", message), message
    assert "left as it was" in message, message
    assert peak() <= limit, f"{context}: the refused build passed the limit"
    assert state(alone) == before
    alone.build_graph(Circuit(gates[:N], N))  # still usable: the first layer of gates fits
    assert alone.graph_layers == N
    del alone

    # The ranks, under the same limit: every rank stays under it.
    reset_peak()
    dist = PauliPropagator(observable, [], cutoff=CUTOFF, comm=WORLD)
    dist.build_graph(circuit)
    build_peaks = WORLD.allgather(peak())
    value, gradient = dist.expectation_value_and_gradient(theta)
    peaks = WORLD.allgather(peak())
    shares = WORLD.allgather(sum(dist.memory().values()))
    print(
        f"\n{context}: limit {limit * mb:.1f} MB; peaks {[round(p * mb, 1) for p in build_peaks]} "
        f"MB (build), {[round(p * mb, 1) for p in peaks]} MB (replay); memory() "
        f"{[round(s * mb, 1) for s in shares]} MB; one process needed {one_need * mb:.1f} MB "
        f"more for its build, a rank {rank_need * mb:.1f} MB"
    )
    assert max(build_peaks) <= limit, f"{context}: a rank passed the limit during the build"
    if replay_too:
        assert max(peaks) <= limit, f"{context}: a rank passed the limit during the replay"
    assert WORLD.allreduce(dist.size()) == size_ref, context
    assert abs(value - value_ref) <= TOL * abs(value_ref), (context, value, value_ref)
    worst = np.max(np.abs(gradient - gradient_ref))
    assert worst <= TOL * np.max(np.abs(gradient_ref)), (context, worst)


# ---------------------------------------------------------------------------------------
# The example, launched on four ranks (from the one-rank leg, as tests/mpi/test_launch.py)
# ---------------------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "distributed.py"
MPIEXEC = shutil.which(
    "mpiexec", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
)


def launch_example(ranks: int, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    # The child must not think it belongs to the launch that runs this test.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PMI_", "PMIX_", "HYDRA_", "MPIR_")) and k != ENV
    }
    env.update(OMP_NUM_THREADS="1", monoprop_NUM_THREADS="1")
    assert MPIEXEC, "mpiexec not found next to the interpreter or on PATH"
    return subprocess.run(
        [MPIEXEC, "-n", str(ranks), sys.executable, str(EXAMPLE), *args],
        env=env,
        cwd=cwd,  # not the source tree: the script imports the installed monoprop
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.skipif(WORLD.size > 1, reason="launches its own ranks: runs from one process")
def test_the_example_divides_the_terms_and_matches_one_rank(tmp_path):
    size = ("--rows", "6", "--cols", "11", "--layers", "2", "--cutoff", "4")
    run = launch_example(4, *size, "--memory-limit", "4G", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "4 rank(s) x 1 thread(s); memory budget 4000.0 MB a rank (--memory-limit)" in out, out
    rows = re.findall(r"^\s+(\d) +(\d+) +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ \|", out, re.MULTILINE)
    assert [int(r) for r, _ in rows] == [0, 1, 2, 3], out
    terms = [int(t) for _, t in rows]
    total = int(re.search(r"terms in all (\d+)", out).group(1))
    assert sum(terms) == total, out
    assert max(terms) < 0.3 * total, out  # about a quarter each
    alone = re.search(r"^  (\d+) terms, .* agree to (\S+) \(relative\)", out, re.MULTILINE)
    assert alone, out
    assert int(alone.group(1)) == total, out
    assert float(alone.group(2)) <= TOL, out
