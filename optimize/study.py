"""Optuna studies over monoprop optimisations, on a laptop or across a cluster.

Needs the ``[optuna]`` extra. Each trial asks ``make_problem(trial)`` for a propagator and a
starting point (the trial suggests cutoffs, tolerances, ansatz depth, optimiser settings),
runs :func:`~monoprop.optimize.minimize`, reports the energy at every iteration so that a
pruner can stop a bad trial early, and stores what the trial cost as user attributes.

Workers share a study through its storage: any number of processes, on one machine or many,
that call :func:`run_study` with the same ``storage`` and ``study_name`` work on the same
trials. With ``comm`` (an mpi4py communicator) the ranks of one MPI launch are one worker:
rank 0 talks to the storage and broadcasts the trial's suggestions, every rank runs the
distributed propagator, and only rank 0 reports.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import sqlalchemy
from optuna.trial import TrialState

from monoprop.validation import check_int

from .objective import Objective
from .scipy_minimize import minimize

__all__ = ["run_study"]

# Trials that use up the study's budget: every trial started, so that a restarted study does
# not exceed it (a crashed worker's RUNNING trial counts) and a problem that always fails
# ends the study instead of running forever; enqueued (WAITING) trials are still to be run.
_BUDGET_STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)

_SCHEMA_ATTEMPTS = 5

_COSTS = ("graph_entries", "terms", "replays", "wall_time")

# A child of Optuna's logger: its handler and verbosity (optuna.logging.set_verbosity) apply.
_logger = optuna.logging.get_logger("optuna.monoprop")


def run_study(
    make_problem: Callable[[Any], tuple],
    *,
    n_trials: int,
    storage: str | optuna.storages.BaseStorage | None = None,
    study_name: str = "monoprop",
    sampler: optuna.samplers.BaseSampler | None = None,
    pruner: optuna.pruners.BasePruner | None = None,
    directions: Sequence[str] | None = None,
    comm: Any = None,
    cost: str | Callable[[Any], float] = "graph_entries",
    timeout: float | None = None,
    catch: tuple[type[Exception], ...] = (),
) -> optuna.Study | None:
    """Run trials of ``make_problem`` until the study holds ``n_trials``; return the study.

    ``make_problem(trial)`` returns ``(propagator, x0)`` or ``(propagator, x0, settings)``,
    where ``settings`` is a dict of :func:`~monoprop.optimize.minimize` keywords (``method``,
    ``options``, ``tol``, ``rebuild``, ``reseed_every``, ...); the propagator may also be an
    :class:`~monoprop.optimize.Objective`. A trial's value is its optimised energy.

    ``n_trials`` is the study's total, shared by all workers: a worker starts a trial only
    while fewer than ``n_trials`` are complete, pruned, failed or running, so several workers
    together finish the requested number (one more at most per extra worker, if two start the
    last trial at the same instant). ``timeout`` (seconds) stops this worker starting new trials.

    ``storage``: ``None`` is a SQLite file ``monoprop.db`` in the working directory; any
    Optuna storage URL or object works: ``optuna.storages.JournalStorage`` over a
    ``JournalFileBackend`` for one node or a shared file system, a PostgreSQL or MySQL URL for
    many nodes. Other workers join by pointing at the same storage and ``study_name``.

    ``directions``: ``None`` minimises the energy; two directions, such as
    ``["minimize", "minimize"]``, make the study multi-objective over ``(energy, cost)``, where
    ``cost`` is ``"graph_entries"`` (the graph's recorded entries, what one replay costs;
    the default), ``"terms"``, ``"replays"``, ``"wall_time"`` or a callable of the trial's
    ``OptimizeResult``. Multi-objective trials are not pruned (Optuna cannot report them).

    Each finished trial records the user attributes ``energy``, ``terms``, ``graph_size``,
    ``graph_entries``, ``replays``, ``iterations``, ``refreshes``, ``rebuilds`` and
    ``wall_time``; a pruned one records those it has. Term and graph counts are summed over
    the ranks of ``comm``. Returns the study on rank 0, ``None`` on the other ranks.

    A trial whose ``make_problem`` or optimisation raises is stored as failed and the error is
    raised, unless its type is in ``catch``; then the worker goes on. Failed trials count
    towards ``n_trials``, as in ``optuna.Study.optimize``.
    """
    n_trials = _positive_int(n_trials, "n_trials")
    directions = _directions(directions)
    if not (callable(cost) or cost in _COSTS):
        raise ValueError(f"cost={cost!r} is not one of {_COSTS} or a callable of the result.")
    comm = _SelfComm() if comm is None else comm
    root = comm.rank == 0
    # The study lives on the root rank only (None elsewhere); only the root touches it.
    study: Any = _load_study(storage, study_name, sampler, pruner, directions) if root else None
    deadline = None if timeout is None else time.monotonic() + float(timeout)
    while _on_root(comm, lambda: _budget_left(study, n_trials, deadline)):
        trial: Any = study.ask() if root else None
        shared = trial if comm.size == 1 else _SharedTrial(trial, comm)
        try:
            state, values, attributes = _run_trial(
                make_problem, shared, comm, len(directions) == 1, cost, catch
            )
        except BaseException:
            if root:  # the trial must not stay RUNNING in the storage when this worker stops
                study.tell(trial, state=TrialState.FAIL)
            raise
        if root:
            for key, value in attributes.items():
                trial.set_user_attr(key, value)
            study.tell(trial, values, state=state)
            _log_trial(trial.number, state, attributes, trial.params)
    return study


def _run_trial(make_problem, trial, comm, reports: bool, cost, catch) -> tuple:
    """``(state, values, user attributes)`` of one trial; raises what the trial raised unless
    its type is in ``catch``."""
    start = time.perf_counter()
    objective = None
    try:
        objective, x0, settings = _problem(make_problem(trial))
        callback = _reporter(trial, reports, settings.pop("callback", None))
        result = minimize(objective, x0, callback=callback, **settings)
    except optuna.TrialPruned:
        return TrialState.PRUNED, None, _attributes(objective, None, comm, start)
    except catch:
        return TrialState.FAIL, None, _attributes(objective, None, comm, start)
    attributes = _attributes(objective, result, comm, start)
    energy = float(result.fun)
    if reports:
        return TrialState.COMPLETE, energy, attributes
    price = cost(result) if callable(cost) else attributes[cost]
    return TrialState.COMPLETE, [energy, float(price)], attributes


def _log_trial(number: int, state: TrialState, attributes: dict, params: dict) -> None:
    """One line per trial, so that a long study shows where it is."""
    energy = attributes.get("energy")
    shown = "" if energy is None else f" energy {energy:.10g},"
    _logger.info(
        f"Trial {number} {state.name.lower()}:{shown} {attributes.get('replays', 0)} replays, "
        f"{attributes['wall_time']:.2f} s, parameters {params}"
    )


def _problem(made: Any) -> tuple[Objective, np.ndarray, dict]:
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        raise TypeError(
            "make_problem(trial) must return (propagator, x0) or (propagator, x0, settings); "
            f"got {type(made).__name__}."
        )
    problem, x0, *rest = made
    settings = dict(rest[0]) if rest else {}
    if not isinstance(problem, Objective):
        problem = Objective(
            problem,
            rebuild=settings.pop("rebuild", None),
            pare_threshold=settings.pop("pare_threshold", None),
        )
    return problem, x0, settings


def _reporter(trial, reports: bool, user_callback: Callable | None) -> Callable:
    """The per-iteration callback: report the energy, prune when told, then the user's."""
    steps = iter(range(2**62))

    def report(intermediate_result) -> None:
        step = next(steps)
        if reports:
            # On a shared trial both calls run on rank 0, which broadcasts the answer.
            trial.report(float(intermediate_result.fun), step)
            if trial.should_prune():
                raise optuna.TrialPruned(
                    f"pruned at iteration {step} with energy {intermediate_result.fun:.10g}"
                )
        if user_callback is not None:
            user_callback(intermediate_result)

    return report


