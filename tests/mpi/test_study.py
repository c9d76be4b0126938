"""An Optuna study whose trials run distributed over MPI.COMM_WORLD (monoprop.optimize).

Run under mpiexec with pytest-mpi, for example ``mpiexec -n 2 pytest --with-mpi tests/mpi``.
The ranks of the launch are one worker: rank 0 talks to the storage and broadcasts each
suggestion, every rank runs the distributed propagator. Each trial's energy must match a
single-process ``minimize`` of the same problem, and its cost attributes the single-process
propagator's counts (the distributed ones are summed over the ranks).
"""

from __future__ import annotations

import pytest

pytest.importorskip("mpi4py")
optuna = pytest.importorskip("optuna")
from mpi4py import MPI  # noqa: E402
from optuna.trial import TrialState  # noqa: E402
from test_distribution import random_problem  # noqa: E402

import monoprop  # noqa: E402
from monoprop import PauliPropagator  # noqa: E402
from monoprop.optimize import minimize, run_study  # noqa: E402

WORLD = MPI.COMM_WORLD
N = 5

pytestmark = pytest.mark.skipif(not monoprop.has_mpi, reason="monoprop was built without MPI")


def problem(gates: int, cutoff: int, comm) -> tuple:
    observable, circuit, x0, occupied = random_problem("pauli", N, gates, seed=gates)
    prop = PauliPropagator(observable, occupied, cutoff=cutoff, comm=comm)
    prop.build_graph(circuit)
    return prop, x0


def make_problem(trial) -> tuple:
    prop, x0 = problem(trial.suggest_int("gates", 6, 12), trial.suggest_int("cutoff", 2, N), WORLD)
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
        prop, x0 = problem(trial.params["gates"], trial.params["cutoff"], None)
        reference = minimize(prop, x0, options={"maxiter": 60})
        # Sums over ranks round differently (1e-15), which moves an optimiser path stopped by
        # maxiter by about 1e-9; different settings differ by 1e-3 and more.
        assert trial.value == pytest.approx(reference.fun, abs=1e-7), trial.params
        assert trial.user_attrs["terms"] == prop.size()
        assert trial.user_attrs["graph_entries"] == sum(prop.graph_size())
