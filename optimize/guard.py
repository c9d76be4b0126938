"""The guard shared by :class:`~monoprop.optimize.Objective`,
:func:`~monoprop.optimize.value_and_grad` and :func:`monoprop.optimize.jax.expectation`.

A propagator's functionals refuse to run once the graph or the operator they were made from
has changed (:class:`~monoprop.StaleFunctionalError`) or once the propagator failed part-way
through an operation (:class:`~monoprop.InvalidPropagatorError`). The guard turns the first
into a fresh functional and the second into a call to the user's ``rebuild``, so that an
optimiser keeps going across ADAPT steps, operator updates and reseeds, and never gets a value
from a state the propagator no longer holds.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from monoprop import InvalidPropagatorError, MonomialPropagator, StaleFunctionalError

__all__ = ["Guard", "Rebuild"]

# A callable returning a new propagator: rebuild(seed_parameters) or rebuild().
Rebuild = Callable[..., MonomialPropagator]


class Guard:
    """Evaluates a propagator through its functionals, replacing stale ones and rebuilding an
    invalid propagator. Holds no results: every call replays."""

    def __init__(
        self, propagator: Any, pare_threshold: float | None, rebuild: Rebuild | None
    ) -> None:
        if not isinstance(propagator, MonomialPropagator):
            raise TypeError(
                "expected a PauliPropagator or MajoranaPropagator with a recorded graph; got "
                f"{type(propagator).__name__}. Build one and call build_graph(circuit) first."
            )
        if rebuild is not None and not callable(rebuild):
            raise TypeError(f"rebuild must be a callable returning a propagator; got {rebuild!r}.")
        self.propagator = propagator
        self.pare_threshold = pare_threshold
        self.rebuild = rebuild
        self.takes_seed_parameters = rebuild is not None and _accepts_one_argument(rebuild)
        self.refreshes = 0
        self.rebuilds = 0
        self._functionals: dict[bool, Callable] = {}
        self._functional(True)  # a bad pare_threshold or an invalid propagator fails here
        self._n_parameters = propagator.n_parameters

    @property
    def n_parameters(self) -> int:
        """The graph's parameter count; after a failure, the last one known, so that a call's
        arguments are checked and the call goes on to ``rebuild`` (or says how to recover)."""
        try:
            self._n_parameters = self.propagator.n_parameters
        except InvalidPropagatorError:
            pass
        return self._n_parameters

    def __call__(self, x: np.ndarray, gradient: bool = True) -> Any:
        """``(value, gradient)`` when ``gradient`` else the value, at ``x``: one vector, or a
        2-D array of points (one per row) for ``(K,)`` values and ``(K, n)`` gradients from
        one batched call of the functional."""
        try:
            return self._call(x, gradient)
        except StaleFunctionalError:
            # The graph was extended or the operator updated on purpose: the propagator
            # itself is fine, so a new functional sees what it holds now.
            self.refreshes += 1
            self._functionals.clear()
            return self._call(x, gradient)

    def _call(self, x: np.ndarray, gradient: bool) -> Any:
        try:
            return self._functional(gradient)(x)
        except InvalidPropagatorError as error:
            if self.rebuild is None:
                raise InvalidPropagatorError(
                    f"the propagator being optimised failed in an earlier operation and can no "
                    f"longer be evaluated ({error}). Construct a new propagator and a new "
                    "Objective, or pass rebuild= (a callable returning a fresh propagator) so "
                    "that the optimisation rebuilds it and goes on."
                ) from error
        self.replace(self.rebuilt(x))
        return self._functional(gradient)(x)

    def rebuilt(self, x: np.ndarray) -> MonomialPropagator:
        """A new propagator from ``rebuild``, seeded at ``x`` when it takes a seed.

        For a 2-D batch of points the seed is its first row: one graph serves the whole batch,
        and a graph seeded at several points at once does not exist.
        """
        if self.rebuild is None:
            raise ValueError("no rebuild= callable was given; pass one to rebuild or reseed.")
        seed = np.array(x[0] if np.ndim(x) == 2 else x)
        propagator = self.rebuild(seed) if self.takes_seed_parameters else self.rebuild()
        self.rebuilds += 1
        if not isinstance(propagator, MonomialPropagator):
            raise TypeError(
                f"rebuild() returned {type(propagator).__name__}; it must return a new "
                "PauliPropagator or MajoranaPropagator with its graph built."
            )
        if propagator.n_parameters != len(seed):
            raise ValueError(
                f"rebuild() returned a propagator with {propagator.n_parameters} parameters but "
                f"the optimisation has {len(seed)}; rebuild the same circuit."
            )
        return propagator

    def replace(self, propagator: MonomialPropagator) -> None:
        """Evaluate ``propagator`` from now on."""
        self.propagator = propagator
        self._functionals.clear()

    def is_current(self) -> bool:
        """Whether a call now would replay the same graph and operator as the last one."""
        functional = self._functionals.get(True)
        if functional is None:
            return False
        try:
            functional.check()  # type: ignore[attr-defined]  # set by the propagator
        except (StaleFunctionalError, InvalidPropagatorError):
            return False
        return True

    def _functional(self, gradient: bool) -> Callable:
        functional = self._functionals.get(gradient)
        if functional is None:
            make = (
                self.propagator.expectation_value_and_gradient_functional
                if gradient
                else self.propagator.expectation_value_functional
            )
            functional = self._functionals[gradient] = make(self.pare_threshold)
        return functional


def _accepts_one_argument(function: Callable) -> bool:
    """True if ``function(x)`` binds, False if only ``function()`` does; else TypeError."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: assume the seed form
        return True
    for arguments in ((None,), ()):
        try:
            signature.bind(*arguments)
        except TypeError:
            continue
        return bool(arguments)
    raise TypeError(
        f"rebuild={function!r} must be callable as rebuild(seed_parameters) or rebuild()."
    )
