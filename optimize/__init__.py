"""monoprop.optimize: variational optimisation over a propagator's replayed graph.

A recorded graph gives the expectation value and its exact gradient at any parameter
vector, or at a 2-D array of points in one batched replay. This package plugs that into
``scipy.optimize.minimize`` (:func:`minimize`, from one start or several, :class:`Objective`),
into JAX (``monoprop.optimize.jax.expectation``, extra ``[jax]``) and into Optuna studies
(:func:`run_study`, extra ``[optuna]``), scans it on a grid (:func:`landscape`), and guards
every callable against later graph and operator updates. :func:`load_or_build` keeps a built
graph on disk, so that workers load it instead of building it again.

>>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
>>> from monoprop.optimize import minimize
>>> prop = PauliPropagator(PauliOperator({"ZZ": 1.0}, 2), [], cutoff=2)
>>> prop.build_graph(Circuit([ExpGate(PauliOperator({"YI": 1.0}, 2))], 2))
>>> round(minimize(prop, [0.3]).fun, 8)
-1.0
"""

from __future__ import annotations

from typing import Any

from .landscape import landscape
from .objective import Evaluation, Objective, value_and_grad
from .saved_graph import load_or_build
from .scipy_minimize import Segment, minimize

__all__ = [
    "Evaluation",
    "Objective",
    "Segment",
    "landscape",
    "load_or_build",
    "minimize",
    "run_study",
    "value_and_grad",
]


def __getattr__(name: str) -> Any:
    # Optuna is an optional extra: import it only when a study is asked for.
    if name == "run_study":
        from .study import run_study

        return run_study
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
