"""The sharded OpenMP runtime.

A propagator splits its operator into T shards, one per OpenMP thread, and runs every
operation on one team of T threads; T is the thread budget read once from
``monoprop_NUM_THREADS`` at construction. Results agree across T to rounding, and a fixed T
is bitwise reproducible. This file checks:

1. parsing of ``monoprop_NUM_THREADS`` (each case in a fresh interpreter): decimal digits
   for 1..2147483647 with leading zeros allowed, the OpenMP default when unset, a
   ``RuntimeError`` naming the variable for anything else; ``monoprop_PARTITIONS`` is never
   read; copies and functionals keep their T; there is no thread/shard keyword;
2. shard equivalence: for T = 1..4 on random Pauli and Majorana circuits, in both pictures,
   exact and truncating, the decoded evolved operator, value, gradient, sizes, one-shot
   ``propagate``, seeded builds, ``contract_partially`` and ``update_initial_operator``
   agree with T = 1, and T = 1 agrees with the dense reference;
3. bitwise determinism of value and gradient for T = 3, 4;
4. the raw layout accessors ``mp_op``/``indexing``/``graph``/``graph_data``: layout and
   read-only views with T = 1 (checked against hand-derived terms and rotations),
   ``MultiShardUnsupported`` with T = 2, ``InvalidPropagatorError`` first when invalid.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import textwrap

import dense_reference as dr
import numpy as np
import pytest
from test_random_circuits import check_terms, circuit, dense_terms, operator, plain_terms

import monoprop
from monoprop import (
    Circuit,
    ExpGate,
    InvalidPropagatorError,
    MajoranaOperator,
    MajoranaPropagator,
    Pauli,
    PauliOperator,
    PauliPropagator,
)

ENV = "monoprop_NUM_THREADS"
INT_MAX = 2147483647
EMPTY_SLOT = 0xFFFFFFFF

# ---------------------------------------------------------------------------------------
# 1. Parsing monoprop_NUM_THREADS, one fresh interpreter per case
# ---------------------------------------------------------------------------------------

# The directory the imported monoprop package lives in (the repo root for the dev build,
# site-packages for an installed one): the child interpreters import the same package.
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(monoprop.__file__)))

# Importing monoprop imports qiskit when it is installed (about a second per child);
# a None entry in sys.modules makes find_spec("qiskit") report it absent.
SKIP_QISKIT = "import sys\nsys.modules['qiskit'] = None\n"

CONSTRUCT = """
import json
import monoprop
from monoprop import _core

result = {}
try:
    result["budget"] = _core.thread_budget_from_environment()
except Exception as error:
    result["budget_error"] = type(error).__name__
    result["budget_message"] = str(error)
prop = None
try:
    prop = monoprop.PauliPropagator(monoprop.PauliOperator({"ZZ": 1.0}, 2), [], cutoff=4)
except Exception as error:
    result["error"] = type(error).__name__
    result["message"] = str(error)
else:
    result["num_threads"] = prop.num_threads
    result["value"] = prop.expectation_value()
