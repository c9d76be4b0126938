"""``scipy.optimize.minimize`` over a propagator's replayed value and exact gradient."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.optimize

from monoprop.validation import check_int

from .guard import Rebuild
from .objective import Objective

__all__ = ["minimize"]

# scipy's methods that never ask for a gradient; the rest get value and gradient together.
_GRADIENT_FREE = {"nelder-mead", "powell", "cobyla", "cobyqa"}


def minimize(
    problem: Any,
    x0: Any,
    *,
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
) -> scipy.optimize.OptimizeResult:
    """Minimise the expectation value of a propagator's graph with ``scipy.optimize.minimize``.

    ``problem`` is a propagator with a recorded graph, or an :class:`Objective` (which then
    carries ``rebuild`` and ``pare_threshold``). ``method``, ``bounds``, ``constraints``,
    ``tol`` and ``options`` are scipy's; gradient methods get the exact gradient of the same
    replay, gradient-free ones the value alone.

    ``callback`` is called once per iteration, as scipy does: with an ``OptimizeResult``
    (``x``, ``fun``) when its one parameter is named ``intermediate_result``, else with a copy
    of ``x``; raising ``StopIteration`` ends the run. ``progress=True`` shows a tqdm bar with
    the current energy on stderr (under MPI, pass ``progress=comm.rank == 0``).

    ``reseed_every=k`` replaces the propagator every ``k`` iterations by ``rebuild(x)`` at the
    current point, so that coefficient-informed truncation (``lower_atol``/``upper_atol``)
    follows the optimiser; ``rebuild(seed)`` must construct a propagator and call
    ``build_graph(circuit, seed_parameters=seed)``.

    Returns scipy's ``OptimizeResult`` with, in addition, ``history`` (this run's
    :class:`Evaluation` records, one per replay), ``refreshes``, ``rebuilds`` and
    ``objective``.

    >>> import numpy as np
    >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
    >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
    >>> prop.build_graph(Circuit([ExpGate(PauliOperator({"X": 1.0}, 1))], 1))
    >>> result = minimize(prop, [0.1])        # <Z> = cos(2θ), least at θ = π/2 + kπ
    >>> round(result.fun, 8), len(result.history) == result.nfev
    (-1.0, True)
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
    x0 = _start(x0, objective.n_parameters)
    reseed_every = _reseed_interval(reseed_every, objective)
    uses_gradient = callable(method) or str(method).lower() not in _GRADIENT_FREE
    user_callback = _as_scipy_calls(callback)
    first_evaluation = len(objective.history)
    refreshes, rebuilds = objective.refreshes, objective.rebuilds
    bar = _progress_bar(options) if progress else None
    iteration = 0

    def step(intermediate_result: Any) -> None:
        nonlocal iteration
        iteration += 1
        result = _intermediate(intermediate_result, objective)
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"energy={result.fun:.10g}", refresh=False)
        if user_callback is not None:
            user_callback(result)
        if reseed_every and iteration % reseed_every == 0:
            objective.reseed(result.x)

    try:
        result = scipy.optimize.minimize(
            objective if uses_gradient else objective.value_only,
            x0,
            jac=True if uses_gradient else None,
            method=method,
            bounds=bounds,
            constraints=constraints,
            tol=tol,
            options=options,
            callback=step,
        )
    finally:
        if bar is not None:
            bar.close()
    result.history = objective.history[first_evaluation:]
    result.refreshes = objective.refreshes - refreshes
    result.rebuilds = objective.rebuilds - rebuilds
    result.objective = objective
    return result


def _start(x0: Any, n_parameters: int) -> np.ndarray:
    x = np.array(x0, dtype=np.float64)
    if x.ndim != 1 or len(x) != n_parameters:
        raise ValueError(
            f"x0 has shape {x.shape} but the propagator's graph has {n_parameters} parameters; "
            f"pass a 1-D starting point of length {n_parameters}."
        )
    return x


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


def _intermediate(reported: Any, objective: Objective) -> scipy.optimize.OptimizeResult:
    """scipy reports an OptimizeResult (most methods) or the bare point (TNC, COBYLA)."""
    if isinstance(reported, scipy.optimize.OptimizeResult) and "fun" in reported:
        return reported
    x = np.array(reported.x if isinstance(reported, scipy.optimize.OptimizeResult) else reported)
    return scipy.optimize.OptimizeResult(x=x, fun=objective.value(x))


def _progress_bar(options: dict | None):
    from tqdm import tqdm

    total = (options or {}).get("maxiter")
    return tqdm(total=total, desc="minimize", unit="it", dynamic_ncols=True)
