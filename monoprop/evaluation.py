"""Values, gradients and truncation errors of a propagator's graph, and its functionals.

The evaluation methods of :class:`~monoprop.MonomialPropagator`. Each is a thin wrapper over
:func:`monoprop.functionals.evaluate`, the one path to the core's replays; a functional is a
callable that keeps the graph's parameter mapping and refuses once the graph or operator
changes (:func:`monoprop.functionals.functional`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, overload

import numpy as np

from .arguments import ParameterValues
from .functionals import evaluate, functional
from .propagator_state import PropagatorState
from .truncation_error import TruncationError

__all__ = ["GraphEvaluation"]


class GraphEvaluation(PropagatorState):
    """The evaluation methods of :class:`~monoprop.MonomialPropagator`: values, gradients and
    truncation errors at a parameter vector or a batch of them, and functionals."""

    def expectation_value(self, parameters: ParameterValues = None) -> Any:
        """Expectation value at ``parameters`` (the graph's parameter vector).

        A 2-D array of points, shape ``(K, n_parameters)``, gives the ``(K,)`` values, from one
        replay of the graph for all of them (each bitwise the value of a call at that point).

        >>> import numpy as np
        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
        >>> prop.build_graph(Circuit([ExpGate(PauliOperator({"X": 1.0}, 1))], 1))
        >>> prop.expectation_value(np.array([[0.0], [np.pi / 4]])).round(12)  # cos(2θ)
        array([1., 0.])
        """
        return evaluate(self._finished_engine, parameters, gradient=False, with_error=False)

    def expectation_value_and_gradient(
        self, parameters: ParameterValues = None
    ) -> tuple[Any, np.ndarray]:
        """Value and full gradient from one forward and one reverse sweep of the graph.

        A 2-D array of points, shape ``(K, n_parameters)``, gives ``(K,)`` values and
        ``(K, n_parameters)`` gradients, from one forward and one reverse sweep for all of them.
        """
        return evaluate(self._finished_engine, parameters, gradient=True, with_error=False)

    def gradient(self, parameters: ParameterValues = None) -> np.ndarray:
        """Gradient with respect to the graph's parameter vector."""
        return self.expectation_value_and_gradient(parameters)[1]

    def truncation_error(self, parameters: ParameterValues = None) -> TruncationError:
        """How far ``expectation_value(parameters)`` can be from the untruncated value.

        Returns a :class:`~monoprop.TruncationError` ``(bound, estimate)``: ``bound`` is
        rigorous, ``|exact - expectation_value(parameters)| <= bound`` whatever the state,
        and ``estimate`` a typical error under a model (see :class:`~monoprop.TruncationError`).
        It counts every sine branch the propagator dropped: those ``propagate`` (and an in-place
        ``contract_partially``) dropped from the operand, and those a replay of the graph at
        ``parameters`` drops (terms the graph only scales, because at its seed they moved less
        than ``lower_atol`` or their partner was past the cutoff). ``parameters`` is what
        ``expectation_value`` takes: ``None`` (no graph, or a graph without parameters) bounds
        what ``propagate`` dropped. ``update_initial_operator`` starts the count afresh in the
        Heisenberg picture (a new operand); the Schrödinger state keeps its count.

        The cost is one forward replay of the graph, as ``expectation_value``. Refused
        (``RuntimeError``) after ``only_rotate_len_k``, which leaves terms unrotated without
        recording them.

        >>> import math
        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> x = PauliOperator({"X": 1.0}, 1)
        >>> circuit = Circuit([ExpGate(x), ExpGate(x)], 1, parameters=[math.pi / 4, 0.05])
        >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1, lower_atol=0.5)
        >>> prop.propagate(circuit)  # drops sin(0.1) Y: it moves less than lower_atol
        >>> exact = math.cos(2 * (math.pi / 4 + 0.05))
        >>> error = prop.truncation_error()
        >>> round(error.bound, 12), round(abs(exact - prop.expectation_value()), 12)
        (0.099833416647, 0.099833416647)
        """
        self._check_finished()  # refused before the parameters are read
        return evaluate(self._finished_engine, parameters, gradient=False, with_error=True)[-1]

    expval = expectation_value
    expval_and_grad = expectation_value_and_gradient
    grad = gradient

    @overload
    def expectation_value_functional(
        self, pare_threshold: float | None = None, *, with_error: Literal[False] = False
    ) -> Callable[[ParameterValues], float]: ...

    @overload
    def expectation_value_functional(
        self, pare_threshold: float | None = None, *, with_error: Literal[True]
    ) -> Callable[[ParameterValues], tuple[float, TruncationError]]: ...

    def expectation_value_functional(
        self, pare_threshold: float | None = None, *, with_error: bool = False
    ) -> Callable[[ParameterValues], Any]:
        """A callable ``fn(parameters) -> float`` bound to the current graph and operator.

        It keeps the parameter mapping it was made with, raises
        :class:`~monoprop.exceptions.StaleFunctionalError` once the graph or operator changes,
        and borrows the propagator: keep the propagator alive while you use it.
        ``fn.check()`` raises the error a call would raise, without replaying: a cache of
        earlier results uses it to tell whether they still hold.

        ``pare_threshold`` (default ``None``, which replays the graph exactly; a coefficient
        magnitude, ``>= 0``): in each replay, a recorded rotation of a pair whose larger
        coefficient ``c`` has ``|sin(phi) * c| < pare_threshold`` is applied as its
        ``cos(phi)`` scaling only, dropping rotated parts smaller than the threshold. The graph
        itself is unchanged. Typical: ``1e-10`` to ``1e-12``. What paring drops counts in the
        truncation error.

        ``with_error=True``: ``fn(parameters) -> (value, TruncationError)``, the value with its
        :meth:`truncation_error`, from the same replay (it costs a few percent more than the
        value alone).

        >>> import math
        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1, lower_atol=0.5)
        >>> x = PauliOperator({"X": 1.0}, 1)
        >>> prop.build_graph(Circuit([ExpGate(x), ExpGate(x)], 1, parameters=[math.pi / 4, 0.05]))
        >>> fn = prop.expectation_value_functional(with_error=True)
        >>> value, error = fn([math.pi / 4, 0.05])
        >>> round(value, 12), round(error.bound, 12)  # the exact value is -sin(0.1)
        (0.0, 0.099833416647)
        """
        return functional(self, pare_threshold, gradient=False, with_error=with_error)

    @overload
    def expectation_value_and_gradient_functional(
        self, pare_threshold: float | None = None, *, with_error: Literal[False] = False
    ) -> Callable[[ParameterValues], tuple[float, np.ndarray]]: ...

    @overload
    def expectation_value_and_gradient_functional(
        self, pare_threshold: float | None = None, *, with_error: Literal[True]
    ) -> Callable[[ParameterValues], tuple[float, np.ndarray, TruncationError]]: ...

    def expectation_value_and_gradient_functional(
        self, pare_threshold: float | None = None, *, with_error: bool = False
    ) -> Callable[[ParameterValues], Any]:
        """A callable ``fn(parameters) -> (value, gradient)``.

        See :meth:`expectation_value_functional` for what it keeps and when it refuses.
        ``with_error=True``: ``fn(parameters) -> (value, gradient, TruncationError)``, the
        :meth:`truncation_error` counted in the gradient's forward sweep.

        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
        >>> prop.build_graph(Circuit([ExpGate(PauliOperator({"X": 1.0}, 1))], 1))
        >>> fn = prop.expectation_value_and_gradient_functional()
        >>> value, grad = fn([0.25])     # cos(0.5), -2 sin(0.5)
        >>> round(value, 6), grad.round(6).tolist()
        (0.877583, [-0.958851])
        """
        return functional(self, pare_threshold, gradient=True, with_error=with_error)

    expval_functional = expectation_value_functional
    expval_and_grad_functional = expectation_value_and_gradient_functional
