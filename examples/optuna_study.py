"""An Optuna study of truncation settings for a TFIM VQE
=======================================================

``H = -sum_i Z_i Z_{i+1} - h sum_i X_i`` on an open chain, model and ansatz from vqe_tfim.py.
Each trial picks the Pauli-weight cutoff (max_weight), the coefficient floor lower_atol
(seeded at the optimiser's current angles every 10 iterations), the ansatz depth and the
optimiser, then runs the VQE with monoprop.optimize.run_study. A truncated energy is not
variational: too hard a truncation can go below the ground state, and a study that
minimises it will find such settings. Trials that do are pruned, and the best trials are replayed
(optuna.trial.FixedTrial) and their angles evaluated without truncation. ::

    python examples/optuna_study.py --trials 40

As in Optuna, --trials is what this worker runs and --max-trials caps the study's total over
all workers. Several workers on one machine share the SQLite file monoprop.db in the working
directory; these four run 40 trials in all::

    for i in 1 2 3 4; do python examples/optuna_study.py --max-trials 40 & done; wait

Workers on a cluster share a PostgreSQL database (run this on every node, or in a job array).
A worker that dies mid-trial stops sending its heartbeat; after the grace period its trial is
marked failed and a live worker runs it again::

    python examples/optuna_study.py --max-trials 400 \\
        --storage postgresql+psycopg2://user:pw@dbhost/optuna

One MPI launch is one worker whose ranks share each propagator (needs mpi4py and monoprop
built with MONOPROP_MPI=ON)::

    OMP_NUM_THREADS=1 monoprop_NUM_THREADS=1 timeout 600 mpiexec -n 2 \\
        python examples/optuna_study.py --mpi

With --multi-objective the study trades energy against graph entries (the cost of one replay)
and prints the Pareto front.

With --graphs DIR each trial's first graph is kept in DIR, named after the settings that decide
it (monoprop.optimize.load_or_build): a trial with settings already seen, the replay of the best
trials at the end, and a trial retried after its worker died load the graph instead of building
it, and the retried trial finishes the build the dead worker left checkpointed. Share DIR
between workers (a shared file system on a cluster)::

    python examples/optuna_study.py --max-trials 40 --graphs graphs/
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

import numpy as np
import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState
from vqe_tfim import ansatz, tfim_hamiltonian  # this script's folder is on sys.path

from monoprop import PauliOperator, PauliPropagator
from monoprop.optimize import load_or_build, minimize, run_study


def ground_energy(n: int, field: float) -> float:
    # Jordan-Wigner makes the open chain free fermions (Pfeuty 1970): the ground energy is
    # minus the sum of the singular values of the bidiagonal matrix [h on, J = 1 above].
    bidiagonal = np.diag(np.full(n, field)) + np.diag(np.ones(n - 1), 1)
    return -float(np.linalg.svd(bidiagonal, compute_uv=False).sum())


def make_problem(trial, hamiltonian: PauliOperator, ground: float, comm, graphs=None) -> tuple:
    """The trial's propagator, starting point and minimize settings."""
    n = hamiltonian.num_qubits
    layers = trial.suggest_int("layers", 1, 4)
    max_weight = trial.suggest_int("max_weight", 2, n)
    lower_atol = trial.suggest_float("lower_atol", 1e-6, 1e-2, log=True)
    method = trial.suggest_categorical("method", ["L-BFGS-B", "BFGS"])
    maxiter = trial.suggest_int("maxiter", 50, 300, step=50)
    circuit = ansatz(n, layers)

    def fresh() -> PauliPropagator:
        return PauliPropagator(hamiltonian, [], cutoff=max_weight, lower_atol=lower_atol, comm=comm)

    def propagator(seed_parameters: np.ndarray) -> PauliPropagator:
        prop = fresh()
        prop.build_graph(circuit, seed_parameters=seed_parameters)
        return prop

    def check(intermediate_result) -> None:
        # Without a known ground energy, compare with a tighter truncation instead.
        if intermediate_result.fun < ground - 1e-9:
            raise optuna.TrialPruned("below the ground energy: truncated too hard")

    # A fixed start, so that FixedTrial(params) replays the trial exactly.
    x0 = np.random.default_rng(1).normal(scale=0.1, size=circuit.n_parameters)
    settings = {
        "method": method,
        "options": {"maxiter": maxiter},
        "rebuild": propagator,
        "reseed_every": 10,
        "callback": check,
    }
    if graphs is None:
        return propagator(x0), x0, settings
    # The graph at x0 is decided by these settings alone: its file is named after them.
    name = f"tfim{n}-layers{layers}-weight{max_weight}-atol{lower_atol!r}"
    first = load_or_build(Path(graphs) / name, fresh, circuit, comm=comm, seed_parameters=x0)
    return first, x0, settings


