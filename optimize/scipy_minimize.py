"""``scipy.optimize.minimize`` over a propagator's replayed value and exact gradient."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.optimize

from monoprop import TruncationError, error_budget
from monoprop.truncation_budget import checked_budget
from monoprop.validation import check_int

from .guard import Rebuild
from .objective import Objective
from .segments import STALLED_RESEEDS, Reseed, Run, Segment

__all__ = ["Segment", "minimize"]

# scipy's methods that never ask for a gradient; the rest get value and gradient together.
_GRADIENT_FREE = {"nelder-mead", "powell", "cobyla", "cobyqa"}


def minimize(
    problem: Any,
    x0: Any = None,
    *,
    starts: Any = None,
    method: str | Callable = "L-BFGS-B",
    bounds: Any = None,
    constraints: Any = (),
    tol: float | None = None,
    options: dict | None = None,
    callback: Callable | None = None,
    progress: bool = False,
    reseed_every: int | None = None,
    rebuild: Rebuild | None = None,
    pare_threshold: float | None = None,
    max_error: float | None = None,
    rigorous: bool = False,
) -> scipy.optimize.OptimizeResult:
    """Minimise the expectation value of a propagator's graph with ``scipy.optimize.minimize``.

    ``problem`` is a propagator with a recorded graph, or an :class:`Objective` (which then
    carries ``rebuild`` and ``pare_threshold``). ``x0`` is the starting point, a vector of the
    graph's ``n_parameters``. ``method``, ``bounds``, ``constraints``, ``tol`` and ``options``
    are scipy's; gradient methods get the exact gradient of the same replay, gradient-free
    ones the value alone.

    Multistart: ``starts=`` in place of ``x0``, an array of shape ``(S, n_parameters)`` with
    one starting point per row, runs one minimisation from each row in turn, each as a call
    with ``x0=starts[i]`` and the same other arguments would (``options``, ``callback`` and
    ``progress`` apply to each run, and a callback's ``StopIteration`` ends the run from that
    start; with ``reseed_every``, every run after the first starts on ``rebuild(starts[i])``,
    a graph fresh at its start). It returns the run with the lowest ``fun`` (the first of
    equals), with ``starts``, the list of all S results in start order, and ``best_start``,
    the index of the one returned, in addition. One of ``x0`` and ``starts`` is required.

    ``callback`` is called once per iteration, as scipy does: with an ``OptimizeResult``
    (``x``, ``fun``) when its one parameter is named ``intermediate_result``, else with a copy
    of ``x``; raising ``StopIteration`` ends the run. ``progress=True`` shows a tqdm bar with
    the current energy on stderr (under MPI, pass ``progress=comm.rank == 0``).

    Reseeding: a graph truncated with ``lower_atol``/``upper_atol`` keeps the branches that
    matter at its seed parameters, and grows less faithful as the optimiser moves away.
    ``reseed_every=k`` runs the optimisation as a sequence of segments: each is a fresh
    ``scipy.optimize.minimize`` on one graph; a segment that reaches ``k`` iterations stops,
    the propagator is replaced by ``rebuild(x)`` at its last point, and the next segment
    starts there (a method's line search or curvature history is never carried across a
    change of function). The call ends when a segment stops on its own (converged, failed or
    at a limit), or when three graphs in a row, each fresh at its seed, give there no value
    below the best such value before them: seeded truncation can cycle between graphs, each
    one's optimum seeding a graph whose optimum lies back near the last. That end has
    ``success=False``, ``status=2`` and a message that says so, at the last point on its
    fresh graph. ``options["maxiter"]``, ``maxfun``/``maxfev``, ``callback``, ``progress`` and
    ``history`` span the whole call; ``success``, ``status`` and ``message`` are those of the
    last segment, ``nit`` and ``nfev`` add up the segments. ``rebuild(seed)`` must construct a
    propagator and call ``build_graph(circuit, seed_parameters=seed)``.

    Error budget: ``max_error=eps`` asks for the energy to within ``eps``. Every graph the call
    has ``rebuild`` make (to reseed or to recover) is built inside
    :func:`monoprop.error_budget` ``(eps, rigorous=rigorous)``, which chooses its truncation;
    and where a run ends at a point whose truncation estimate (with ``rigorous=True``, its
    bound) passes ``eps``, the graph is rebuilt there and the run goes on from that point, a
    segment of its own, up to three times. The result's ``within_max_error`` says whether the
    error at ``x`` stayed within ``eps``; where it did not (after three rebuilds, or without a
    ``rebuild`` that takes the seed), ``success`` is False and ``message`` says so.

    Returns scipy's ``OptimizeResult`` with, in addition, ``segments`` (the :class:`Segment`
    records; one without reseeding), ``history`` (this call's :class:`Evaluation` records,
    one per replay), ``refreshes``, ``rebuilds``, ``objective`` and ``truncation_error``: the
    :class:`~monoprop.TruncationError` of ``fun`` at ``x`` (one more replay), so that the
    untruncated energy at ``x`` lies within ``fun ± truncation_error.bound``; None where the
    propagator cannot bound it (``only_rotate_len_k``).

    >>> import numpy as np
    >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
    >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
    >>> prop.build_graph(Circuit([ExpGate(PauliOperator({"X": 1.0}, 1))], 1))
    >>> result = minimize(prop, [0.1])        # <Z> = cos(2θ), least at θ = π/2 + kπ
    >>> round(result.fun, 8), len(result.history) == result.nfev, len(result.segments)
    (-1.0, True, 1)
    >>> result.truncation_error.bound           # nothing was truncated
    0.0

    Three starts on ``<Z> = cos(2θ) cos(4θ)``, one angle driving two gates: its least value is
    -1, at θ = π/2, and it has local minima of -0.2722, at θ = 0.5751:

    >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
    >>> x, y = PauliOperator({"X": 1.0}, 1), PauliOperator({"Y": 2.0}, 1)
    >>> prop.build_graph(Circuit([ExpGate(x, 0), ExpGate(y, 0)], 1))   # both driven by parameter 0
    >>> best = minimize(prop, starts=[[0.7], [1.3], [0.8]])
    >>> [(round(float(r.x[0]), 4), round(r.fun, 4)) for r in best.starts]
    [(0.5751, -0.2722), (1.5708, -1.0), (0.5751, -0.2722)]
    >>> best.best_start, round(best.fun, 8), round(float(best.x[0]), 4)
    (1, -1.0, 1.5708)
    """
    if isinstance(problem, Objective):
        if rebuild is not None or pare_threshold is not None:
            raise TypeError(
                "rebuild= and pare_threshold= belong to the Objective when one is passed: "
                "Objective(propagator, rebuild=..., pare_threshold=...)."
            )
        objective = problem
    else:
        objective = Objective(problem, pare_threshold=pare_threshold, rebuild=rebuild)
    if starts is None:
        if x0 is None:
            raise TypeError(
                "minimize() needs a starting point: pass x0 (one vector) or starts= (an array "
                "of shape (S, n_parameters), one starting point per row)."
            )
        points = _start(x0, objective.n_parameters)[None, :]
    elif x0 is not None:
        raise TypeError(
            "minimize() got both x0 and starts=; pass x0 for one start or starts= for several "
            "(x0 as a row of starts: starts=[x0, ...])."
        )
    else:
        points = _starts(starts, objective.n_parameters)
    reseed_every = _reseed_interval(reseed_every, objective)
    budget = checked_budget(max_error, rigorous)
    arguments = {
        "method": method,
        "bounds": bounds,
        "constraints": constraints,
        "tol": tol,
        "options": options,
        "callback": callback,
        "progress": progress,
        "reseed_every": reseed_every,
        "budget": budget,
    }
    eps, rigorous = budget
    with error_budget(eps, rigorous=rigorous) if eps is not None else contextlib.nullcontext():
        if starts is None:
            return _minimize(objective, points[0], **arguments)
        results = []
        for k, x in enumerate(points):
            if k and reseed_every is not None:
                objective.reseed(x)  # as a call of its own would start: on a graph fresh at x
            results.append(_minimize(objective, x.copy(), **arguments))
    # The lowest value; NaN (a run that failed) never wins, and the first of equals does.
    best_start = min(range(len(results)), key=lambda k: (np.isnan(results[k].fun), results[k].fun))
    # A copy: the result returned is not an element of its own ``starts`` list, so that it
    # prints without recursing.
    best = scipy.optimize.OptimizeResult(results[best_start])
    best.starts = results
    best.best_start = best_start
    return best


def _minimize(
    objective: Objective,
    x: np.ndarray,
    *,
    method: str | Callable,
    bounds: Any,
    constraints: Any,
    tol: float | None,
    options: dict | None,
    callback: Callable | None,
    progress: bool,
    reseed_every: int | None,
    budget: tuple[float | None, bool],
) -> scipy.optimize.OptimizeResult:
    """One minimisation from ``x``, its arguments checked (see :func:`minimize`)."""
    uses_gradient = callable(method) or str(method).lower() not in _GRADIENT_FREE
    options = dict(options or {})
    first_evaluation = len(objective.history)
    refreshes, rebuilds = objective.refreshes, objective.rebuilds
    bar = _progress_bar(options) if progress else None
    run = Run(objective.value, _as_scipy_calls(callback), bar, reseed_every, options)
    segments: list[Segment] = []
    refits = 0  # graphs rebuilt because the error at a run's end passed max_error
    error: TruncationError | None = None
    try:
        while True:
            start = run.iterations
            function = run.segment(objective if uses_gradient else objective.value_only)
            try:
                result = scipy.optimize.minimize(
                    function,
                    x,
                    jac=True if uses_gradient else None,
                    method=method,
                    bounds=bounds,
                    constraints=constraints,
                    tol=tol,
                    options=run.segment_options(),
                    callback=run.step,
                )
            except Reseed as reseed:
                segment = Segment(start, run.iterations, function.calls, reseed.fun, "reseed")
                x = reseed.x
                objective.reseed(x)
                # The next segment's first evaluation, served to scipy from the cache.
                seeded_value, gradient = objective(x)
                if not run.stalls(seeded_value):
                    segments.append(segment)
                    continue
                # The fresh graph's evaluation counts with the segment that asked for it.
                segment = segment._replace(nfev=segment.nfev + 1, reason=_stall_message(run))
                segments.append(segment)
                result = _stalled(x, seeded_value, gradient, segment, uses_gradient)
                break
            end = start + int(result.get("nit", run.iterations - start))
            nfev = int(result.get("nfev", function.calls))
            segments.append(Segment(start, end, nfev, float(result.fun), result.message))
            error = _truncation_error(objective, result.x)
            if not _over_budget(error, budget):
                break
            if refits == STALLED_RESEEDS or not objective.can_reseed:
                _budget_missed(result, error, budget, refits)
                break
            refits += 1
            segments[-1] = segments[-1]._replace(reason="max_error")
            x = np.array(result.x, dtype=np.float64)
            objective.reseed(x)
            error = None
    finally:
        if bar is not None:
            bar.close()
    _add_up(result, segments)
    result.segments = segments
    result.history = objective.history[first_evaluation:]
    result.refreshes = objective.refreshes - refreshes
    result.rebuilds = objective.rebuilds - rebuilds
    result.objective = objective
    result.truncation_error = error if error is not None else _truncation_error(objective, result.x)
    if budget[0] is not None:
        result.within_max_error = not _over_budget(result.truncation_error, budget)
    return result


def _over_budget(error: TruncationError | None, budget: tuple[float | None, bool]) -> bool:
    """Whether ``error`` passes ``max_error`` (its estimate; with ``rigorous``, its bound)."""
    eps, rigorous = budget
    if eps is None:
        return False
    return error is None or bool((error.bound if rigorous else error.estimate) > eps)


def _budget_missed(result, error: TruncationError | None, budget, refits: int) -> None:
    eps, rigorous = budget
    measure = "bound" if rigorous else "estimate"
    got = "unknown (only_rotate_len_k)" if error is None else f"{getattr(error, measure):.3g}"
    tried = (
        f"after {refits} graphs rebuilt at the run's end"
        if refits
        else "and no rebuild(seed) was given to rebuild the graph there"
    )
    result.success = False
    result.message = (
        f"the truncation {measure} at the solution, {got}, passes max_error={eps:g} {tried}; "
        "raise the cutoff or lower lower_atol (what they drop counts against the budget), or "
        "raise max_error"
    )


def _truncation_error(objective: Objective, x: np.ndarray) -> TruncationError | None:
    """The error bar of the value at the solution, or None where the propagator cannot bound
    it (a graph built with ``only_rotate_len_k`` leaves terms unrotated without a record)."""
    try:
        return objective.truncation_error(x)
    except RuntimeError:
        return None


def _stalled(x, value, gradient, last: Segment, uses_gradient) -> scipy.optimize.OptimizeResult:
    """The call's result when reseeding stopped paying: the last point, on its fresh graph."""
    result = scipy.optimize.OptimizeResult(
        x=x, fun=value, nit=last.end, nfev=last.nfev, success=False, status=2, message=last.reason
    )
    if uses_gradient:
        result.update(jac=gradient, njev=last.nfev)
    return result