def _attributes(objective: Objective | None, result: Any, comm, start: float) -> dict:
    """What the trial cost; counts of stored terms are summed over the ranks."""
    attributes: dict[str, Any] = {"wall_time": time.perf_counter() - start}
    if objective is None:
        return attributes
    propagator = objective.propagator
    terms = comm.allreduce(propagator.size())
    cos_only, cycles = (comm.allreduce(n) for n in propagator.graph_size())
    attributes.update(
        terms=int(terms),
        graph_size=[int(cos_only), int(cycles)],
        graph_entries=int(cos_only + cycles),
        replays=objective.nfev,
        refreshes=objective.refreshes,
        rebuilds=objective.rebuilds,
    )
    if result is not None:
        attributes.update(energy=float(result.fun), iterations=int(result.get("nit", 0)))
    return attributes


def _load_study(storage, study_name, sampler, pruner, directions) -> optuna.Study:
    return optuna.create_study(
        storage=_storage(storage),
        study_name=study_name,
        sampler=sampler,
        pruner=pruner,
        directions=directions,
        load_if_exists=True,
    )


def _storage(storage: Any) -> Any:
    if storage is None:
        storage = f"sqlite:///{Path.cwd() / 'monoprop.db'}"
    if not isinstance(storage, str):
        return storage
    # Workers on one SQLite file take turns writing: wait for the lock, do not fail.
    engine = {"connect_args": {"timeout": 60}} if storage.startswith("sqlite") else None
    for attempt in range(1, _SCHEMA_ATTEMPTS):
        try:
            return optuna.storages.RDBStorage(storage, engine_kwargs=engine)
        except sqlalchemy.exc.DatabaseError:
            # Workers that start together on a new database race to create its tables; the
            # losers see "table ... already exists" and find the tables there when they retry.
            time.sleep(0.1 * attempt)
    return optuna.storages.RDBStorage(storage, engine_kwargs=engine)


