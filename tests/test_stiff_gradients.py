"""Gradients through layers that nearly erase what they scale, against central differences.

The reverse sweep rebuilds a layer's inputs from its outputs. A term that a layer only scales
(by cos, when its branch was truncated, or by a noise factor) cannot be rebuilt by dividing by
that factor once the factors have shrunk it a lot: the division multiplies the rounding of
everything that later reached the term's slot. That happens near a quarter turn at once
(cos = 6e-17 at a Clifford angle), for a rate near 1 at once, and at moderate cosines over
many layers; the replay tape keeps those inputs instead. The kicked Ising circuit at
rzz(-pi/2), truncated by ``lower_atol`` or by the weight cutoff, is the everyday case. Central
differences of the value replay, which only runs forward, are the reference.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from monoprop import Circuit, ExpGate, Pauli, PauliOperator, PauliPropagator, noise

N = 8
FD_STEP = 1e-6


def kicked_ising(n: int, steps: int, zz: float, channel=None) -> tuple[Circuit, np.ndarray]:
    """rx(0.6) on each of ``n`` qubits, then rzz(zz) on a chain, ``steps`` times, with
    ``channel(q)`` after every layer when given."""
    gates: list = []
    angles: list[float] = []
    for _ in range(steps):
        for q in range(n):
            gates.append(ExpGate(PauliOperator({Pauli("X", [q]): -0.5}, n)))
            angles.append(0.6)
        gates += [channel(q) for q in range(n)] if channel else []
        for q in range(n - 1):
            gates.append(ExpGate(PauliOperator({Pauli("ZZ", [q, q + 1]): -0.5}, n)))
            angles.append(zz)
        gates += [channel(q) for q in range(n)] if channel else []
    return Circuit(gates, n), np.array(angles)


def check_gradient(prop: PauliPropagator, x: np.ndarray, context: str) -> None:
    """Every component against its central difference; past 200 parameters, four random unit
    directions instead (the derivative along each), which keeps the deep case fast."""
    value_fn = prop.expectation_value_functional()
    value, gradient = prop.expectation_value_and_gradient_functional()(x)
    assert abs(value - value_fn(x)) <= 1e-12, context
    if x.size <= 200:
        directions = np.eye(x.size)
    else:
        directions = np.random.default_rng(7).standard_normal((4, x.size))
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    step = directions * FD_STEP
    fd = np.array([(value_fn(x + e) - value_fn(x - e)) / (2 * FD_STEP) for e in step])
    exact = directions @ gradient
    worst = int(np.argmax(np.abs(exact - fd)))
    assert abs(exact[worst] - fd[worst]) <= 1e-7, (
        f"{context}: direction {worst} gives {exact[worst]!r}, central difference {fd[worst]!r}"
    )


def team(prop: PauliPropagator, threads: int) -> None:
    """With T > 1, replays on the whole team however small the graph (the sweeps per shard);
    with T = 1 the small graph replays spelled out on the calling thread."""
    assert prop.num_threads == threads
    if threads > 1:
        prop._engine._set_small_work(0)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("schrodinger", [False, True], ids=["heisenberg", "schrodinger"])
@pytest.mark.parametrize(
    ("n", "zz", "steps"),
    [(N, -math.pi / 2, 6), (N, -math.pi / 2 + 1e-3, 6), (N, math.pi, 6), (10, -math.acos(0.7), 24)],
    ids=["clifford", "near-clifford", "cos=-1", "cos=0.7-deep"],
)
@pytest.mark.parametrize("truncation", ["lower_atol", "cutoff"])
def test_small_cosines_under_truncation(
    truncation, n, zz, steps, schrodinger, threads, monkeypatch
):
    """cos(zz) = 6e-17, 1e-3 and 0.7 (that one on 10 qubits over 24 steps, so that terms only
    scaled for a hundred layers shrink by far more than a quarter turn does, each layer by
    little)."""
    monkeypatch.setenv("monoprop_NUM_THREADS", str(threads))
    circuit, x = kicked_ising(n, steps, zz)
    config: dict = (
        {"lower_atol": 1e-4, "cutoff": n} if truncation == "lower_atol" else {"cutoff": 3}
    )
    if schrodinger:
        config["schrodinger_cutoff"] = config["cutoff"]
    observable = PauliOperator({Pauli("Z", [n // 2]): 1.0, Pauli("XX", [1, 2]): 0.5}, n)
    prop = PauliPropagator(observable, [1, 4], **config)
    team(prop, threads)
    prop.build_graph(circuit, seed_parameters=x)
    check_gradient(prop, x, f"{truncation} zz={zz} {config} T={threads}")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "channel",
    [
        lambda q: noise.depolarizing(qubits=q, index=2 * 6 * N - 6),
        lambda q: noise.amplitude_damping(qubit=q, index=2 * 6 * N - 6),
    ],
    ids=["depolarizing", "amplitude_damping"],
)
def test_rates_that_nearly_erase_terms(channel, threads, monkeypatch):
    """Every channel reads the rate 0.999 from the last slot: each noise layer scales by 1e-3
    (depolarizing) or about 0.03 (amplitude damping's sqrt(1 - gamma))."""
    monkeypatch.setenv("monoprop_NUM_THREADS", str(threads))
    circuit, angles = kicked_ising(N, 6, -1.1, channel)
    x = np.append(angles, 0.999)
    assert circuit.n_parameters == x.size
    observable = PauliOperator({Pauli("Z", [N // 2]): 1.0}, N)
    prop = PauliPropagator(observable, [], cutoff=4)
    team(prop, threads)
    prop.build_graph(circuit, seed_parameters=x)
    check_gradient(prop, x, f"rate 0.999 T={threads}")