def _stall_message(run: Run) -> str:
    return (
        f"reseeding stopped lowering the energy: {STALLED_RESEEDS} graphs in a row, each seeded "
        f"at the optimiser's point, gave no value there below {run.best_seeded:.10g}; seeded "
        "truncation cycles between graphs here (a smaller lower_atol makes them agree)"
    )


def _add_up(result: scipy.optimize.OptimizeResult, segments: list[Segment]) -> None:
    """Iterations and evaluations of the whole call, on the last segment's result."""
    earlier = sum(s.nfev for s in segments[:-1])
    if "nit" in result:
        result.nit = segments[-1].end
    for key in ("nfev", "njev"):
        if key in result:
            result[key] = int(result[key]) + earlier


def _start(x0: Any, n_parameters: int) -> np.ndarray:
    x = np.array(x0, dtype=np.float64)
    if x.ndim != 1 or len(x) != n_parameters:
        raise ValueError(
            f"x0 has shape {x.shape} but the propagator's graph has {n_parameters} parameters; "
            f"pass a 1-D starting point of length {n_parameters} (or starts= for several)."
        )
    return x


def _starts(starts: Any, n_parameters: int) -> np.ndarray:
    points = np.array(starts, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != n_parameters or len(points) == 0:
        raise ValueError(
            f"starts has shape {points.shape} but must be (S, {n_parameters}) with S >= 1: one "
            f"starting point of the graph's {n_parameters} parameters per row."
        )
    return points


def _reseed_interval(every: int | None, objective: Objective) -> int | None:
    if every is None:
        return None
    every = check_int(
        every,
        "reseed_every",
        minimum=1,
        message="{name} must be a positive integer or None; got {value!r}.",
        type_error=ValueError,
    )
    if not objective.can_rebuild:
        raise ValueError(
            f"reseed_every={every} needs rebuild=f, where f(seed) constructs the propagator and "
            "calls build_graph(circuit, seed_parameters=seed)."
        )
    return every


def _as_scipy_calls(callback: Callable | None) -> Callable | None:
    """``callback`` taking an OptimizeResult, called the way scipy would call it."""
    if callback is None:
        return None
    try:
        parameters = set(inspect.signature(callback).parameters)
    except (TypeError, ValueError):
        parameters = set()
    if parameters == {"intermediate_result"}:
        return lambda result: callback(intermediate_result=result)
    return lambda result: callback(np.copy(result.x))


def _progress_bar(options: dict | None):
    from tqdm import tqdm

    total = (options or {}).get("maxiter")
    return tqdm(total=total, desc="minimize", unit="it", dynamic_ncols=True)