def untruncated_energy(
    params: dict, hamiltonian: PauliOperator, ground: float, comm, graphs=None
) -> float:
    """Replay the trial with ``params`` and evaluate its angles without truncation."""
    prop, x0, settings = make_problem(
        optuna.trial.FixedTrial(params), hamiltonian, ground, comm, graphs
    )
    angles = minimize(prop, x0, **settings).x
    n = hamiltonian.num_qubits
    exact = PauliPropagator(hamiltonian, [], cutoff=n, comm=comm)  # weight <= n: no truncation
    exact.build_graph(ansatz(n, params["layers"]))
    return exact.expval(angles)


def summary(study: optuna.Study, ground: float) -> list:
    """Print the study's counts; return its best trial, or its Pareto front by energy."""
    complete = study.get_trials(states=[TrialState.COMPLETE])
    pruned = study.get_trials(states=[TrialState.PRUNED])
    # The guard prunes after the energy was reported. Multi-objective trials report nothing,
    # and only the guard prunes them.
    too_hard = [t for t in pruned if min(t.intermediate_values.values(), default=-1e300) < ground]
    print(
        f"study {study.study_name!r}: {len(study.trials)} trials: {len(complete)} complete, "
        f"{len(pruned)} pruned ({len(too_hard)} below the ground energy)"
    )
    if not complete:
        return []
    if len(study.directions) == 1:
        print("best trial:")
        return [study.best_trial]
    print("Pareto front (energy against graph entries):")
    return sorted(study.best_trials, key=lambda trial: trial.values[0])


def storage_from(url: str | None):
    if url is not None and url.startswith("journal:"):
        return JournalStorage(JournalFileBackend(url.removeprefix("journal:")))
    return url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument(
        "--trials",
        type=int,
        default=None,
        help="trials this worker runs (default 30, or until --max-trials when that is given)",
    )
    parser.add_argument(
        "--max-trials", type=int, default=None, help="the study's total over all workers"
    )
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds after which no trial starts"
    )
    parser.add_argument(
        "--storage",
        default=None,
        help="Optuna storage: default SQLite monoprop.db in the working directory; "
        "journal:PATH for a JournalFileBackend log file (one node or a shared file system "
        "without a database server); postgresql://user:pw@host/db for a cluster",
    )
    parser.add_argument("--study-name", default=None, help="default: tfim-<qubits>[-pareto]")
    parser.add_argument(
        "--multi-objective", action="store_true", help="minimise energy and graph entries"
    )
    parser.add_argument("--qubits", type=int, default=6)
    parser.add_argument("--field", type=float, default=1.0, help="transverse field h (J = 1)")
    parser.add_argument("--seed", type=int, default=None, help="sampler seed (one worker)")
    parser.add_argument("--mpi", action="store_true", help="one worker over MPI.COMM_WORLD")
    parser.add_argument(
        "--graphs", default=None, help="a directory where workers keep and share built graphs"
    )
    args = parser.parse_args()

    comm = None
    if args.mpi:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    root = comm is None or comm.rank == 0
    n = args.qubits
    hamiltonian = tfim_hamiltonian(n, 1.0, args.field)
    ground = ground_energy(n, args.field)
    name = args.study_name or f"tfim-{n}" + ("-pareto" if args.multi_objective else "")
    if root:
        print(f"TFIM chain, {n} qubits, h = {args.field}: ground energy {ground:.10f}")

    study = run_study(
        partial(
            make_problem, hamiltonian=hamiltonian, ground=ground, comm=comm, graphs=args.graphs
        ),
        n_trials=30 if args.trials is None and args.max_trials is None else args.trials,
        max_trials=args.max_trials,
        timeout=args.timeout,
        storage=storage_from(args.storage),
        study_name=name,
        sampler=optuna.samplers.TPESampler(seed=args.seed),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=50),
        directions=["minimize", "minimize"] if args.multi_objective else None,
        comm=comm,
    )
    best = summary(study, ground) if root else None
    if comm is not None:  # every rank takes part in the replays
        best = comm.bcast(best, root=0)
    for trial in best:
        check = untruncated_energy(trial.params, hamiltonian, ground, comm, args.graphs)
        if root:
            print(
                f"  trial {trial.number}: energy {trial.values[0]:.10f} "
                f"± {trial.user_attrs['truncation_bound']:.1e}, untruncated "
                f"{check:.10f} (error {check - ground:.1e}), "
                f"{trial.user_attrs['graph_entries']} graph entries\n    "
                + " ".join(
                    f"{k}={v:.2g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in trial.params.items()
                )
            )


if __name__ == "__main__":
    main()
