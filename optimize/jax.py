"""JAX bridge: a propagator's expectation value as a differentiable JAX function.

Needs the ``[jax]`` extra; ``monoprop.optimize`` itself never imports JAX. The value and the
exact gradient come from the recorded graph through ``jax.pure_callback`` (one replay for
both), and a ``jax.custom_vjp`` hands the gradient to reverse-mode autodiff, so the function
works under ``jax.grad``, ``jax.value_and_grad``, ``jax.jit`` and ``jax.vmap`` (the whole batch
goes to the host in one callback and is replayed in one batched call of the propagator).
Forward-mode (``jax.jvp``, ``jax.jacfwd``) is not available, as for any ``custom_vjp``
function.

JAX computes in float32 unless ``jax.config.update("jax_enable_x64", True)``; monoprop always
replays in float64 and returns results in the input's dtype (see :func:`expectation`).

>>> import jax, jax.numpy as jnp
>>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
>>> from monoprop.optimize.jax import expectation
>>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
>>> prop.build_graph(Circuit([ExpGate(PauliOperator({"X": 1.0}, 1))], 1))
>>> energy = expectation(prop)                     # cos(2θ)
>>> value, grad = jax.jit(jax.value_and_grad(energy))(jnp.array([0.25]))
>>> round(float(value), 5), [round(float(g), 5) for g in grad]
(0.87758, [-0.95885])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from monoprop import MonomialPropagator

from .guard import Guard, Rebuild

__all__ = ["expectation"]


def expectation(
    propagator: MonomialPropagator,
    *,
    pare_threshold: float | None = None,
    rebuild: Rebuild | None = None,
) -> Callable[[Any], jax.Array]:
    """The expectation value ``<O>(x)`` of the propagator's recorded graph as a JAX function.

    Returns ``f``: ``f(x)`` takes a 1-D vector of the graph's ``n_parameters`` angles (and
    channel rates) and returns ``<O>(x)`` as a 0-d JAX array; a plain call replays the graph
    once for the value (one forward sweep). ``f`` differentiates through a ``jax.custom_vjp``
    rule: under ``jax.grad`` or ``jax.value_and_grad`` its forward pass replays the graph once
    for the value and the exact gradient together (the forward sweep and one reverse sweep of
    the graph, the call ``propagator.expectation_value_and_gradient`` makes), and its backward
    pass only scales that gradient by the incoming cotangent, so the chain rule runs through
    whatever JAX code surrounds ``f``. It works under ``jax.jit`` (the replay runs on the host
    through ``jax.pure_callback``; a compiled function replays anew on every call) and
    ``jax.vmap``: the host callback receives the whole batch (that of nested ``vmap`` calls
    too, flattened to one 2-D array of points) and makes one batched call of the propagator,
    one replay of the graph for all the points, each point's result bitwise the one a single
    call there gives. Forward mode (``jax.jvp``, ``jax.jacfwd``, ``jax.hessian``) is not
    available, as for any ``custom_vjp`` rule.

    Precision: the replay always runs in float64, at the point ``x`` as JAX holds it, and the
    value and the gradient come back in ``x``'s floating dtype. In JAX's default mode (64-bit
    types disabled) every array is float32, a float64 NumPy input included: ``x`` is then
    rounded to float32 before the replay, and the value and gradient are the float64 replay's
    rounded to float32 (about 7 significant digits), with no warning, as for any JAX function.
    For the graph's full precision, call ``jax.config.update("jax_enable_x64", True)`` before
    creating arrays and pass float64. Integer input is taken as floating (``jax.grad`` itself
    refuses integer input).

    Guarded like :class:`~monoprop.optimize.Objective`: after ``build_graph`` or
    ``update_initial_operator`` on the propagator, the next call replays what it holds now;
    after a failure, ``rebuild`` (if given) supplies a new propagator, as ``rebuild(x)`` at the
    point being evaluated when it takes an argument (under ``jax.vmap``, at the batch's first
    point: one graph serves the whole batch). ``pare_threshold`` is passed to the
    propagator's functionals.

    Raises ``ValueError`` for an ``x`` that is not 1-D or whose length is not the graph's
    ``n_parameters``.

    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
    >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 2), [], cutoff=2)
    >>> rx, ry = ExpGate(PauliOperator({"X": 1.0}, 2)), ExpGate(PauliOperator({"Y": 1.0}, 2))
    >>> prop.build_graph(Circuit([rx, ry], 2))
    >>> f = expectation(prop)                 # <Z_0> = cos(2a) cos(2b)
    >>> x = jnp.array([0.25, -0.1])           # float32: JAX's default
    >>> value, grad = jax.jit(jax.value_and_grad(f))(x)
    >>> value.dtype, grad.dtype
    (dtype('float32'), dtype('float32'))
    >>> exact = prop.expectation_value_and_gradient(np.asarray(x, dtype=np.float64))
    >>> bool(value == np.float32(exact[0])), bool(np.all(grad == exact[1].astype(np.float32)))
    (True, True)
    >>> [round(float(v), 5) for v in jax.vmap(f)(jnp.array([[0.0, 0.0], [0.25, -0.1]]))]
    [1.0, 0.86009]
    """
    guard = Guard(propagator, pare_threshold, rebuild)

    # Under jax.vmap the callbacks get the batch as leading axes of x (vmap_method=
    # "expand_dims"): the points are flattened to one (K, n) array for a single batched call
    # of the propagator, and the results take the batch's shape again.
    def host_value(x: np.ndarray) -> np.ndarray:
        points, batch = _host_points(x)
        if points is None:
            value = guard(np.asarray(x, dtype=np.float64), gradient=False)
        else:
            value = guard(points, gradient=False) if len(points) else np.zeros(0)
        return np.asarray(value, dtype=x.dtype).reshape(batch)

    def host_value_and_gradient(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points, batch = _host_points(x)
        if points is None:
            value, gradient = guard(np.asarray(x, dtype=np.float64))
        elif len(points):
            value, gradient = guard(points)
        else:
            value, gradient = np.zeros(0), np.zeros(x.shape)
        return (
            np.asarray(value, dtype=x.dtype).reshape(batch),
            np.asarray(gradient, dtype=x.dtype).reshape(x.shape),
        )

    # The custom_vjp function takes the vector as a JAX array, so that a list or tuple input
    # is converted (and differentiated) by JAX outside it: a custom_vjp's backward pass has to
    # return a cotangent of the same pytree structure as its input.
    @jax.custom_vjp
    def energy(x: jax.Array) -> jax.Array:
        return jax.pure_callback(
            host_value, jax.ShapeDtypeStruct((), x.dtype), x, vmap_method="expand_dims"
        )

    def forward(x: jax.Array) -> tuple[jax.Array, jax.Array]:
        shapes = (jax.ShapeDtypeStruct((), x.dtype), jax.ShapeDtypeStruct(x.shape, x.dtype))
        value, gradient = jax.pure_callback(
            host_value_and_gradient, shapes, x, vmap_method="expand_dims"
        )
        return value, gradient

    def backward(gradient: jax.Array, cotangent: jax.Array) -> tuple[jax.Array]:
        return (cotangent * gradient,)

    energy.defvjp(forward, backward)

    def f(x: Any) -> jax.Array:
        return energy(_vector(x, guard.n_parameters))

    return f


def _host_points(x: np.ndarray) -> tuple[np.ndarray | None, tuple[int, ...]]:
    """``(points, batch shape)``: the rows of a batched ``x`` (one point per row, float64) and
    the shape of its leading batch axes, or ``(None, ())`` for a single vector."""
    if x.ndim == 1:
        return None, ()
    batch = x.shape[:-1]
    return np.asarray(x, dtype=np.float64).reshape(math.prod(batch), x.shape[-1]), batch


def _vector(x: Any, n_parameters: int) -> jax.Array:
    x = jnp.asarray(x)
    if x.ndim != 1:
        raise ValueError(
            f"expectation(propagator) takes a 1-D parameter vector; got shape {x.shape}. Use "
            "jax.vmap for a batch of points."
        )
    if x.shape[0] != n_parameters:
        raise ValueError(
            f"expectation(propagator) got a vector of {x.shape[0]} parameters but the graph has "
            f"{n_parameters}; pass one value per graph parameter."
        )
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    return x
