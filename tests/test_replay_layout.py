"""Team replays on a layout of their own.

With T > 1 threads a replay may renumber the graph's slots into T blocks, split by parities of a
few bits of their terms that few generators flip, so that most layers stay inside one thread's
block and the team meets only at the layers that cross blocks. This file checks:

1. random noisy circuits in both families and pictures, T = 2..4, with the layout made wherever
   one can be (``_set_replay_layout("always")``): value, gradient, evolved operator and
   ``contract_partially`` against the dense reference;
2. a kicked Ising graph, on which the layout pays by itself: value, gradient, truncation error,
   pared replays and evolved operator against the shards' own graph (layout ``"never"``) to
   rounding, and bitwise reproducibility (repeated calls, a second propagator, the calling
   thread alone against the whole team);
3. a graph that grows after a replay is laid out again;
4. the hook refuses an unknown mode;
5. saving, pickling and copying a laid-out graph replay bitwise.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from test_noise import (
    FD_ATOL,
    GRADIENT_ATOL,
    PICTURES,
    central_difference,
    check_value,
    describe,
    fresh_point,
    make_propagator,
    plain_terms,
    random_noisy,
    set_threads,
    to_circuit,
)
from test_random_circuits import check_terms
from test_resume import state
from test_threads import ENV, ising_propagator

import monoprop
from monoprop import Circuit, ExpGate, Pauli, PauliOperator


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed={s}")
@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_laid_out_replays_match_dense(family, seed, picture, monkeypatch):
    threads = 2 + seed % 3
    set_threads(monkeypatch, threads)
    case = random_noisy(
        300 + seed, family, "even", num_channels=3, num_gates=10, indexed_channels=True
    )
    context = describe(case, seed, picture, threads)
    prop = make_propagator(case, picture)
    prop._engine._set_replay_layout("always")
    prop._engine._set_small_work(0 if seed % 2 else 2**62)  # the whole team, or the calling thread
    prop.build_graph(to_circuit(case, bound=False))
    assert prop._engine._replay_blocks() == threads, context
    x = fresh_point(case, np.random.default_rng(seed))
    value, gradient = prop.expectation_value_and_gradient(x)
    check_value(value, case.expectation(x), context)
    check_value(prop.expectation_value(x), case.expectation(x), context)
    assert np.max(np.abs(gradient - case.gradient(x))) <= GRADIENT_ATOL, context
    fd = central_difference(prop.expectation_value_functional(), x)
    assert np.max(np.abs(gradient - fd)) <= FD_ATOL, context
    check_terms(
        plain_terms(family, prop.evolved_operator(x, atol=0.0), case.n),
        case.terms(picture, x),
        context,
    )
    prop.contract_partially(x)
    check_value(prop.expectation_value(), case.expectation(x), f"{context} after contract")


def laid_out_and_plain(picture: str) -> tuple:
    laid_out, plain = ising_propagator(picture), ising_propagator(picture)
    plain._engine._set_replay_layout("never")
    for prop in (laid_out, plain):
        prop._engine._set_small_work(0)
    return laid_out, plain


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("threads", [2, 3, 4])
def test_layout_pays_and_agrees_with_the_shards_graph(threads, picture, monkeypatch):
    monkeypatch.setenv(ENV, str(threads))
    laid_out, plain = laid_out_and_plain(picture)
    assert laid_out._engine._replay_blocks() == threads  # chosen by itself
    assert plain._engine._replay_blocks() == 0
    x = np.random.default_rng(threads).uniform(-1.0, 1.0, size=laid_out.n_parameters)
    value, gradient = laid_out.expectation_value_and_gradient(x)
    plain_value, plain_gradient = plain.expectation_value_and_gradient(x)
    assert value == pytest.approx(plain_value, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(gradient, plain_gradient, rtol=1e-11, atol=1e-13)
    assert np.any(gradient != 0.0)
    bound, plain_bound = laid_out.truncation_error(x), plain.truncation_error(x)
    assert bound.bound == pytest.approx(plain_bound.bound, rel=1e-12)
    assert bound.estimate == pytest.approx(plain_bound.estimate, rel=1e-12)
    assert bound.bound > 0.0
    # Pared replays cut the same entries: the moved weight of each is layout-independent.
    pare = 1e-3
    pared, plain_pared = (
        prop.expectation_value_and_gradient_functional(pare_threshold=pare)(x)
        for prop in (laid_out, plain)
    )
    assert pared[0] == pytest.approx(plain_pared[0], rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(pared[1], plain_pared[1], rtol=1e-11, atol=1e-13)
    assert pared[0] != value
    check_terms(
        plain_terms("pauli", laid_out.evolved_operator(x, atol=0.0), 10),
        plain_terms("pauli", plain.evolved_operator(x, atol=0.0), 10),
        f"T={threads} {picture}",
    )


@pytest.mark.parametrize("threads", [2, 4])
def test_laid_out_replays_are_bitwise_reproducible(threads, monkeypatch):
    monkeypatch.setenv(ENV, str(threads))
    first, second = ising_propagator("heisenberg"), ising_propagator("heisenberg")
    x = np.random.default_rng(5).uniform(-1.0, 1.0, size=first.n_parameters)
    second._engine._set_small_work(0)  # the whole team
    first._engine._set_small_work(2**62)  # the calling thread, working the blocks in turn
    results = [prop.expectation_value_and_gradient(x) for prop in (first, second, first, second)]
    assert first._engine._replay_blocks() == second._engine._replay_blocks() == threads
    value, gradient = results[0]
    for other_value, other_gradient in results[1:]:
        assert other_value == value
        assert np.array_equal(other_gradient, gradient)


def test_grown_graph_is_laid_out_again(monkeypatch):
    monkeypatch.setenv(ENV, "2")
    laid_out, plain = laid_out_and_plain("heisenberg")
    rng = np.random.default_rng(3)
    laid_out.expectation_value_and_gradient(rng.uniform(size=laid_out.n_parameters))
    hops = [PauliOperator({Pauli("XY", (q, q + 1)): 1.0}, 10) for q in range(9)]
    for prop in (laid_out, plain):
        prop.build_graph(Circuit([ExpGate(hop) for hop in hops], 10))
    x = rng.uniform(-1.0, 1.0, size=laid_out.n_parameters)
    value, gradient = laid_out.expectation_value_and_gradient(x)
    plain_value, plain_gradient = plain.expectation_value_and_gradient(x)
    assert laid_out._engine._replay_blocks() == 2
    assert value == pytest.approx(plain_value, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(gradient, plain_gradient, rtol=1e-11, atol=1e-13)


def test_layout_hook_refuses_unknown_modes(monkeypatch):
    monkeypatch.setenv(ENV, "2")
    prop = ising_propagator("heisenberg")
    with pytest.raises(ValueError, match="'sometimes'"):
        prop._engine._set_replay_layout("sometimes")


@pytest.mark.parametrize("threads", [2, 3])
def test_saves_and_copies_of_a_laid_out_graph(threads, monkeypatch, tmp_path):
    """The layout takes the shards' graph over (their bytes go, to be written again): saving,
    pickling and copying a laid-out propagator save the graph byte for byte as built, and
    what they make is laid out again and replays bitwise as the original."""
    monkeypatch.setenv(ENV, str(threads))
    prop, plain = laid_out_and_plain("schrodinger")
    x = np.random.default_rng(11).uniform(-1.0, 1.0, size=prop.n_parameters)
    before = prop.expectation_value_and_gradient(x)
    assert prop._engine._replay_blocks() == threads
    assert prop.memory()["graph"] < 1.5 * plain.memory()["graph"]  # not held twice
    assert state(prop) == state(plain)  # given back as recorded
    prop.save(tmp_path / "p")
    loaded = monoprop.load(tmp_path / "p")
    loaded._engine._set_small_work(0)
    results = [p.expectation_value_and_gradient(x) for p in (prop, loaded, copy.deepcopy(prop))]
    results.append(pickle.loads(pickle.dumps(prop)).expectation_value_and_gradient(x))
    value, gradient = results[0]
    assert value == pytest.approx(before[0], rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(gradient, before[1], rtol=1e-11, atol=1e-13)
    for other_value, other_gradient in results[1:]:
        assert other_value == value
        assert np.array_equal(other_gradient, gradient)
    assert loaded._engine._replay_blocks() == threads
    plain_value, plain_gradient = plain.expectation_value_and_gradient(x)
    assert value == pytest.approx(plain_value, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(gradient, plain_gradient, rtol=1e-11, atol=1e-13)
    assert prop.graph_size() == plain.graph_size()
