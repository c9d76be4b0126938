"""Noise channels after Clifford gates, against the same circuits with the Clifford gates written
as rotations.

A ``CliffordGate`` is not applied to the terms: the engine holds them in a Clifford frame and
pulls every later layer back through it. A channel in such a frame reads its qubits (or modes)
of the terms the held keys stand for. The reference is the same circuit with every quarter turn
``exp(+i k pi/4 H)`` written as the rotation ``ExpGate(H)`` at angle ``k pi/4``, which the engine
applies to the terms directly (that path is checked against dense density matrices in
test_noise.py). Both must agree to rounding, in both pictures, with and without a recorded
graph, and in the gradient with respect to angles and rates.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from monoprop import (
    Circuit,
    CliffordGate,
    ExpGate,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
    noise,
)

N = 4
TOL = 1e-10


def _pauli(rng: np.random.Generator, weight: int) -> str:
    letters = ["I"] * N
    for q in rng.choice(N, weight, replace=False):
        letters[q] = "XYZ"[rng.integers(3)]
    return "".join(letters)


def _majorana(rng: np.random.Generator, weight: int) -> tuple[int, ...]:
    return tuple(sorted(int(i) for i in rng.choice(2 * N, weight, replace=False)))


def _operator(family: str, key, h: float):
    if family == "pauli":
        return PauliOperator({key: h}, N)
    return MajoranaOperator({key: h * 1j ** (len(key) * (len(key) - 1) // 2)}, N)


def _channel(family: str, kind: int, rng: np.random.Generator, slot: int):
    q = int(rng.integers(N))
    if family == "pauli":
        return [
            lambda: noise.depolarizing(qubits=[q, (q + 1) % N], index=slot),
            lambda: noise.amplitude_damping(qubit=q, index=slot),
            lambda: noise.pauli_channel({"X": 0.1, "Y": 0.05, "Z": 0.2}, q),
            lambda: noise.pauli_lindblad([("XZ", [q, (q + 1) % N])], [0.07]),
        ][kind]()
    return [
        lambda: noise.particle_loss(mode=q, index=slot),
        lambda: noise.dephasing(mode=q, index=slot),
        lambda: noise.particle_loss(0.15, q),
        lambda: noise.dephasing(0.1, q),
    ][kind]()


def noisy_circuits(family: str, seed: int):
    """(Clifford form, rotation form, parameters of each, observable, occupied, number of
    angles, number of quarter turns)."""
    rng = np.random.default_rng(seed)
    term = _pauli if family == "pauli" else _majorana
    step = 1 if family == "pauli" else 2
    items = []  # ("angle", generator, angle), ("turn", generator, k) or ("channel", kind)
    for position in range(18):
        if position % 3 == 2:
            items.append(("channel", position // 3 % 4, None))
            continue
        generator = _operator(family, term(rng, int(rng.integers(1, 3)) * step), 1.0)
        if position % 3 == 0:
            items.append(("angle", generator, float(rng.uniform(-1, 1))))
        else:
            items.append(("turn", generator, int(rng.integers(1, 4))))
    angles = [x for what, _, x in items if what == "angle"]
    turns = [k * math.pi / 4 for what, _, k in items if what == "turn"]

    def form(with_turns: bool):
        """The gates, every rotation with its slot: the ansatz's angles first, then (rotation
        form) the quarter turns' angles, then the channels' rates."""
        gates, rates, a, t = [], [], 0, 0
        first_rate = len(angles) + (len(turns) if with_turns else 0)
        channel_rng, rate_rng = np.random.default_rng(seed + 1), np.random.default_rng(seed + 2)
        for what, x, y in items:
            if what == "angle":
                gates.append(ExpGate(x, index=a))
                a += 1
            elif what == "turn" and with_turns:
                gates.append(ExpGate(x, index=len(angles) + t))
                t += 1
            elif what == "turn":
                gates.append(CliffordGate(x, y))
            else:
                channel = _channel(family, x, channel_rng, first_rate + len(rates))
                if channel.slots:
                    rates.append(float(rate_rng.uniform(0.05, 0.3)))
                gates.append(channel)
        return Circuit(gates, N), rates

    clifford, rates = form(with_turns=False)
    rotation, _ = form(with_turns=True)
    observable = {term(rng, 2 * step): 0.7, term(rng, step): -0.4}
    if family == "pauli":
        observable = PauliOperator(observable, N)
    else:
        observable = MajoranaOperator(
            {k: h * 1j ** (len(k) * (len(k) - 1) // 2) for k, h in observable.items()}, N
        )
    occupied = sorted(int(q) for q in rng.choice(N, N // 2, replace=False))
    return (
        clifford,
        rotation,
        np.array(angles + rates),
        np.array(angles + turns + rates),
        observable,
        occupied,
        len(angles),
        len(turns),
    )


def _propagator(family: str, observable, occupied, **config):
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    return cls(observable, occupied, cutoff=2 * N, **config)


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("schrodinger", [False, True])
@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize("seed", [3, 17])
def test_noise_after_clifford_gates_matches_rotations(
    family, schrodinger, seed, threads, monkeypatch
):
    monkeypatch.setenv("monoprop_NUM_THREADS", threads)
    clifford, rotation, theta, theta_rot, observable, occupied, n_angles, n_turns = noisy_circuits(
        family, seed
    )
    config = {"schrodinger_cutoff": N} if schrodinger else {}
    context = f"{family} seed {seed} schrodinger={schrodinger} T={threads}"

    # Graphs: value, gradient (angles and rates) and evolved operator.
    a = _propagator(family, observable, occupied, **config)
    a.build_graph(clifford)
    b = _propagator(family, observable, occupied, **config)
    b.build_graph(rotation)
    value, grad = a.expectation_value_and_gradient(theta)
    ref_value, ref_grad = b.expectation_value_and_gradient(theta_rot)
    assert abs(value - ref_value) <= TOL, context
    keep = list(range(n_angles)) + list(range(n_angles + n_turns, len(theta_rot)))
    np.testing.assert_allclose(grad, ref_grad[keep], rtol=0, atol=TOL, err_msg=context)
    ops = a.evolved_operator(theta, atol=1e-13), b.evolved_operator(theta_rot, atol=1e-13)
    worst = max(
        abs(ops[0].terms.get(k, 0.0) - ops[1].terms.get(k, 0.0))
        for k in set(ops[0].terms) | set(ops[1].terms)
    )
    assert worst <= TOL, context

    # propagate, bound circuits.
    a = _propagator(family, observable, occupied, **config)
    a.propagate(Circuit(clifford.gates, N, parameters=theta))
    b = _propagator(family, observable, occupied, **config)
    b.propagate(Circuit(rotation.gates, N, parameters=theta_rot))
    assert abs(a.expectation_value() - b.expectation_value()) <= TOL, context
