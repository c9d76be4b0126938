"""Optuna studies over monoprop optimisations, on a laptop or across a cluster.

Needs the ``[optuna]`` extra. Each trial asks ``make_problem(trial)`` for a propagator and a
starting point (the trial suggests cutoffs, tolerances, ansatz depth, optimiser settings),
runs :func:`~monoprop.optimize.minimize`, reports the energy at every iteration so that a
pruner can stop a bad trial early, and stores what the trial cost as user attributes.

Workers share a study through its storage: any number of processes, on one machine or many,
that call :func:`run_study` with the same ``storage`` and ``study_name`` work on the same
trials. As in Optuna, ``n_trials`` and ``timeout`` bound what one worker does and
``max_trials`` caps the study's total. On a database (SQLite, PostgreSQL, MySQL) a running
trial sends a heartbeat, so that the trial of a worker that died (killed, preempted, out of
memory) is marked failed after a grace period and run again by a live worker. With ``comm``
(an mpi4py communicator) the ranks of one MPI launch are one worker: rank 0 talks to the
storage and broadcasts the trial's suggestions, every rank runs the distributed propagator,
and only rank 0 reports.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

import monoprop
from monoprop.truncation_budget import checked_budget
from monoprop.validation import check_int

from .objective import Objective
from .scipy_minimize import minimize
from .shared_trial import SelfComm, SharedTrial, on_root
from .study_storage import Budget, Heartbeat, heartbeat_interval_of, load_study, storage_of, tell

__all__ = ["run_study"]

_COSTS = ("graph_entries", "terms", "replays", "wall_time")
_RANKINGS = ("energy", "energy+bound")

# A child of Optuna's logger: its handler and verbosity (optuna.logging.set_verbosity) apply.
_logger = optuna.logging.get_logger("optuna.monoprop")


def run_study(
    make_problem: Callable[[Any], tuple],
    *,
    n_trials: int | None = None,
    max_trials: int | None = None,
    timeout: float | None = None,
    storage: str | optuna.storages.BaseStorage | None = None,
    study_name: str = "monoprop",
    sampler: optuna.samplers.BaseSampler | None = None,
    pruner: optuna.pruners.BasePruner | None = None,
    directions: Sequence[str] | None = None,
    comm: Any = None,
    cost: str | Callable[[Any], float] = "graph_entries",
    rank_by: str = "energy",
    catch: tuple[type[Exception], ...] = (),
    heartbeat_interval: int | None = 60,
    grace_period: int | None = None,
    max_retry: int = 3,
    max_error: float | None = None,
    rigorous: bool = False,
) -> optuna.Study | None:
    """Run trials of ``make_problem`` in this worker; return the study.

    ``make_problem(trial)`` returns ``(propagator, x0)`` or ``(propagator, x0, settings)``,
    where ``settings`` is a dict of :func:`~monoprop.optimize.minimize` keywords (``method``,
    ``options``, ``tol``, ``rebuild``, ``reseed_every``, ...); the propagator may also be an
    :class:`~monoprop.optimize.Objective`, or the path of a saved propagator
    (:meth:`~monoprop.PauliPropagator.save`), which each trial loads onto ``comm``. A trial's
    value is its optimised energy. Workers that should share a graph rather than each build
    it can return ``load_or_build(path, ...)``: the first to need it builds it with
    checkpoints, the others load it, and a retried trial finishes the build of a worker that
    died.

    When to stop, as in ``optuna.Study.optimize``: ``n_trials`` is the number of trials this
    worker runs (each worker process, or each MPI launch, runs up to ``n_trials`` of its own:
    two workers with ``n_trials=3`` run 6), and ``timeout`` (seconds) is this call's time: no
    trial starts after it. ``max_trials`` caps the study's total over all workers, past and
    present, like Optuna's ``MaxTrialsCallback``: a worker starts a trial only while the study
    holds fewer than ``max_trials`` trials that are complete, pruned, failed or running.
    Unlike ``MaxTrialsCallback`` (which counts complete trials only) running trials count, so
    that workers running together do not overshoot, and failed ones count, so that a problem
    that always fails ends the study; a failed trial that was retried counts once, through its
    retry. On PostgreSQL, MySQL and SQLite a worker counts and starts its trial under a lock
    (an advisory lock; a ``flock`` of the SQLite file), so the cap is exact; on other
    storages two workers that start the last trial at the same instant may both run it.
    Give at least one of the three; the worker stops at the first reached. On a
    cluster, start every worker with the same ``max_trials`` and let the study fill up::

        run_study(make_problem, max_trials=400, storage="postgresql://user:pw@host/optuna")

    ``storage``: ``None`` is a SQLite file ``monoprop.db`` in the working directory; any
    Optuna storage URL or object works: ``optuna.storages.JournalStorage`` over a
    ``JournalFileBackend`` for one node or a shared file system, a PostgreSQL or MySQL URL for
    many nodes. Other workers join by pointing at the same storage and ``study_name``.

    Dead workers: for a database URL (and for ``None``) the storage is built with Optuna's
    heartbeat. The worker records every ``heartbeat_interval`` seconds (default 60) that its
    running trial is alive; before each trial it marks failed the trials of any worker silent
    for ``grace_period`` seconds (default twice the interval, 120), and Optuna's
    ``RetryHeartbeatStaleTrialCallback(max_retry=max_retry)`` (``RetryFailedTrialCallback``
    before Optuna 4.9) enqueues each of them again, with its parameters, up to ``max_retry``
    times (default 3), for the next worker to run. Finished trials are never touched. A
    worker that finds the study at ``max_trials`` while trials are still running elsewhere
    waits for them, up to the grace period, so that one whose worker died is retried here
    rather than left running. ``heartbeat_interval=None`` turns the heartbeat off. A storage
    object is used as it is: its heartbeat is its own to configure, as in
    ``optuna.storages.RDBStorage(url, heartbeat_interval=..., grace_period=...,
    heartbeat_stale_trial_callback=...)``; ``run_study`` then sends the heartbeat the
    storage asks for, and the three arguments above do not apply. In-memory and journal
    storages have no heartbeat.

    ``rank_by``: ``"energy"`` (the default) makes a trial's value, and what it reports each
    iteration to the pruner, its optimised energy; ``"energy+bound"`` adds the truncation
    bound at the same point (:meth:`~monoprop.PauliPropagator.truncation_error`), a value the
    untruncated energy provably stays under, so that a trial cannot win on truncation error
    (one more replay an iteration, for the reports).

    ``directions``: ``None`` minimises the energy; two directions, such as
    ``["minimize", "minimize"]``, make the study multi-objective over ``(energy, cost)``, where
    ``cost`` is ``"graph_entries"`` (the graph's recorded entries, what one replay costs;
    the default), ``"terms"``, ``"replays"``, ``"wall_time"`` or a callable of the trial's
    ``OptimizeResult``. Multi-objective trials are not pruned (Optuna cannot report them).

    Each finished trial records the user attributes ``energy``, ``terms``, ``graph_size``,
    ``graph_entries``, ``replays``, ``iterations``, ``segments`` (scipy runs: more than one
    when ``reseed_every`` rebuilt the graph), ``message`` (why the optimisation ended),
    ``truncation_bound`` and ``truncation_estimate`` (the optimised energy's error bar),
    ``refreshes``, ``rebuilds`` and ``wall_time``; a pruned one records those it has. A trial
    that reseeds reports its energy at every iteration of every segment, numbered over the
    whole trial. Term and graph counts are summed over
    the ranks of ``comm``. Returns the study on rank 0, ``None`` on the other ranks.

    ``max_error=eps``: each trial's energy to within ``eps``. ``make_problem`` runs inside
    :func:`monoprop.error_budget` ``(eps, rigorous=rigorous)``, so that the graphs it builds
    choose their truncation to fit the budget, and each trial's ``minimize`` gets
    ``max_error`` and ``rigorous`` (its ``settings`` may set their own), which rebuilds a graph
    whose error at the optimum passes ``eps``. A trial records ``within_max_error``: whether
    its energy's estimate (bound, with ``rigorous=True``) stayed within ``eps``.

    A trial whose ``make_problem`` or optimisation raises is stored as failed and the error is
    raised, unless its type is in ``catch``; then the worker goes on. Failed trials count
    towards ``n_trials`` and ``max_trials``, as in ``optuna.Study.optimize``.
    """
    n_trials = _optional_int(n_trials, "n_trials", 1)
    max_trials = _optional_int(max_trials, "max_trials", 1)
    if n_trials is None and max_trials is None and timeout is None:
        raise ValueError(
            "run_study needs n_trials (this worker's trials), max_trials (the study's total) "
            "or timeout (seconds); give at least one, or the worker would never stop."
        )
    heartbeat = _heartbeat_settings(heartbeat_interval, grace_period, max_retry)
    error_limit = checked_budget(max_error, rigorous)
    directions = _directions(directions)
    if not (callable(cost) or cost in _COSTS):
        raise ValueError(f"cost={cost!r} is not one of {_COSTS} or a callable of the result.")
    if rank_by not in _RANKINGS:
        raise ValueError(
            f"rank_by={rank_by!r} is not one of {_RANKINGS}: 'energy' ranks trials on their "
            "optimised value, 'energy+bound' on that value plus its truncation bound."
        )
    comm = SelfComm() if comm is None else comm
    root = comm.rank == 0
    # The study lives on the root rank only (None elsewhere); only the root touches it.
    study: Any = None
    backend: Any = None
    if root:
        backend = storage_of(storage, heartbeat)
        study = load_study(backend, study_name, sampler, pruner, directions)
    interval = heartbeat_interval_of(backend)
    deadline = None if timeout is None else time.monotonic() + float(timeout)
    budget = Budget(study, backend, n_trials, max_trials, deadline)
    while on_root(comm, budget.start):
        trial: Any = budget.trial
        shared = trial if comm.size == 1 else SharedTrial(trial, comm)
        beating = Heartbeat(backend, trial._trial_id, interval) if interval else nullcontext()
        try:
            with beating:
                state, values, attributes = _run_trial(
                    make_problem,
                    shared,
                    comm,
                    len(directions) == 1,
                    cost,
                    rank_by,
                    catch,
                    error_limit,
                )
        except optuna.exceptions.UpdateFinishedTrialError:
            # A report found the trial marked failed by another worker: drop it, go on.
            state, values, attributes = TrialState.FAIL, None, {"wall_time": 0.0}
        except BaseException:
            if root:  # the trial must not stay RUNNING in the storage when this worker stops
                tell(study, trial, None, TrialState.FAIL, {})
            raise
        if root and tell(study, trial, values, state, attributes):
            _log_trial(trial.number, state, attributes, trial.params)
    return study


def _run_trial(
    make_problem, trial, comm, reports: bool, cost, rank_by: str, catch, error_limit
) -> tuple:
    """``(state, values, user attributes)`` of one trial; raises what the trial raised unless
    its type is in ``catch``."""
    start = time.perf_counter()
    objective = None
    bounded = rank_by == "energy+bound"
    eps, rigorous = error_limit
    try:
        with monoprop.error_budget(eps, rigorous=rigorous) if eps is not None else nullcontext():
            objective, x0, settings = _problem(make_problem(trial), comm)
        if eps is not None:
            settings.setdefault("max_error", eps)
            settings.setdefault("rigorous", rigorous)
        ranked = _bounded_value(objective) if bounded else None
        callback = _reporter(trial, reports, settings.pop("callback", None), ranked)
        result = minimize(objective, x0, callback=callback, **settings)
    except optuna.TrialPruned:
        return TrialState.PRUNED, None, _attributes(objective, None, comm, start)
    except catch:
        return TrialState.FAIL, None, _attributes(objective, None, comm, start)
    attributes = _attributes(objective, result, comm, start)
    if eps is not None:
        attributes["within_max_error"] = bool(result.within_max_error)
    energy = float(result.fun)
    if bounded:
        if result.truncation_error is None:
            raise ValueError(
                "rank_by='energy+bound' needs a truncation bound, which this propagator cannot "
                "give (a graph built with only_rotate_len_k); rank by 'energy' instead."
            )
        energy += result.truncation_error.bound
    if reports:
        return TrialState.COMPLETE, energy, attributes
    price = cost(result) if callable(cost) else attributes[cost]
    return TrialState.COMPLETE, [energy, float(price)], attributes


def _log_trial(number: int, state: TrialState, attributes: dict, params: dict) -> None:
    """One line per trial, so that a long study shows where it is."""
    energy, bound = attributes.get("energy"), attributes.get("truncation_bound")
    shown = "" if energy is None else f" energy {energy:.10g}"
    shown += "" if energy is None or bound is None else f" ± {bound:.1e}"
    shown += "" if energy is None else ","
    _logger.info(
        f"Trial {number} {state.name.lower()}:{shown} {attributes.get('replays', 0)} replays, "
        f"{attributes['wall_time']:.2f} s, parameters {params}"
    )


def _problem(made: Any, comm: Any) -> tuple[Objective, np.ndarray, dict]:
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        raise TypeError(
            "make_problem(trial) must return (propagator, x0) or (propagator, x0, settings); "
            f"got {type(made).__name__}."
        )
    problem, x0, *rest = made
    settings = dict(rest[0]) if rest else {}
    if isinstance(problem, (str, os.PathLike)):  # a saved propagator, loaded onto the study's ranks
        problem = monoprop.load(problem, comm=None if isinstance(comm, SelfComm) else comm)
    if not isinstance(problem, Objective):
        problem = Objective(
            problem,
            rebuild=settings.pop("rebuild", None),
            pare_threshold=settings.pop("pare_threshold", None),
        )
    return problem, x0, settings


def _reporter(
    trial, reports: bool, user_callback: Callable | None, ranked: Callable | None
) -> Callable:
    """The per-iteration callback: report the energy (or what ``ranked`` makes of the
    iterate), prune when told, then the user's."""
    steps = iter(range(2**62))

    def report(intermediate_result) -> None:
        step = next(steps)
        if reports:
            value = float(
                intermediate_result.fun if ranked is None else ranked(intermediate_result)
            )
            # On a shared trial both calls run on rank 0, which broadcasts the answer.
            trial.report(value, step)
            if trial.should_prune():
                raise optuna.TrialPruned(f"pruned at iteration {step} with value {value:.10g}")
        if user_callback is not None:
            user_callback(intermediate_result)

    return report


def _bounded_value(objective: Objective) -> Callable:
    """``iterate -> energy + truncation bound`` at the iterate's point: a value the
    untruncated energy provably stays under, at the cost of one more replay an iteration."""

    def value(intermediate_result) -> float:
        bound = objective.truncation_error(intermediate_result.x).bound
        return float(intermediate_result.fun) + float(bound)

    return value


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
        attributes.update(
            energy=float(result.fun),
            iterations=int(result.get("nit", 0)),
            segments=len(result.segments),
            message=str(result.message),
        )
        if result.truncation_error is not None:
            attributes.update(
                truncation_bound=float(result.truncation_error.bound),
                truncation_estimate=float(result.truncation_error.estimate),
            )
    return attributes


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


def _optional_int(value: Any, name: str, minimum: int) -> int | None:
    if value is None:
        return None
    kind = "positive" if minimum == 1 else "non-negative"
    return check_int(
        value,
        name,
        minimum=minimum,
        message=f"{{name}} must be a {kind} integer; got {{value!r}}.",
        type_error=ValueError,
    )


def _heartbeat_settings(interval: Any, grace: Any, max_retry: Any) -> dict | None:
    """The ``RDBStorage`` heartbeat keywords (and ``max_retry``), ``None`` for no heartbeat."""
    max_retry = _optional_int(max_retry, "max_retry", 0)
    if max_retry is None:
        raise ValueError("max_retry must be a non-negative integer; got None.")
    if interval is None:
        if grace is not None:
            raise ValueError("grace_period needs a heartbeat: give heartbeat_interval too.")
        return None
    interval = _optional_int(interval, "heartbeat_interval", 1)
    grace = 2 * interval if grace is None else _optional_int(grace, "grace_period", 1)
    if grace <= interval:
        raise ValueError(
            f"grace_period={grace} must be longer than heartbeat_interval={interval}: a live "
            "trial would look dead between two heartbeats."
        )
    return {"heartbeat_interval": interval, "grace_period": grace, "max_retry": max_retry}