result["created"] = prop is not None
print(json.dumps(result))
"""


def run_python(code: str, **env: str | None) -> dict:
    """Run ``code`` in a fresh interpreter and return the JSON it printed last.

    The child gets OMP_NUM_THREADS=1 and no monoprop_* thread variables unless ``env``
    sets them (a value of None removes the variable).
    """
    child_env = dict(os.environ)
    for name in (ENV, "monoprop_PARTITIONS"):
        child_env.pop(name, None)
    child_env["OMP_NUM_THREADS"] = "1"
    paths = [PACKAGE_PARENT] + [p for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p]
    child_env["PYTHONPATH"] = os.pathsep.join(paths)
    for name, value in env.items():
        if value is None:
            child_env.pop(name, None)
        else:
            child_env[name] = value
    done = subprocess.run(
        [sys.executable, "-c", SKIP_QISKIT + textwrap.dedent(code)],
        env=child_env,
        cwd=PACKAGE_PARENT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"child failed ({done.returncode}):\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("value", "expected"), [("1", 1), ("2", 2), ("08", 8), ("0002", 2), ("3", 3)]
)
def test_valid_thread_counts_are_used(value, expected):
    result = run_python(CONSTRUCT, **{ENV: value})
    assert result.get("error") is None, result
    assert result["num_threads"] == expected, result
    assert result["budget"] == expected, result
    assert result["value"] == 1.0, result  # <00|ZZ|00>


def test_unset_uses_the_openmp_default():
    # 3 is neither the core count of a 2-core machine nor 1.
    result = run_python(CONSTRUCT, **{ENV: None, "OMP_NUM_THREADS": "3"})
    assert result.get("error") is None, result
    assert result["num_threads"] == 3, result


INVALID = [
    "",
    "+4",
    "-4",
    " 4",
    "4 ",
    "4,4",
    "0",
    "00",
    "0x4",
    "4a",
    "abc",
    "2147483648",
    "9" * 20,
]


@pytest.mark.parametrize("value", INVALID, ids=repr)
def test_invalid_thread_counts_are_refused(value):
    result = run_python(CONSTRUCT, **{ENV: value})
    assert result["created"] is False, result
    assert result.get("error") == "RuntimeError", result
    assert ENV in result["message"], result
    # The module-level parser refuses it the same way (no fallback).
    assert result.get("budget_error") == "RuntimeError", result
    assert ENV in result["budget_message"], result


@pytest.mark.parametrize("value", ["2147483647", "0002147483647"])
def test_the_largest_count_parses(value):
    # Parsed only: a propagator with so many shards is refused (the next test).
    code = """
    import json
    from monoprop import _core
    print(json.dumps({"budget": _core.thread_budget_from_environment()}))
    """
    assert run_python(code, **{ENV: value}) == {"budget": INT_MAX}


# The child caps its address space 2 GB above what it maps: without the check, a construction
# would fail on that cap (a MemoryError without the message) instead of growing the machine
# to its end.
CAPPED = """
import json
import os
import resource

import monoprop


def resident():
    page = os.sysconf("SC_PAGE_SIZE")
    with open("/proc/self/statm") as fh:
        size, resident = fh.read().split()[:2]
    return int(size) * page, int(resident) * page


mapped, before = resident()
resource.setrlimit(resource.RLIMIT_AS, (mapped + 2 * 2**30, resource.RLIM_INFINITY))
result = {}
try:
    monoprop.PauliPropagator(monoprop.PauliOperator({"ZZ": 1.0}, 2), [], cutoff=4)
except Exception as error:
    result["error"] = type(error).__name__
    result["message"] = str(error)
result["grown"] = resident()[1] - before
print(json.dumps(result))
"""


@pytest.mark.parametrize("value", ["999999", "2147483647"])
def test_a_count_whose_shards_cannot_fit_is_refused_at_construction(value):
    # Inside the documented range, but 999999 shards would take 48 TB: refused with a
    # MemoryError before any shard or thread exists, naming T, the budget and the remedy.
    result = run_python(CAPPED, **{ENV: value})
    assert result.get("error") == "MemoryError", result
    message = result["message"]
    assert f"{ENV}={value} would give this propagator {value} shards" in message, message
    assert "memory budget" in message and "monoprop_MEMORY_LIMIT" in message, message
    assert "fewer threads" in message and "at most" in message, message
    assert result["grown"] < 16 * 2**20, result


@pytest.mark.parametrize("partitions", ["x", "4"])
def test_monoprop_partitions_is_never_read(partitions):
    result = run_python(CONSTRUCT, **{ENV: "2", "monoprop_PARTITIONS": partitions})
    assert result.get("error") is None, result
    assert result["num_threads"] == 2, result


COPIES = """
import copy
import json
import os

from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator


def make():
    prop = PauliPropagator(PauliOperator({"ZZ": 1.0, "XI": 0.5}, 2), [1], cutoff=4)
    gates = [ExpGate(PauliOperator({"XI": 1.0}, 2)), ExpGate(PauliOperator({"YZ": 0.7}, 2))]
    prop.build_graph(Circuit(gates, 2))
    return prop


x = [0.4, -1.1]
os.environ["monoprop_NUM_THREADS"] = "2"
first = make()
value_fn = first.expectation_value_functional()
grad_fn = first.expectation_value_and_gradient_functional()
os.environ["monoprop_NUM_THREADS"] = "3"
later = make()
shallow, deep = copy.copy(first), copy.deepcopy(first)
# T was read at construction: copies and functionals never read the variable again.
os.environ["monoprop_NUM_THREADS"] = "abc"
shallow_bad, deep_bad = copy.copy(first), copy.deepcopy(first)
try:
    make()
    refused = None
except RuntimeError as error:
    refused = str(error)
