"""An Optuna study whose trials run distributed over MPI.COMM_WORLD (monoprop.optimize).

Run under mpiexec with pytest-mpi, for example ``mpiexec -n 2 pytest --with-mpi tests/mpi``.
The ranks of the launch are one worker: rank 0 talks to the storage and broadcasts each
suggestion, every rank runs the distributed propagator. Each trial's energy must match a
single-process ``minimize`` of the same problem, and its cost attributes the single-process
propagator's counts (the distributed ones are summed over the ranks).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mpi4py")
optuna = pytest.importorskip("optuna")
from mpi4py import MPI  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

import monoprop  # noqa: E402
from monoprop import Circuit, ExpGate, Pauli, PauliOperator, PauliPropagator  # noqa: E402
from monoprop.optimize import minimize, run_study  # noqa: E402

WORLD = MPI.COMM_WORLD
N = 5

pytestmark = pytest.mark.skipif(not monoprop.has_mpi, reason="monoprop was built without MPI")


def tfim(n: int) -> PauliOperator:
    terms = {Pauli("ZZ", (i, i + 1)): -1.0 for i in range(n - 1)}
    terms.update({Pauli("X", i): -0.8 for i in range(n)})
    return PauliOperator(terms, n)


def ansatz(n: int, layers: int) -> Circuit:
    gates = [ExpGate(PauliOperator({Pauli("Y", i): 1.0}, n)) for i in range(n)]
    for _ in range(layers):
        gates += [ExpGate(PauliOperator({Pauli("ZZ", (i, i + 1)): 1.0}, n)) for i in range(n - 1)]
        gates += [ExpGate(PauliOperator({Pauli("X", i): 1.0}, n)) for i in range(n)]
    return Circuit(gates, n)


def problem(layers: int, max_weight: int, comm) -> tuple:
    circuit = ansatz(N, layers)
    prop = PauliPropagator(tfim(N), [], cutoff=max_weight, comm=comm)
    prop.build_graph(circuit)
    x0 = np.random.default_rng(layers).normal(scale=0.2, size=circuit.n_parameters)
    return prop, x0


def make_problem(trial) -> tuple:
    layers = trial.suggest_int("layers", 1, 2)
    max_weight = trial.suggest_int("max_weight", 2, N)
    prop, x0 = problem(layers, max_weight, WORLD)
    return prop, x0, {"options": {"maxiter": 60}}


@pytest.mark.mpi(min_size=1)
def test_a_distributed_study_matches_single_process_optimisations(tmp_path) -> None:
    # Rank 0 alone opens the storage; its path is the one that counts.
    storage = WORLD.bcast(f"sqlite:///{tmp_path / 'study.db'}", root=0)
    study = run_study(
        make_problem,
        n_trials=4,
        storage=storage,
        sampler=optuna.samplers.RandomSampler(seed=3),
        comm=WORLD,
    )
    if WORLD.rank != 0:
        assert study is None
        return
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 4
    for trial in trials:
        prop, x0 = problem(trial.params["layers"], trial.params["max_weight"], None)
        reference = minimize(prop, x0, options={"maxiter": 60})
        # Sums over ranks round differently (1e-15), which moves an optimiser path stopped by
        # maxiter by about 1e-9; different settings differ by 1e-3 and more.
        assert trial.value == pytest.approx(reference.fun, abs=1e-7), trial.params
        assert trial.user_attrs["terms"] == prop.size()
        assert trial.user_attrs["graph_entries"] == sum(prop.graph_size())
