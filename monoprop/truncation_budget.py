"""``max_error``: an error budget that chooses the truncation layer by layer.

``propagate(circuit, max_error=eps)`` and ``build_graph(circuit, ..., max_error=eps)`` keep
what :meth:`~monoprop.PauliPropagator.truncation_error` reports for the result within
``eps``. What a call drops is counted as the sum of ``sqrt(w) |sin(phi) c|`` over the
dropped branches, ``w`` their reach (0 for a branch that cannot reach the state, less the
farther it is from it; see :class:`~monoprop.TruncationError`): the error if every dropped
branch added with the same sign, each weighed by the geometric mean of its weights in the
estimate (``w``) and in the bound (1). That sum is at least the estimate and at most the
bound; on random circuits it kept the actual error within ``eps`` in 98% of cases and within
``3 eps`` in all. Each layer gets an even share of what is
left of the budget over the layers left; its new terms go in order of ``|sin(phi) c|``, the
smallest first, while they fit the share, and what a layer leaves unspent passes on to the
layers after it. Terms already held keep rotating. ``rigorous=True`` counts every branch
that can reach the state in full, so that the rigorous bound stays within ``eps``; it keeps
many more terms. ``lower_atol``, where set, still drops every branch below it (counted
against the budget). The thresholds chosen are
:attr:`~monoprop.PauliPropagator.max_error_thresholds`; ``with error_budget(eps):`` sets the
budget for every call in a block.

The budget needs coefficients (a build needs a seed) and one MPI rank, and does not combine
with ``only_rotate_len_k``.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import numbers
from collections.abc import Iterator
from typing import Any

__all__ = ["check_budget_applies", "checked_budget", "engine_budget", "error_budget"]

# The budget of the innermost ``with error_budget(...)`` block: (max_error, rigorous).
_IN_FORCE: contextvars.ContextVar[tuple[float | None, bool]] = contextvars.ContextVar(
    "monoprop_error_budget", default=(None, False)
)


@contextlib.contextmanager
def error_budget(max_error: float, *, rigorous: bool = False) -> Iterator[None]:
    """Within the block, every ``propagate`` and ``build_graph`` that passes no ``max_error``
    of its own holds its truncation error within ``max_error``, as ``numpy.errstate`` sets
    how a block treats floating-point errors. It reaches the builds a user's code makes on
    its own, such as the ``rebuild`` of :func:`monoprop.optimize.minimize` or the
    ``make_problem`` of :func:`monoprop.optimize.run_study` (which both set it from their own
    ``max_error``). As with ``max_error``, a build without a seed is refused in the block.

    >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator, error_budget
    >>> x, zz = PauliOperator({"XI": 1.0}, 2), PauliOperator({"ZZ": 1.0}, 2)
    >>> circuit = Circuit([ExpGate(x), ExpGate(zz), ExpGate(x)], 2, parameters=[0.3, 0.2, 0.1])
    >>> prop = PauliPropagator(PauliOperator({"ZI": 1.0}, 2), [], cutoff=4)
    >>> with error_budget(0.05):
    ...     prop.propagate(circuit)
    >>> prop.truncation_error().estimate <= 0.05
    True
    """
    if max_error is None:
        raise TypeError("error_budget() needs a max_error: a positive, finite number.")
    token = _IN_FORCE.set(checked_budget(max_error, rigorous))
    try:
        yield
    finally:
        _IN_FORCE.reset(token)


def checked_budget(max_error: Any, rigorous: Any) -> tuple[float | None, bool]:
    """``(max_error, rigorous)`` as the engine takes them, bad input refused; with neither
    given, those of the innermost :func:`error_budget` block (none outside one).

    >>> checked_budget(1e-3, False)
    (0.001, False)
    >>> checked_budget(0.0, False)
    Traceback (most recent call last):
    ...
    ValueError: max_error=0.0 must be a positive, finite number (or None).
    """
    if not isinstance(rigorous, bool):
        raise TypeError(f"rigorous must be True or False; got {rigorous!r}.")
    if max_error is None:
        if rigorous:
            raise ValueError(
                "rigorous=True asks the bound to stay within max_error: pass max_error too."
            )
        return _IN_FORCE.get()
    if isinstance(max_error, bool) or not isinstance(max_error, numbers.Real):
        raise TypeError(f"max_error must be a number or None; got {max_error!r}.")
    value = float(max_error)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"max_error={max_error!r} must be a positive, finite number (or None).")
    return value, rigorous


def check_budget_applies(budget: tuple[float | None, bool], k: int | None, seeded: bool) -> None:
    """Refuses a budget the call cannot spend: with ``only_rotate_len_k`` (no bound), or on a
    build without coefficients (``seeded`` False)."""
    eps = budget[0]
    if eps is None:
        return
    if k is not None:
        raise ValueError(
            f"max_error={eps:g} cannot be combined with only_rotate_len_k={k}, which leaves "
            "terms unrotated without a bound; pass one of them."
        )
    if not seeded:
        raise ValueError(
            f"max_error={eps:g} needs coefficients to choose what to drop: pass "
            "seed_parameters to build_graph (or bind the circuit's parameters)."
        )


@contextlib.contextmanager
def engine_budget(engine: Any, max_error: float | None, rigorous: bool) -> Iterator[None]:
    """The engine's budget set for one call, and put back after it."""
    before = engine.max_error, engine.rigorous
    engine.max_error, engine.rigorous = max_error, rigorous
    try:
        yield
    finally:
        engine.max_error, engine.rigorous = before