fn_value, fn_grad = grad_fn(x)
print(json.dumps({
    "threads": {
        "first": first.num_threads, "later": later.num_threads,
        "shallow": shallow.num_threads, "deep": deep.num_threads,
        "shallow_bad": shallow_bad.num_threads, "deep_bad": deep_bad.num_threads,
    },
    "values": {
        "first": first.expectation_value(x), "value_fn": value_fn(x), "grad_fn": fn_value,
        "later": later.expectation_value(x), "deep_bad": deep_bad.expectation_value(x),
    },
    "gradient": fn_grad.tolist(),
    "refused": refused,
}))
"""


def test_copies_and_functionals_keep_their_thread_count():
    result = run_python(COPIES)
    assert result["threads"] == {
        "first": 2,
        "later": 3,
        "shallow": 2,
        "deep": 2,
        "shallow_bad": 2,
        "deep_bad": 2,
    }
    observable = dr.pauli_operator_matrix({"ZZ": 1.0, "XI": 0.5}, 2)
    generators = [dr.pauli_operator_matrix(g, 2) for g in ({"XI": 1.0}, {"YZ": 0.7})]
    x = [0.4, -1.1]
    expected = dr.circuit_expectation(observable, [1], 2, generators, x)
    for name, value in result["values"].items():
        assert abs(value - expected) < 1e-10, (name, value, expected)
    assert result["values"]["value_fn"] == result["values"]["first"]
    gradient = dr.circuit_gradient(observable, [1], 2, generators, x)
    np.testing.assert_allclose(result["gradient"], gradient, rtol=0, atol=1e-10)
    assert result["refused"] is not None and ENV in result["refused"]


@pytest.mark.parametrize("keyword", ["num_threads", "shards", "partitions"])
@pytest.mark.parametrize("cls", [PauliPropagator, MajoranaPropagator])
def test_there_is_no_thread_or_shard_keyword(cls, keyword):
    observable = (
        PauliOperator({"ZZ": 1.0}, 2)
        if cls is PauliPropagator
        else MajoranaOperator({(0, 1): 1j}, 2)
    )
    with pytest.raises(TypeError):
        cls(observable, [], cutoff=4, **{keyword: 2})


# ---------------------------------------------------------------------------------------
# 2. Shard equivalence: T = 2, 3, 4 against T = 1 (and T = 1 against dense)
# ---------------------------------------------------------------------------------------

# Each seed runs one truncation mode (see shard_config), four seeds per mode.
SHARD_CASES = [(seed, ("exact", "cutoff", "seeded")[seed % 3]) for seed in range(12)]
THREADS = (1, 2, 3, 4)
SHARD_ATOL = 1e-12
# evolved_operator rounds to 12 decimals: a difference of 1e-16 can straddle a rounding
# boundary and show up as one unit of 1e-12.
ROUNDED_ATOL = 2e-12


def shard_case(family: str, seed: int) -> dr.RandomCase:
    return dr.random_case(20_000 + seed, family, 4 + seed % 2, num_gates=8, shared_parameters=True)


def shard_config(case: dr.RandomCase, picture: str, mode: str) -> dict:
    """Constructor keywords. ``exact``: no truncation; ``cutoff``: a truncating cutoff (and
    only_rotate_len_k=n+1 when building); ``seeded``: the same cutoff with lower/upper_atol and
    a seeded, coefficient-informed build."""
    n = case.n
    if mode == "exact":
        cutoff, schrodinger_cutoff = 2 * n, 2 * n
    elif case.family == "pauli":
        cutoff, schrodinger_cutoff = 3, 4
    else:
        cutoff, schrodinger_cutoff = n, n + 2
    config = {"cutoff": cutoff}
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = schrodinger_cutoff
    if mode == "seeded":
        config.update(lower_atol=1e-2, upper_atol=0.5)
    return config


def updated_observable(case: dr.RandomCase) -> dict:
    """The observable's terms with new real scale factors, the last term left out (so it
    becomes 0 in Heisenberg)."""
    terms = list(case.observable.items())
    kept = terms[:-1] if len(terms) > 1 else terms
    return {key: value * (k + 2) * (-1) ** k / 3 for k, (key, value) in enumerate(kept)}


def shard_snapshot(case, picture: str, mode: str, fresh, threads: int, monkeypatch) -> dict:
    """Everything the shard count must not change, computed with T = ``threads`` (``fresh``:
    a parameter point other than the circuit's own)."""
    monkeypatch.setenv(ENV, str(threads))
    cls = PauliPropagator if case.family == "pauli" else MajoranaPropagator
    config = shard_config(case, picture, mode)
    only_rotate = {"only_rotate_len_k": case.n + 1} if mode == "cutoff" else {}
    seed_point = np.array(case.parameters)

    prop = cls(operator(case, case.observable), list(case.occupied), **config)
    assert prop.num_threads == threads
    prop._engine._set_small_work(0)  # replays on the whole team, however small
    unbound = circuit(case, bound=False)
    if mode == "seeded":
        prop.build_graph(unbound, seed_parameters=seed_point)
    else:
        prop.build_graph(unbound, **only_rotate)
    snap: dict = {
        "size": prop.size(),
        "graph_size": prop.graph_size(),
        "graph_layers": prop.graph_layers,
        "n_parameters": prop.n_parameters,
        "seed_value_and_gradient": prop.expectation_value_and_gradient(seed_point),
        "value_and_gradient": prop.expectation_value_and_gradient(fresh),
        "value": prop.expectation_value(fresh),
        "evolved": plain_terms(case, prop.evolved_operator(fresh, atol=0.0)),
    }
    snap["contracted"] = np.sort(prop.contract_partially(fresh, inplace=False))
    prop.update_initial_operator(operator(case, updated_observable(case)))
    snap["updated_value"] = prop.expectation_value(fresh)

    one_shot = cls(operator(case, case.observable), list(case.occupied), **config)
    one_shot.propagate(circuit(case), **only_rotate)
    snap["propagated"] = {
        "value": one_shot.expectation_value(),
        "size": one_shot.size(),
        "evolved": plain_terms(case, one_shot.evolved_operator(atol=0.0)),
    }
    return snap


def assert_same_terms(actual: dict, expected: dict, context: str) -> None:
    only_here, only_there = set(actual) - set(expected), set(expected) - set(actual)
    assert not only_here and not only_there, (
        f"{context}: extra terms {sorted(map(str, only_here))[:5]}, "
        f"missing terms {sorted(map(str, only_there))[:5]}"
    )
    worst, key = dr.max_coefficient_difference(actual, expected)
    assert worst <= ROUNDED_ATOL, f"{context}: {key!r} {actual[key]!r} vs {expected[key]!r}"


def assert_close(actual, expected, context: str) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{context}: shape {actual.shape} vs {expected.shape}"
    if actual.size:
        worst = float(np.max(np.abs(actual - expected)))
        assert worst <= SHARD_ATOL, f"{context}: differs by {worst:.3e}"


def compare_snapshots(snap: dict, ref: dict, context: str) -> None:
    for name in ("size", "graph_size", "graph_layers", "n_parameters"):
        assert snap[name] == ref[name], f"{context}: {name} {snap[name]} vs T=1 {ref[name]}"
    for name in ("seed_value_and_gradient", "value_and_gradient"):
        value, gradient = snap[name]
        assert_close(value, ref[name][0], f"{context}: {name} (value)")
        assert_close(gradient, ref[name][1], f"{context}: {name} (gradient)")
    assert_close(snap["value"], ref["value"], f"{context}: expectation_value")
    assert_same_terms(snap["evolved"], ref["evolved"], f"{context}: evolved_operator")
    assert_close(snap["contracted"], ref["contracted"], f"{context}: contract_partially")
    assert_close(snap["updated_value"], ref["updated_value"], f"{context}: after update")
    one_shot, ref_one_shot = snap["propagated"], ref["propagated"]
    assert one_shot["size"] == ref_one_shot["size"], f"{context}: propagate size"
    assert_close(one_shot["value"], ref_one_shot["value"], f"{context}: propagate value")
    assert_same_terms(one_shot["evolved"], ref_one_shot["evolved"], f"{context}: propagate")


def check_against_dense(case, picture: str, x, snap: dict, context: str) -> None:
    """T = 1 without truncation reproduces the dense reference (value, gradient, terms)."""
    value, gradient = snap["value_and_gradient"]
    assert abs(value - case.expectation(x)) <= 1e-10, context
    np.testing.assert_allclose(gradient, case.exact_gradient(x), rtol=0, atol=1e-9, err_msg=context)
    check_terms(snap["evolved"], dense_terms(case, picture, x), f"{context} dense")
    check_terms(snap["propagated"]["evolved"], dense_terms(case, picture), f"{context} dense")


@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize(
    ("seed", "mode"), SHARD_CASES, ids=[f"seed={s}-{m}" for s, m in SHARD_CASES]
)
@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_shard_count_does_not_change_results(family, seed, picture, mode, monkeypatch):
    case = shard_case(family, seed)
    context = f"{family} seed={seed} n={case.n} {picture} {mode}"
    fresh = np.random.default_rng(seed).uniform(-1.5, 1.5, size=len(case.parameters))
    snapshots = {t: shard_snapshot(case, picture, mode, fresh, t, monkeypatch) for t in THREADS}
    if mode == "exact":
        check_against_dense(case, picture, fresh, snapshots[1], f"{context} T=1")
    for threads in THREADS[1:]:
        compare_snapshots(snapshots[threads], snapshots[1], f"{context} T={threads}")


@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_seeded_extension_does_not_depend_on_shards(family, picture, monkeypatch):
    # The extension replays the existing graph at the seed first, across shards.
    case = shard_case(family, 3)
    config = shard_config(case, picture, "seeded")
    gates = [ExpGate(operator(case, generator)) for generator in case.generators]  # own angles
    first = Circuit(gates[:5], case.n, initial_state=list(case.occupied))
    second = Circuit(gates[5:], case.n, initial_state=list(case.occupied))
    rng = np.random.default_rng(3)
    results = {}
    for threads in THREADS:
        monkeypatch.setenv(ENV, str(threads))
        cls = PauliPropagator if family == "pauli" else MajoranaPropagator
        prop = cls(operator(case, case.observable), list(case.occupied), **config)
        prop._engine._set_small_work(0)
        prop.build_graph(first, seed_parameters=rng.uniform(-1.5, 1.5, size=first.n_parameters))
        seed = rng.uniform(-1.5, 1.5, size=prop.n_parameters + second.n_parameters)
        prop.build_graph(second, seed_parameters=seed)
        value, gradient = prop.expectation_value_and_gradient(seed)
        results[threads] = (prop.size(), prop.graph_size(), value, gradient)
        rng = np.random.default_rng(3)
    for threads in THREADS[1:]:
        size, graph_size, value, gradient = results[threads]
        assert (size, graph_size) == results[1][:2], f"T={threads}"
        assert_close(value, results[1][2], f"T={threads} value")
        assert_close(gradient, results[1][3], f"T={threads} gradient")


# ---------------------------------------------------------------------------------------
# 3. Bitwise determinism for T > 1
# ---------------------------------------------------------------------------------------


def ising_propagator(picture: str) -> PauliPropagator:
    """10 qubits, four layers of ZZ/X/Y rotations: thousands of terms at cutoff 4."""
    n = 10

    def on(letters: str, *qubits: int) -> PauliOperator:
        return PauliOperator({Pauli(letters, qubits): 1.0}, n)

    gates = []
    for _layer in range(4):
        gates += [ExpGate(on("ZZ", q, q + 1)) for q in range(n - 1)]
        gates += [ExpGate(on("X", q)) for q in range(n)]
        gates += [ExpGate(on("Y", q)) for q in range(0, n, 2)]
    observable = {Pauli("ZZ", (q, q + 1)): 1.0 for q in range(n - 1)}
    observable.update({Pauli("X", q): 0.5 for q in range(n)})
    config = {"cutoff": 4}
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = 5
    prop = PauliPropagator(PauliOperator(observable, n), [1, 4, 7], **config)
    prop.build_graph(Circuit(gates, n))
    return prop


@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize("threads", [3, 4])
def test_value_and_gradient_are_bitwise_reproducible(threads, picture, monkeypatch):
    monkeypatch.setenv(ENV, str(threads))
    first, second = ising_propagator(picture), ising_propagator(picture)
    assert first.num_threads == second.num_threads == threads
    assert first.size() > 100 * threads  # enough terms for every shard
    x = np.random.default_rng(threads).uniform(-1.0, 1.0, size=first.n_parameters)
    results = [prop.expectation_value_and_gradient(x) for prop in (first, first, second, second)]
    # A replay on the calling thread alone works every shard with the same arithmetic.
    second._engine._set_small_work(0)  # the whole team
    first._engine._set_small_work(2**62)  # the calling thread
    results += [prop.expectation_value_and_gradient(x) for prop in (first, second)]
    value, gradient = results[0]
    assert np.any(gradient != 0.0)
    for other_value, other_gradient in results[1:]:
        assert other_value == value
        assert np.array_equal(other_gradient, gradient)


@pytest.mark.parametrize("threads", [1, 3])
def test_calling_thread_replay_follows_graph_appends(threads, monkeypatch):
    """A small graph replayed on the calling thread is spelled out once and reused; after the
    graph grows it must replay the grown graph, bitwise as the whole team does."""
    monkeypatch.setenv(ENV, str(threads))
    alone, team = ising_propagator("heisenberg"), ising_propagator("heisenberg")
    alone._engine._set_small_work(2**62)
    team._engine._set_small_work(0)
    rng = np.random.default_rng(7)

    def agree(n_parameters: int) -> None:
        x = rng.uniform(-1.0, 1.0, size=n_parameters)
        value, gradient = alone.expectation_value_and_gradient(x)
        team_value, team_gradient = team.expectation_value_and_gradient(x)
        assert value == team_value
        assert np.array_equal(gradient, team_gradient)
        assert alone.expectation_value(x) == team.expectation_value(x) == value

    agree(alone.n_parameters)
    hops = [PauliOperator({Pauli("XY", (q, q + 1)): 1.0}, 10) for q in range(9)]
    extra = Circuit([ExpGate(hop) for hop in hops], 10)
    for prop in (alone, team):
        prop.build_graph(extra)
    agree(alone.n_parameters)


# ---------------------------------------------------------------------------------------
# 4. Raw layout accessors
# ---------------------------------------------------------------------------------------

ACCESSORS = ("mp_op", "indexing", "graph", "graph_data")
PAULI_LETTER = {(1, 0): "X", (0, 1): "Y", (1, 1): "Z"}


def key_slots(words: np.ndarray) -> list[int]:
    """Set slots of one key: word w holds slots 64w .. 64w+63, slot s at bit s & 63."""
    return [64 * w + b for w, word in enumerate(words.tolist()) for b in range(64) if word >> b & 1]


def pauli_string(slots: list[int], n: int) -> str:
    """Full-width Pauli string of a Pauli-encoded key (qubit q: bit 2q = x, 2q+1 = z)."""
    present = set(slots)
    letters = ["I"] * n
    for q in {s // 2 for s in slots}:
        letters[q] = PAULI_LETTER[(int(2 * q in present), int(2 * q + 1 in present))]
    return "".join(letters)


def pauli(n: int, *names: str) -> str:
    """Full-width string from names like 'Z30', 'X33'."""
    out = ["I"] * n
    for name in names:
        out[int(name[1:])] = name[0]
    return "".join(out)


def assert_read_only(arrays: dict, context: str) -> None:
    for name, array in arrays.items():
        assert isinstance(array, np.ndarray), f"{context}[{name!r}] is {type(array).__name__}"
        assert array.flags.writeable is False, f"{context}[{name!r}] is writeable"
        with pytest.raises(ValueError):
            array[...] = 0


def decoded_mp_op(prop: PauliPropagator) -> tuple[list[str], dict]:
    """Checks mp_op's layout and returns (string of each row, {string: coefficient})."""
    op = prop.mp_op()
    assert set(op) == {"keys", "lengths", "coefficients"}
    keys, lengths, coefficients = op["keys"], op["lengths"], op["coefficients"]
    assert keys.dtype == np.uint64 and keys.ndim == 2 and keys.shape[1] * 64 >= 2 * prop.num_qubits
    rows = keys.shape[0]
    assert lengths.dtype == np.uint16 and lengths.shape == (rows,)
    assert coefficients.dtype == np.float64 and coefficients.shape == (rows,)
    assert_read_only(op, "mp_op()")
    slots = [key_slots(key) for key in keys]
    assert lengths.tolist() == [len(s) for s in slots]  # popcount of the key
    strings = [pauli_string(s, prop.num_qubits) for s in slots]
    assert len(set(strings)) == rows, "a term is stored twice"
    return strings, dict(zip(strings, coefficients.tolist(), strict=True))


def check_indexing(prop, rows: int) -> None:
    index = prop.indexing()
    assert set(index) == {"tag", "slot"}
    tag, slot = index["tag"], index["slot"]
    assert tag.dtype == np.uint32 and slot.dtype == np.uint32
    assert tag.ndim == 1 and tag.shape == slot.shape and slot.shape[0] >= rows
    assert_read_only(index, "indexing()")
    used = slot[slot != EMPTY_SLOT]
    assert sorted(used.tolist()) == list(range(rows))


# The accessor propagator: 36 qubits so that keys span two words (qubit 32 = slots 64, 65).
N_WIDE = 36
WIDE_OBSERVABLE = {
    pauli(N_WIDE, "Z30", "Z31"): 1.0,
    pauli(N_WIDE, "X33"): 0.5,
    pauli(N_WIDE, "Z31", "Z32"): 0.25,
}
# (generator names, coefficient, parameter index) in circuit (application) order.
WIDE_GATES = [
    (("X32",), -0.9, 0),
    (("Z33",), 1.1, 1),
    (("X31", "X32"), -0.6, 0),
    (("X30",), 0.3, 2),
]


def wide_propagator(threads: int, monkeypatch) -> PauliPropagator:
    """Heisenberg, cutoff 2 (weight), the graph built structurally."""
    monkeypatch.setenv(ENV, str(threads))
    prop = PauliPropagator(PauliOperator(WIDE_OBSERVABLE, N_WIDE), [], cutoff=2)
    assert prop.num_threads == threads
    return prop


def wide_circuit() -> Circuit:
    gates = [
        ExpGate(PauliOperator({pauli(N_WIDE, *names): h}, N_WIDE), index)
        for names, h, index in WIDE_GATES
    ]
    return Circuit(gates, N_WIDE)


def test_mp_op_and_indexing_before_any_graph(monkeypatch):
    prop = wide_propagator(1, monkeypatch)
    strings, terms = decoded_mp_op(prop)
    assert terms == WIDE_OBSERVABLE  # Hermitian basis = Pauli coefficients
    assert len(strings) == prop.size()
    evolved = dr.pauli_terms_to_strings(prop.evolved_operator(atol=0.0).terms, N_WIDE)
    evolved.pop("I" * N_WIDE, None)  # the identity core term is not in the store
    assert evolved == terms
    check_indexing(prop, len(strings))


def test_majorana_mp_op_holds_hermitian_basis_coefficients(monkeypatch):
    monkeypatch.setenv(ENV, "1")
    h = {(0, 1): 1.0, (10, 70): -0.25, (62, 63, 64, 65): 0.5, (1, 2, 60, 63, 64, 79): 0.75}
    bare = {key: value * dr.hermitian_phase(len(key)) for key, value in h.items()}
    prop = MajoranaPropagator(MajoranaOperator(bare, 40), [3], cutoff=4)
    op = prop.mp_op()
    assert op["keys"].dtype == np.uint64 and op["keys"].shape[1] * 64 >= 80
    assert_read_only(op, "mp_op()")
    slots = [tuple(key_slots(key)) for key in op["keys"]]
    assert op["lengths"].tolist() == [len(s) for s in slots]
    assert dict(zip(slots, op["coefficients"].tolist(), strict=True)) == h
    check_indexing(prop, len(slots))


# Heisenberg applies WIDE_GATES last to first. Hand-derived, per layer (cutoff 2):
#   X30:     Z30Z31 -> partner Y30Z31 (kept)
#   X31X32:  Z30Z31 and Y30Z31 anticommute, partners of weight 3 dropped: cos only
#   Z33:     X33 -> partner Y33 (kept)
#   X32:     Z31Z32 -> partner Z31Y32 (kept; the key spans words 0 and 1)
EXPECTED_PAIRS = [
    {frozenset({pauli(N_WIDE, "Z30", "Z31"), pauli(N_WIDE, "Y30", "Z31")})},
    set(),
    {frozenset({pauli(N_WIDE, "X33"), pauli(N_WIDE, "Y33")})},
    {frozenset({pauli(N_WIDE, "Z31", "Z32"), pauli(N_WIDE, "Z31", "Y32")})},
]
EXPECTED_COS_ONLY = [
    set(),
    {pauli(N_WIDE, "Z30", "Z31"), pauli(N_WIDE, "Y30", "Z31")},
    set(),
    set(),
]


def test_graph_and_graph_data_describe_the_recorded_layers(monkeypatch):
    prop = wide_propagator(1, monkeypatch)
    prop.build_graph(wide_circuit())
    assert prop.graph_size() == (2, 3)

    strings, terms = decoded_mp_op(prop)
    # The store holds the new partners too; a replay starts from the observable.
    partners = {term for layer in EXPECTED_PAIRS for pair in layer for term in pair}
    held = {term: WIDE_OBSERVABLE.get(term, 0.0) for term in partners | set(WIDE_OBSERVABLE)}
    assert terms == held
    assert len(strings) == prop.size() == 6
    check_indexing(prop, len(strings))

    layers = prop.graph()
    assert isinstance(layers, list) and len(layers) == prop.graph_layers == 4
    for i, layer in enumerate(layers):
        assert set(layer) == {"pairs", "pair_signs", "halves", "half_signs", "cos_only"}
        pairs, halves, cos_only = layer["pairs"], layer["halves"], layer["cos_only"]
        for name in ("pairs", "halves", "cos_only"):
            assert layer[name].dtype == np.uint32, (i, name)
        for name in ("pair_signs", "half_signs"):
            assert layer[name].dtype == np.int8, (i, name)
        assert pairs.ndim == 2 and pairs.shape[1] == 2 and cos_only.ndim == 1
        assert halves.ndim == 2 and halves.shape[1] == 2
        assert layer["pair_signs"].shape == (len(pairs),)
        assert layer["half_signs"].shape == (len(halves),)
        assert set(layer["pair_signs"].tolist()) <= {-1, 1}
        assert set(layer["half_signs"].tolist()) <= {-1, 1}
        assert_read_only(layer, f"graph()[{i}]")
        # Each entry names store rows: decode them and compare with the hand derivation.
        assert {frozenset(strings[s] for s in pair) for pair in pairs.tolist()} == EXPECTED_PAIRS[i]
        assert {strings[s] for s in cos_only.tolist()} == EXPECTED_COS_ONLY[i]
    n_cos = sum(len(layer["cos_only"]) for layer in layers)
    n_rotations = sum(len(layer["pairs"]) + len(layer["halves"]) for layer in layers)
    assert (n_cos, n_rotations) == prop.graph_size()
    assert all(len(layer["halves"]) == 0 for layer in layers)  # no only_rotate_len_k

    data = prop.graph_data()
    assert set(data) == {"parameter", "gate", "frequency"}
    assert data["parameter"].dtype == np.int32 and data["gate"].dtype == np.int32
    assert data["frequency"].dtype == np.float64
    assert all(array.shape == (4,) for array in data.values())
    assert_read_only(data, "graph_data()")
    circuit_order = [index for _, _, index in WIDE_GATES]
    assert data["parameter"][::-1].tolist() == prop.parameter_mapping == circuit_order
    assert sorted(data["gate"].tolist()) == [0, 1, 2, 3]  # one layer per gate
    frequencies = [2 * h for _, h, _ in reversed(WIDE_GATES)]  # Heisenberg: f = 2h
    np.testing.assert_allclose(data["frequency"], frequencies, rtol=0, atol=1e-15)


def test_accessors_without_a_graph(monkeypatch):
    prop = wide_propagator(1, monkeypatch)
    assert prop.graph() == []
    data = prop.graph_data()
    assert all(array.shape == (0,) for array in data.values())


def test_accessors_refuse_several_shards_and_change_nothing(monkeypatch):
    assert issubclass(monoprop.MultiShardUnsupported, RuntimeError)
    prop = wide_propagator(2, monkeypatch)
    prop.build_graph(wide_circuit())
    x = [0.3, -0.7, 1.2]
    value, size, graph_size = prop.expectation_value(x), prop.size(), prop.graph_size()
    for name in ACCESSORS:
        with pytest.raises(monoprop.MultiShardUnsupported, match=re.escape(f"{ENV}=1")):
            getattr(prop, name)()
    assert prop.expectation_value(x) == value
    assert (prop.size(), prop.graph_size()) == (size, graph_size)
    prop.build_graph(Circuit([ExpGate(PauliOperator({pauli(N_WIDE, "Y0"): 1.0}, N_WIDE))], N_WIDE))
    assert prop.graph_layers == 5


@pytest.mark.parametrize("threads", [1, 2])
def test_an_invalid_propagator_reports_that_first(threads, monkeypatch):
    prop = wide_propagator(threads, monkeypatch)
    prop.build_graph(wide_circuit())
    shallow = copy.copy(prop)
    prop._engine._inject_fault("evaluate")
    with pytest.raises(RuntimeError, match="injected fault"):
        prop.expectation_value([0.3, -0.7, 1.2])
    for target in (prop, shallow):
        for name in ACCESSORS:
            with pytest.raises(InvalidPropagatorError) as caught:
                getattr(target, name)()
            assert not isinstance(caught.value, monoprop.MultiShardUnsupported)
