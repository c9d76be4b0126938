"""Births stay one run of consecutive slots per part, where halves and births meet.

A part's births are recorded only as a run: the k-th birth of a section is slot base + k of
the part's shard (graph.h). A half records its partner's slot explicitly. The two meet where
a half's partner is newly born; if such a half could sit among a part's births, every birth
after it would replay into the wrong slot. It cannot (``half()`` in propagator.h): under
``only_rotate_len_k`` a half is only ever made for a partner that is held (an answer other
than Born), and a Transfer layer (amplitude damping) makes every entry a half, so it has no
births section at all. This file checks that on random circuits that mix both:

1. with T = 1, in the decoded graph: halves whose partner is born occur, and only in layers
   with no birth (the slots of each layer's births are counted from the store's growth);
2. with T = 1..4 shards, a structural and a seeded build with ``only_rotate_len_k`` and
   damping channels: the graph's value against ``propagate`` at the same point, its gradient
   against central differences of ``propagate``, and every T against T = 1.

Rerun one case with e.g. ``pytest tests/test_birth_runs.py -k "seed=2"``.
"""

from __future__ import annotations

import numpy as np
import pytest

from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator, noise

ENV = "monoprop_NUM_THREADS"
N = 7
DEPTH = 60
VALUE_ATOL = 1e-12
FD_STEP = 1e-5
FD_ATOL = 1e-6
SEEDS = range(8)


def random_case(seed: int):
    """(gates, angles, observable): Pauli rotations of weight 1-3 and, one gate in four, an
    amplitude damping channel of fixed rate (its Transfer layer makes halves)."""
    rng = np.random.default_rng(seed)
    gates, angles = [], []
    for _ in range(DEPTH):
        if rng.random() < 0.25:
            gates.append(
                noise.amplitude_damping(float(rng.uniform(0.1, 0.6)), int(rng.integers(N)))
            )
            continue
        letters = ["I"] * N
        for q in rng.choice(N, size=int(rng.integers(1, 4)), replace=False):
            letters[q] = "XYZ"[int(rng.integers(3))]
        gates.append(ExpGate(PauliOperator({"".join(letters): 1.0}, N)))
        angles.append(float(rng.uniform(-1.5, 1.5)))
    terms = {
        "".join("IXYZ"[int(rng.integers(4))] for _ in range(N)): float(rng.normal())
        for _ in range(3)
    }
    return gates, np.array(angles), PauliOperator(terms, N)


def propagated(gates, observable, x, k: int, config: dict) -> float:
    prop = PauliPropagator(observable, [], **config)
    prop.propagate(Circuit(gates, N, parameters=list(x)), only_rotate_len_k=k)
    return prop.expectation_value()


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed={s}")
def test_halves_with_a_born_partner_share_no_layer_with_births(monkeypatch, seed):
    monkeypatch.setenv(ENV, "1")
    gates, _, observable = random_case(seed)
    found = 0
    for k in (1, 2, 3):
        prop = PauliPropagator(observable, [], cutoff=N)
        slots = prop.size()
        prop.build_graph(Circuit(gates, N), only_rotate_len_k=k)
        for layer in prop.graph():
            born_halves = {int(b) for b in layer["halves"][:, 1] if b >= slots}
            births = {int(b) for b in layer["pairs"][:, 1] if b >= slots}
            assert not (born_halves and births), f"seed={seed} k={k}: a layer has both"
            found += len(born_halves)
            slots += len(born_halves | births)
        assert slots == prop.size()
    assert found > 0, f"seed={seed}: no half with a born partner; the case checks nothing"


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed={s}")
@pytest.mark.parametrize("seeded", [False, True], ids=["structural", "seeded"])
def test_graph_with_halves_and_transfers_matches_propagate_on_every_shard_count(
    monkeypatch, seed, seeded
):
    gates, angles, observable = random_case(seed)
    config = {"cutoff": N, **({"lower_atol": 1e-3} if seeded else {})}
    for k in (1, 2, 3):
        # A seeded build's truncation holds at its seed only; a structural one's at any point.
        x = angles if seeded else angles + 0.1
        reference = propagated(gates, observable, x, k, config)
        results = {}
        for threads in (1, 2, 3, 4):
            monkeypatch.setenv(ENV, str(threads))
            prop = PauliPropagator(observable, [], **config)
            prop._engine._set_small_work(0)  # replays on the whole team, however small
            seed_parameters = angles if seeded else None
            prop.build_graph(
                Circuit(gates, N), seed_parameters=seed_parameters, only_rotate_len_k=k
            )
            results[threads] = prop.expectation_value_and_gradient(x)
            context = f"seed={seed} k={k} T={threads}"
            assert abs(results[threads][0] - reference) < VALUE_ATOL, context
            np.testing.assert_allclose(
                results[threads][1], results[1][1], atol=1e-12, err_msg=context
            )
        if seeded:
            continue  # central differences would move off the seed's truncation
        monkeypatch.setenv(ENV, "1")
        fd = np.empty_like(x)
        for i in range(len(x)):
            e = np.zeros_like(x)
            e[i] = FD_STEP
            up = propagated(gates, observable, x + e, k, config)
            down = propagated(gates, observable, x - e, k, config)
            fd[i] = (up - down) / (2 * FD_STEP)
        np.testing.assert_allclose(results[1][1], fd, atol=FD_ATOL, err_msg=f"seed={seed} k={k}")
