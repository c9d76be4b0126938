"""on_memory_limit="truncate": a layer that would pass the memory budget keeps only its largest
new terms, and the operation completes where "raise" stops with a MemoryError.

The engine records each thinned layer as ``(layer, lower_atol)``; the truncating reference
(tests/truncating_reference.py), run with those thresholds (new terms of a thinned layer only
above its threshold, later layers with lower_atol raised to it), must give the same operator.
Peak memory is measured in a child process (VmHWM), whose only work is the build.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import dense_reference as dr
import numpy as np
import pytest
import truncating_reference as tr

import monoprop
from monoprop import (
    Circuit,
    ExpGate,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
)


def resident_bytes() -> int:
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # freed pages malloc kept would count as held
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def ising(n: int, steps: int, seed: int) -> list[tuple[str, float]]:
    """A tilted-field Ising chain as (full-width generator, theta), random angles (no ties)."""
    rng = np.random.default_rng(seed)

    def word(letters: str, qubits: tuple[int, ...]) -> str:
        s = ["I"] * n
        for letter, q in zip(letters, qubits, strict=True):
            s[q] = letter
        return "".join(s)

    gates = []
    for _ in range(steps):
        gates += [(word("ZZ", (q, q + 1)), float(rng.uniform(0.2, 0.6))) for q in range(n - 1)]
        gates += [(word("X", (q,)), float(rng.uniform(0.5, 0.9))) for q in range(n)]
        gates += [(word("Z", (q,)), float(rng.uniform(0.1, 0.4))) for q in range(n)]
    return gates


def circuit_of(gates: list[tuple[str, float]], n: int) -> Circuit:
    return Circuit(
        [ExpGate(PauliOperator({g: 1.0}, n)) for g, _ in gates],
        n,
        parameters=[theta for _, theta in gates],
    )


def reference(observable: dict[str, float], gates, n: int, thinned: dict[int, float]):
    """The engine's rule with its recorded thresholds: layer l (application order, the last
    gate first) keeps new terms only above thinned[l]; later layers scan with lower_atol
    raised to the largest threshold so far."""
    ops, raised = dict(observable), None
    for layer, (g, theta) in enumerate(reversed(gates)):
        above = thinned.get(layer)
        ops = tr.apply_layer(ops, g, theta, n, lower=raised, births_above=above)
        if above is not None:
            raised = above if raised is None else max(raised, above)
    return ops


N_SMALL = 8
OBSERVABLE = {"IIIIZIII": 1.0, "IXIIIIII": 0.5}


def random_layers(n: int, layers: int, seed: int):
    """Random Pauli rotations: the operator grows about 1.5 times a layer."""
    rng = np.random.default_rng(seed)
    gates = [(tr.random_string(rng, n), float(rng.uniform(0.2, 1.2))) for _ in range(layers)]
    return {tr.random_string(rng, n): 1.0, tr.random_string(rng, n): 0.3}, gates


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("route", ["propagate", "build_graph"])
def test_a_thinned_run_is_the_truncating_reference_with_its_recorded_thresholds(
    route, threads, monkeypatch
):
    monkeypatch.setenv("monoprop_NUM_THREADS", str(threads))
    n = 16
    observable, gates = random_layers(n, 34, seed=7)  # 580 thousand terms untruncated
    circuit = circuit_of(gates, n)
    prop = PauliPropagator(
        PauliOperator(observable, n),
        [],
        cutoff=n,
        memory_limit=resident_bytes() + 16 * 2**20,
        on_memory_limit="truncate",
    )
    assert prop.on_memory_limit == "truncate"
    theta = list(circuit.parameters)
    if route == "propagate":
        prop.propagate(circuit)
        evolved = prop.evolved_operator(atol=0.0)
        value = prop.expectation_value()
    else:
        prop.build_graph(circuit, seed_parameters=theta)
        evolved = prop.evolved_operator(theta, atol=0.0)
        value = prop.expectation_value(theta)
    thinned = prop.memory_truncations
    assert thinned, "the budget should have thinned a layer"
    layers = [layer for layer, _ in thinned]
    assert layers == sorted(set(layers)) and all(0 <= layer < len(gates) for layer in layers)
    assert all(atol > 0 for _, atol in thinned)
    assert prop.effective_lower_atol == max(atol for _, atol in thinned)
    expected = reference(observable, gates, n, dict(thinned))
    actual = dr.pauli_terms_to_strings(evolved.terms, n)
    worst, where = dr.max_coefficient_difference(actual, expected)
    assert worst < 1e-10, (worst, where)
    # <0|O|0>: the Z-strings' coefficients.
    zeros = sum(c for p, c in expected.items() if set(p) <= {"I", "Z"})
    assert value == pytest.approx(zeros, abs=1e-10)
    # Without the budget nothing is thinned, and the operator is larger.
    free = PauliPropagator(PauliOperator(observable, n), [], cutoff=n)
    free.propagate(circuit)
    assert free.memory_truncations == [] and free.effective_lower_atol is None
    assert free.size() > prop.size()
    # What the budget dropped is counted in the error bar, which holds the exact value.
    error = prop.truncation_error(None if route == "propagate" else theta)
    assert 0.0 < error.bound and abs(value - free.expectation_value()) <= error.bound + 1e-12


def test_within_the_budget_truncate_changes_nothing():
    gates = ising(N_SMALL, 2, seed=4)
    circuit = circuit_of(gates, N_SMALL)
    values = []
    for mode in ("raise", "truncate"):
        prop = PauliPropagator(
            PauliOperator(OBSERVABLE, N_SMALL), [], cutoff=N_SMALL, on_memory_limit=mode
        )
        prop.build_graph(circuit, seed_parameters=list(circuit.parameters))
        assert prop.memory_truncations == []
        values.append(prop.expectation_value(list(circuit.parameters)))
    assert values[0] == values[1]


# A child process holds only the interpreter and the build: its peak resident memory
# (VmHWM) is the build's, to compare with the budget it was given.
CHILD = """
import ctypes, json, os, sys
sys.path.insert(0, {tests!r})
from test_memory_truncate import circuit_of, ising
from monoprop import PauliOperator, PauliPropagator
n, mode, extra = {n}, {mode!r}, {extra}
gates = ising(n, {steps}, seed=5)
circuit = circuit_of(gates, n)
theta = list(circuit.parameters)
ctypes.CDLL("libc.so.6").malloc_trim(0)
with open("/proc/self/statm") as fh:
    limit = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") + extra
