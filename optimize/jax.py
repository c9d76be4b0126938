"""JAX bridge: a propagator's expectation value as a differentiable JAX function.

Needs the ``[jax]`` extra; ``monoprop.optimize`` itself never imports JAX. The value and the
exact gradient come from the recorded graph through ``jax.pure_callback`` (one replay for
both), and a ``jax.custom_vjp`` hands the gradient to reverse-mode autodiff, so the function
works under ``jax.grad``, ``jax.value_and_grad``, ``jax.jit`` and ``jax.vmap`` (a batch is
replayed point by point). Forward-mode (``jax.jvp``, ``jax.jacfwd``) is not available, as for
any ``custom_vjp`` function.

JAX computes in float32 unless ``jax.config.update("jax_enable_x64", True)``; monoprop always
replays in float64 and returns results in the input's dtype.

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
    """``f(x) -> <O>(x)``, a ``jax.custom_vjp`` function of a 1-D parameter vector.

    Guarded like :class:`~monoprop.optimize.Objective`: after ``build_graph`` or
    ``update_initial_operator`` on the propagator, the next call replays what it holds now;
    after a failure, ``rebuild`` (if given) supplies a new propagator.
    """
    guard = Guard(propagator, pare_threshold, rebuild)

    def host_value(x: np.ndarray) -> np.ndarray:
        return np.asarray(guard(np.asarray(x, dtype=np.float64), gradient=False), dtype=x.dtype)

    def host_value_and_gradient(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        value, gradient = guard(np.asarray(x, dtype=np.float64))
        return np.asarray(value, dtype=x.dtype), np.asarray(gradient, dtype=x.dtype)

    @jax.custom_vjp
    def energy(x: Any) -> jax.Array:
        x = _vector(x)
        return jax.pure_callback(
            host_value, jax.ShapeDtypeStruct((), x.dtype), x, vmap_method="sequential"
        )

    def forward(x: Any) -> tuple[jax.Array, jax.Array]:
        x = _vector(x)
        shapes = (jax.ShapeDtypeStruct((), x.dtype), jax.ShapeDtypeStruct(x.shape, x.dtype))
        value, gradient = jax.pure_callback(
            host_value_and_gradient, shapes, x, vmap_method="sequential"
        )
        return value, gradient

    def backward(gradient: jax.Array, cotangent: jax.Array) -> tuple[jax.Array]:
        return (cotangent * gradient,)

    energy.defvjp(forward, backward)
    return energy


def _vector(x: Any) -> jax.Array:
    x = jnp.asarray(x)
    if x.ndim != 1:
        raise ValueError(
            f"expectation(propagator) takes a 1-D parameter vector; got shape {x.shape}. Use "
            "jax.vmap for a batch of points."
        )
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    return x
