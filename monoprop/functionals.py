"""Evaluating a recorded graph: the one path from Python to the core's replays, and functionals.

Every value, gradient and truncation error a propagator gives goes through :func:`evaluate`,
whether it comes from a method (``expectation_value``, ``truncation_error``, ...) or from a
functional. :func:`evaluate` is the only place in the package that calls the core's
evaluation bindings; it decides one point or a batch, with or without the error, and shapes
the results.

A *functional* (:func:`functional`) is a callable bound to the graph and operator at the time
it was made: it replays with the parameter mapping of that time, and refuses, through
:func:`functional_guard`, once the propagator has changed or is gone.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from .arguments import ParameterValues, parameter_vector
from .exceptions import StaleFunctionalError
from .points import parameter_points
from .propagator_state import PropagatorState
from .truncation_error import TruncationError
from .truncation_settings import checked_pare

__all__ = ["evaluate", "functional", "functional_guard"]


def evaluate(
    engine: Callable[[], Any],
    parameters: ParameterValues,
    *,
    gradient: bool,
    with_error: bool,
    pare: float = 0.0,
    mapping: list[int] | None = None,
) -> Any:
    """Replay the graph at ``parameters``: the value, with ``gradient`` its gradient, with
    ``with_error`` its :class:`~monoprop.TruncationError`.

    ``engine`` is a callable that checks and returns the core engine; it is called once, after
    ``parameters`` is read as a batch or not and before a single vector is converted (so a
    malformed batch is refused before the engine's state, and the engine's state before a
    malformed vector). ``pare`` (``>= 0``; 0 replays exactly) and ``mapping`` (per-layer
    parameter indices; ``None``: the engine's current mapping) are passed to every replay.

    ``parameters`` is one point (``None``, a Circuit, a flat vector) or a batch (a 2-D array,
    shape ``(K, n)``, one point a row; see :func:`~monoprop.points.parameter_points`). It
    returns, for one point and for a batch:

    * neither: the value, a ``float``; the ``(K,)`` values, from one batched replay.
    * ``gradient``: ``(value, gradient)``, a ``float`` and an ``(n,)`` array; ``(values,
      gradients)``, ``(K,)`` and ``(K, n)`` arrays, from one batched forward and reverse sweep.
    * ``with_error``: ``(value, TruncationError(bound, estimate))`` with ``float`` fields;
      ``(values, TruncationError)`` with ``(K,)`` arrays: the error bars come point by point,
      each replay adding up what it drops on its own.
    * both: ``(value, gradient, TruncationError)``; ``(values, gradients, TruncationError)``,
      point by point as above.

    Each point of a batch gives bitwise what a call at that point gives.
    """
    points = parameter_points(parameters)
    core = engine()
    at = parameter_vector(parameters) if points is None else points
    # The core checks the angles (finite, one per parameter) and reads the array in place.
    values, gradients, bounds, estimates = core.evaluate(at, gradient, with_error, pare, mapping)
    if points is None:
        value = float(values[0])
        error = TruncationError(float(bounds[0]), float(estimates[0])) if with_error else None
    else:
        value = values
        error = TruncationError(bounds, estimates) if with_error else None
    if not with_error:
        return (value, gradients) if gradient else value
    return (value, gradients, error) if gradient else (value, error)


def functional(
    propagator: PropagatorState,
    pare_threshold: float | None,
    *,
    gradient: bool,
    with_error: Any,
) -> Callable[[ParameterValues], Any]:
    """``fn(parameters)``: :func:`evaluate` on the propagator's current graph and operator,
    with the mapping they have now and ``pare_threshold``, and ``fn.check()``.

    The arguments of ``expectation_value_functional`` and
    ``expectation_value_and_gradient_functional`` (``gradient``) are checked here, in the order
    they always were: ``with_error``, the propagator's state, ``pare_threshold``.
    """
    if not isinstance(with_error, bool):
        raise TypeError(f"with_error must be True or False; got {with_error!r}.")
    engine, mapping = functional_guard(propagator)
    pare = checked_pare(pare_threshold)

    def evaluated(parameters: ParameterValues = None) -> Any:
        return evaluate(
            engine,
            parameters,
            gradient=gradient,
            with_error=with_error,
            pare=pare,
            mapping=mapping,
        )

    return _with_check(evaluated, engine)


def functional_guard(
    propagator: PropagatorState,
) -> tuple[Callable[[], Any], list[int] | None]:
    """A checked accessor to the propagator's engine, and the mapping to replay with.

    The accessor raises once the propagator has been garbage-collected (a functional only
    borrows it), once the engine is invalid, and, with
    :class:`~monoprop.exceptions.StaleFunctionalError`, once the graph or operator changed
    since the functional was made.
    """
    propagator._finished_engine().check_valid()
    owner = weakref.ref(propagator)
    engine = propagator._engine
    generation, layers = engine.generation, engine.graph_layers
    mapping = list(engine.parameter_mapping()) if layers else None

    def checked_engine():
        if owner() is None:
            raise RuntimeError(
                "the propagator this functional was made from has been garbage-collected; "
                "keep the propagator alive while you use its functionals."
            )
        engine.check_valid()
        if engine.generation != generation:
            raise StaleFunctionalError(
                "MP object has been modified since the functional was created. Previous "
                f"number of graph layers was {layers} and now is {engine.graph_layers}. "
                "Create a new functional."
            )
        return engine

    return checked_engine, mapping


def _with_check(fn: Callable, checked_engine: Callable[[], Any]) -> Callable:
    """Give a functional its ``check()``: the staleness and validity tests of a call, run
    without replaying the graph."""

    def check() -> None:
        checked_engine()

    fn.check = check  # type: ignore[attr-defined]
    return fn