middle = "I" * (n // 2) + "Z" + "I" * (n - n // 2 - 1)
prop = PauliPropagator(PauliOperator({{middle: 1.0}}, n), [], cutoff=n,
                       memory_limit=limit, on_memory_limit=mode)
out = {{"limit": limit}}
try:
    prop.build_graph(circuit, seed_parameters=theta)
    out["value"] = prop.expectation_value(theta)
    out["thinned"] = prop.memory_truncations
    out["size"] = prop.size()
except MemoryError as error:
    out["error"] = str(error)
with open("/proc/self/status") as fh:
    peak = next(line for line in fh if line.startswith("VmHWM:"))
out["peak"] = int(peak.split()[1]) * 1024
print(json.dumps(out))
"""


def run_child(mode: str, *, n: int = 16, steps: int = 6, extra: int = 40 * 2**20) -> dict:
    code = CHILD.format(tests=str(Path(__file__).parent), n=n, mode=mode, steps=steps, extra=extra)
    # The monoprop these tests import (installed, or a source tree with its built core) comes
    # first; the child runs in the tests' folder, where no other monoprop is found.
    env = dict(os.environ, PYTHONPATH=str(Path(monoprop.__file__).parents[1]))
    env.pop("monoprop_MEMORY_LIMIT", None)
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_truncate_completes_a_build_raise_refuses_and_stays_under_the_limit():
    refused = run_child("raise")
    assert "error" in refused and "build_graph stopped at layer" in refused["error"]
    assert 'on_memory_limit="truncate"' in refused["error"]
    done = run_child("truncate")
    assert "error" not in done, done.get("error")
    assert done["thinned"] and np.isfinite(done["value"]) and abs(done["value"]) <= 1.0
    assert done["peak"] <= done["limit"], (done["peak"], done["limit"])
    assert refused["peak"] <= refused["limit"], (refused["peak"], refused["limit"])


def past_its_budget():
    """A truncating propagator whose budget is 1 MB above what the process holds, an Ising
    circuit's gates, and 4 MB of ballast the process holds from then on (keep it alive)."""
    prop = PauliPropagator(
        PauliOperator(OBSERVABLE, N_SMALL),
        [],
        cutoff=N_SMALL,
        memory_limit=resident_bytes() + 2**20,
        on_memory_limit="truncate",
    )
    return prop, ising(N_SMALL, 5, seed=3), np.ones(4 * 2**20 // 8)


def test_held_terms_that_cannot_fit_still_raise(monkeypatch):
    # A budget below what the process already holds: a build must record each layer's
    # entries, so not even a layer without new terms fits.
    prop, gates, ballast = past_its_budget()
    before = (prop.size(), prop.evolved_operator(atol=0.0))
    with pytest.raises(MemoryError) as caught:
        prop.build_graph(circuit_of(gates, N_SMALL), seed_parameters=[t for _, t in gates])
    message = str(caught.value)
    assert re.search(r"build_graph stopped at layer \d+ of", message), message
    assert "never held ones" in message, message
    assert (prop.size(), prop.evolved_operator(atol=0.0), prop.graph_size()) == (*before, (0, 0))
    del ballast


def test_over_its_budget_propagate_keeps_the_held_terms_and_drops_every_new_one():
    # propagate records nothing: a layer without new terms needs no memory, so even a
    # process already past its budget completes, every layer thinned to its pairs.
    prop, gates, ballast = past_its_budget()
    prop.propagate(circuit_of(gates, N_SMALL))
    del ballast
    assert prop.size() == len(OBSERVABLE)
    thinned = dict(prop.memory_truncations)
    assert thinned
    expected = reference(OBSERVABLE, gates, N_SMALL, thinned)
    assert len(expected) == len(OBSERVABLE)
    actual = dr.pauli_terms_to_strings(prop.evolved_operator(atol=0.0).terms, N_SMALL)
    worst, where = dr.max_coefficient_difference(actual, expected)
    assert worst < 1e-12, (worst, where)


def test_a_structural_build_says_truncate_needs_coefficients(monkeypatch):
    limit = resident_bytes() + 2**20
    prop = PauliPropagator(
        PauliOperator(OBSERVABLE, N_SMALL),
        [],
        cutoff=N_SMALL,
        memory_limit=limit,
        on_memory_limit="truncate",
    )
    with pytest.raises(MemoryError, match="needs coefficients to choose what to drop"):
        # No parameter values: a structural build.
        prop.build_graph(Circuit(circuit_of(ising(N_SMALL, 5, seed=3), N_SMALL).gates, N_SMALL))
    assert prop.graph_layers == 0 and prop.memory_truncations == []


@pytest.mark.parametrize(
    "value, error, text",
    [
        (None, TypeError, "on_memory_limit must be the str 'raise' or 'truncate'; got None"),
        (1, TypeError, "got 1 (int)"),
        ("Truncate", ValueError, "on_memory_limit='Truncate' is not a choice"),
        ("drop", ValueError, "pass 'raise'"),
    ],
)
def test_bad_choices_are_refused_before_anything_is_built(value, error, text):
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        PauliPropagator(PauliOperator(OBSERVABLE, N_SMALL), [], cutoff=4, on_memory_limit=value)
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        MajoranaPropagator(MajoranaOperator({(0, 1): 1j}, 2), [], cutoff=4, on_memory_limit=value)


def test_copies_keep_the_choice():
    import copy
    import pickle

    prop = MajoranaPropagator(
        MajoranaOperator({(0, 1): 1j}, 2), [], cutoff=4, on_memory_limit="truncate"
    )
    assert copy.deepcopy(prop).on_memory_limit == "truncate"
    assert copy.copy(prop).on_memory_limit == "truncate"
    # A save records neither the budget nor the choice: they belong to the machine.
    assert pickle.loads(pickle.dumps(prop)).on_memory_limit == "raise"
    assert MajoranaPropagator(MajoranaOperator({(0, 1): 1j}, 2), [], cutoff=4).on_memory_limit == (
        "raise"
    )


def test_majorana_truncate_completes_what_raise_refuses():
    # Random quartic Majorana rotations on 12 modes: 1.7 million terms untruncated.
    n = 12
    rng = np.random.default_rng(2)
    gates = [
        ExpGate(
            MajoranaOperator({tuple(sorted(rng.choice(2 * n, 4, replace=False).tolist())): 1.0}, n)
        )
        for _ in range(34)
    ]
    theta = rng.uniform(0.2, 1.2, size=len(gates)).tolist()
    observable = MajoranaOperator({(0, 1): 1j, (2, 3, 4, 5): 0.5}, n)
    circuit = Circuit(gates, n, parameters=theta)
    exact = MajoranaPropagator(observable, [0, 1], cutoff=2 * n)
    exact.propagate(circuit)  # no truncation: the exact operator
    refused = MajoranaPropagator(
        observable, [0, 1], cutoff=2 * n, memory_limit=resident_bytes() + 32 * 2**20
    )
    with pytest.raises(MemoryError, match='on_memory_limit="truncate"'):
        refused.propagate(circuit)
    assert refused.size() == 2
    prop = MajoranaPropagator(
        observable,
        [0, 1],
        cutoff=2 * n,
        memory_limit=resident_bytes() + 32 * 2**20,
        on_memory_limit="truncate",
    )
    prop.propagate(circuit)
    assert prop.memory_truncations and prop.size() < exact.size()
    # Only small branches were dropped, and the error bar counts them.
    bound = prop.truncation_error().bound
    assert abs(prop.expectation_value() - exact.expectation_value()) <= bound + 1e-12
    assert 0.0 < bound
