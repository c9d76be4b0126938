"""Guarded value-and-gradient callables over a propagator's recorded graph.

Every callable here goes through a :class:`~monoprop.optimize.guard.Guard`: after the graph or
the operator changed it takes a fresh functional, after a failure it calls the user's
``rebuild``, so that an optimiser keeps going across ADAPT steps, operator updates and reseeds,
and never gets a value from a state the propagator no longer holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from monoprop import MonomialPropagator, TruncationError

from .guard import Guard, Rebuild

__all__ = ["Evaluation", "Objective", "value_and_grad"]


class Evaluation(NamedTuple):
    """One replay of the graph: the point, the value there and the gradient's 2-norm (NaN for
    a replay of the value alone, :meth:`Objective.value_only`)."""

    x: np.ndarray
    value: float
    gradient_norm: float


class Objective:
    """``obj(x) -> (value, gradient)`` of a propagator's graph, for ``scipy.optimize``.

    ``obj`` plugs straight into ``scipy.optimize.minimize(obj, x0, jac=True)``;
    ``obj.value(x)`` and ``obj.gradient(x)`` serve optimisers that ask for them separately, and
    a one-entry cache makes such a pair at the same ``x`` cost one replay. Every replay is
    counted in ``nfev`` and recorded in ``history`` (:class:`Evaluation` tuples).

    The guard: when the propagator's graph was extended (``build_graph``) or its operator
    updated (``update_initial_operator``), the next call takes a new functional and counts it
    in ``refreshes``; the cache is never used across such a change. When the propagator failed
    part-way through an operation, ``rebuild`` (if given) is called for a new one, as
    ``rebuild(x)`` with the point being evaluated when it takes an argument, else as
    ``rebuild()``, and counted in ``rebuilds``; without ``rebuild`` the call raises
    :class:`~monoprop.InvalidPropagatorError` saying how to recover.

    >>> import numpy as np
    >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
    >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
    >>> prop.build_graph(Circuit([ExpGate(PauliOperator({"X": 1.0}, 1))], 1))
    >>> obj = Objective(prop)
    >>> value, grad = obj([0.25])                 # cos(0.5), -2 sin(0.5)
    >>> round(value, 6), grad.round(6).tolist()
    (0.877583, [-0.958851])
    >>> obj.gradient([0.25]).round(6).tolist(), obj.nfev    # from the cache
    ([-0.958851], 1)
    """

    def __init__(
        self,
        propagator: MonomialPropagator,
        *,
        pare_threshold: float | None = None,
        rebuild: Rebuild | None = None,
    ) -> None:
        self._guard = Guard(propagator, pare_threshold, rebuild)
        self.nfev = 0
        self.history: list[Evaluation] = []
        self._cached: tuple[np.ndarray, float, np.ndarray] | None = None

    def __call__(self, x: Any) -> tuple[float, np.ndarray]:
        """Value and gradient at ``x`` (a replay unless ``x`` was the last point asked)."""
        x = _point(x)
        cached = self._cached_at(x)
        if cached is not None:
            return cached[0], cached[1].copy()
        value, gradient = self._guard(x)
        value, gradient = float(value), np.asarray(gradient, dtype=np.float64)
        self.nfev += 1
        self.history.append(Evaluation(x.copy(), value, float(np.linalg.norm(gradient))))
        self._cached = (x.copy(), value, gradient)
        return value, gradient.copy()

    def value(self, x: Any) -> float:
        """The value at ``x``; the gradient comes with it and is cached for :meth:`gradient`."""
        return self(x)[0]

    def gradient(self, x: Any) -> np.ndarray:
        """The gradient at ``x``."""
        return self(x)[1]

    def value_only(self, x: Any) -> float:
        """The value at ``x`` from a replay without the gradient (about 2.5 times cheaper),
        for gradient-free optimisers; served from the cache when ``x`` was the last point."""
        x = _point(x)
        cached = self._cached_at(x)
        if cached is not None:
            return cached[0]
        value = float(self._guard(x, gradient=False))
        self.nfev += 1
        self.history.append(Evaluation(x.copy(), value, float("nan")))
        return value

    def truncation_error(self, x: Any) -> TruncationError:
        """The truncation error of the value at ``x`` on the propagator evaluated now (with
        this objective's ``pare_threshold``): a :class:`~monoprop.TruncationError` whose
        ``bound`` the distance to the untruncated value provably stays under. One replay of
        the value, not counted in ``nfev`` or ``history``."""
        functional = self.propagator.expectation_value_functional(
            self._guard.pare_threshold, with_error=True
        )
        return functional(_point(x))[1]

    def _cached_at(self, x: np.ndarray) -> tuple[float, np.ndarray] | None:
        """``(value, gradient)`` at ``x`` if it was the last point and nothing changed since."""
        cached = self._cached
        if cached is not None and np.array_equal(cached[0], x) and self._guard.is_current():
            return cached[1], cached[2]
        return None

    @property
    def propagator(self) -> MonomialPropagator:
        """The propagator evaluated now (a rebuild or reseed replaces it)."""
        return self._guard.propagator

    @property
    def n_parameters(self) -> int:
        """The length of a parameter vector: the propagator's graph parameter count."""
        return self._guard.n_parameters

    @property
    def refreshes(self) -> int:
        """New functionals taken because the graph or operator changed."""
        return self._guard.refreshes

    @property
    def rebuilds(self) -> int:
        """Propagators made by ``rebuild`` (after a failure, or to reseed)."""
        return self._guard.rebuilds

    @property
    def can_rebuild(self) -> bool:
        """Whether a ``rebuild`` callable was given (needed to reseed or to recover)."""
        return self._guard.rebuild is not None

    @property
    def can_reseed(self) -> bool:
        """Whether ``rebuild`` takes the seed parameters (needed by :meth:`reseed`)."""
        return self._guard.takes_seed_parameters

    def reseed(self, x: Any) -> None:
        """Replace the propagator by ``rebuild(x)``: its graph truncated with coefficients
        at ``x``. Needs a ``rebuild`` that takes the seed."""
        x = _point(x)
        if not self._guard.takes_seed_parameters:
            raise ValueError(
                "reseeding needs rebuild=f with f(seed_parameters) returning a new propagator "
                "whose graph was built with build_graph(circuit, seed_parameters=seed)."
            )
        self._guard.replace(self._guard.rebuilt(x))
        self._cached = None

    def __repr__(self) -> str:
        return (
            f"Objective({self.propagator!r}, nfev={self.nfev}, refreshes={self.refreshes}, "
            f"rebuilds={self.rebuilds})"
        )


def value_and_grad(
    propagator: MonomialPropagator,
    *,
    pare_threshold: float | None = None,
    rebuild: Rebuild | None = None,
) -> Callable[[Any], tuple[float, np.ndarray]]:
    """The pure function ``x -> (value, gradient)`` of the propagator's graph, JAX style.

    Unlike :class:`Objective` it keeps no cache, counters or history: each call replays. It is
    guarded the same way (a new functional after graph or operator changes, ``rebuild`` after a
    failure).

    >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
    >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
    >>> prop.build_graph(Circuit([ExpGate(PauliOperator({"X": 1.0}, 1))], 1))
    >>> f = value_and_grad(prop)
    >>> value, grad = f([0.25])
    >>> round(value, 6), grad.round(6).tolist()
    (0.877583, [-0.958851])
    """
    guard = Guard(propagator, pare_threshold, rebuild)

    def value_and_gradient(x: Any) -> tuple[float, np.ndarray]:
        value, gradient = guard(_point(x))
        return float(value), np.asarray(gradient, dtype=np.float64)

    return value_and_gradient


def _point(x: Any) -> np.ndarray:
    point = np.asarray(x, dtype=np.float64)
    if point.ndim != 1:
        raise ValueError(
            f"a parameter vector must be 1-D; got an array of shape {point.shape}. Pass one "
            "point at a time (use jax.vmap over monoprop.optimize.jax.expectation for batches)."
        )
    return point