def _budget_left(study: optuna.Study, n_trials: int, deadline: float | None) -> bool:
    if deadline is not None and time.monotonic() >= deadline:
        return False
    return len(study.get_trials(deepcopy=False, states=_BUDGET_STATES)) < n_trials


def _directions(directions: Sequence[str] | None) -> list[str]:
    if directions is None:
        return ["minimize"]
    directions = [str(d) for d in directions]
    if len(directions) not in (1, 2) or not set(directions) <= {"minimize", "maximize"}:
        raise ValueError(
            f"directions={directions!r}: give one ('minimize' the energy) or two (energy, "
            "cost), each 'minimize' or 'maximize'."
        )
    return directions


def _positive_int(value: Any, name: str) -> int:
    return check_int(
        value,
        name,
        minimum=1,
        message="{name} must be a positive integer; got {value!r}.",
        type_error=ValueError,
    )


def _on_root(comm, action: Callable[[], Any]) -> Any:
    """Run ``action`` on rank 0 and give every rank its result, or raise its error on every
    rank (the other ranks would otherwise wait for a broadcast that never comes)."""
    outcome = None
    if comm.rank == 0:
        try:
            outcome = (True, action())
        except Exception as error:  # handed to every rank, raised below
            outcome = (False, _portable(error))
    ok, value = comm.bcast(outcome, root=0)
    if not ok:
        raise value
    return value


def _portable(error: Exception) -> Exception:
    try:
        pickle.dumps(error)
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error


class _SharedTrial:
    """A trial as every rank of a launch sees it. Rank 0 holds the Optuna trial; each
    attribute read and each call (``suggest_float``, ``report``, ``should_prune``, ...) is
    made there and its result broadcast, so every rank builds the same problem."""

    def __init__(self, trial: optuna.Trial | None, comm: Any) -> None:
        self._trial, self._comm = trial, comm

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        # Methods stay on rank 0; what is broadcast is whether the attribute is one.
        is_method, value = _on_root(self._comm, lambda: _describe(getattr(self._trial, name)))
        if not is_method:
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            return _on_root(self._comm, lambda: getattr(self._trial, name)(*args, **kwargs))

        return call


def _describe(attribute: Any) -> tuple[bool, Any]:
    return (True, None) if callable(attribute) else (False, attribute)


class _SelfComm:
    """The one-process stand-in for an mpi4py communicator."""

    rank, size = 0, 1

    @staticmethod
    def bcast(value: Any, root: int = 0) -> Any:
        return value

    @staticmethod
    def allreduce(value: Any) -> Any:
        return value
