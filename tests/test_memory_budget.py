"""The memory budget: a build that would outgrow it stops with a MemoryError before it
grows, and leaves the propagator as it was before the call.

The budget is the ``memory_limit`` keyword (bytes), else ``monoprop_MEMORY_LIMIT`` (bytes, read
at construction), else what the process holds plus 80% of the memory available when each
operation starts, at most 90% of the physical memory. Each test sets a limit a little above
what the process holds, then runs a circuit whose operator would grow by hundreds of megabytes.
"""

from __future__ import annotations

import ctypes
import math
import os
import re

import pytest

from monoprop import Circuit, ExpGate, Pauli, PauliOperator, PauliPropagator

N = 16
ENV = "monoprop_MEMORY_LIMIT"


def resident_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def ising_layers(steps: int) -> list[ExpGate]:
    """A tilted-field Ising chain: without truncation its operator grows to 4^16 terms."""
    gates = []
    for _ in range(steps):
        gates += [ExpGate(PauliOperator({Pauli("ZZ", (q, q + 1)): 0.4}, N)) for q in range(N - 1)]
        gates += [ExpGate(PauliOperator({Pauli("X", q): 0.7}, N)) for q in range(N)]
        gates += [ExpGate(PauliOperator({Pauli("Z", q): 0.3}, N)) for q in range(N)]
    return gates


def small_propagator(monkeypatch, headroom: int) -> PauliPropagator:
    monkeypatch.setenv(ENV, str(resident_bytes() + headroom))
    prop = PauliPropagator(PauliOperator({Pauli("Z", N // 2): 1.0}, N), [], cutoff=N)
    prop.build_graph(Circuit(ising_layers(1), N))  # a few hundred terms
    return prop


def test_a_build_past_the_budget_raises_memory_error_and_changes_nothing(monkeypatch):
    prop = small_propagator(monkeypatch, headroom=40 * 2**20)
    x = [0.1 * (k % 7) for k in range(prop.n_parameters)]
    before = (prop.size(), prop.graph_size(), prop.graph_layers, prop.n_parameters)
    value, gradient = prop.expectation_value_and_gradient(x)
    big = Circuit(ising_layers(6), N)
    with pytest.raises(MemoryError) as caught:
        prop.build_graph(big, seed_parameters=[0.3] * (prop.n_parameters + big.n_parameters))
    message = str(caught.value)
    assert re.search(r"build_graph stopped at layer \d+ of \d+", message), message
    assert re.search(r"\d+ new terms beside \d+ held", message), message
    assert ENV in message and "lower_atol" in message and "cutoff" in message, message
    assert "left as it was" in message
    # Nothing changed, and the propagator keeps working.
    assert (prop.size(), prop.graph_size(), prop.graph_layers, prop.n_parameters) == before
    value_after, gradient_after = prop.expectation_value_and_gradient(x)
    assert value_after == value and list(gradient_after) == list(gradient)
    prop.build_graph(Circuit(ising_layers(1)[:3], N))
    assert prop.graph_layers == before[2] + 3


def test_a_propagation_past_the_budget_restores_the_operator(monkeypatch):
    monkeypatch.setenv(ENV, str(resident_bytes() + 40 * 2**20))
    observable = PauliOperator({Pauli("Z", N // 2): 1.0, Pauli("X", 1): 0.5}, N)
    prop = PauliPropagator(observable, [], cutoff=N)
    first = Circuit(ising_layers(1)[:20], N, parameters=[0.3] * 20)
    prop.propagate(first)
    value, size = prop.expectation_value(), prop.size()
    evolved = prop.evolved_operator(atol=0.0)
    gates = ising_layers(6)
    with pytest.raises(MemoryError, match=r"propagate stopped at layer \d+"):
        prop.propagate(Circuit(gates, N, parameters=[0.3] * len(gates)))
    assert prop.size() == size and prop.expectation_value() == value
    assert prop.evolved_operator(atol=0.0) == evolved
    prop.propagate(Circuit(gates[:2], N, parameters=[0.2, 0.1]))  # still usable
    assert math.isfinite(prop.expectation_value())


@pytest.mark.parametrize("value", ["", "0", "-5", "1e9", "12 GB", "0x10", " 100"])
def test_bad_limits_are_refused_at_construction(value, monkeypatch):
    monkeypatch.setenv(ENV, value)
    with pytest.raises(RuntimeError, match=f"{ENV}='{re.escape(value)}' is not a byte count"):
        PauliPropagator(PauliOperator({Pauli("Z", 0): 1.0}, 2), [], cutoff=2)


# Each shard keeps a list of lookups for every shard of its rank (two, in fact), so T empty
# shards take at least 48 T^2 bytes plus about a kilobyte each: 3000 threads need 436 MB,
# 999999 threads 48 TB. Construction refuses a count that would pass the budget, before it
# allocates anything.
THREADS = "monoprop_NUM_THREADS"


def small_operator() -> PauliOperator:
    return PauliOperator({Pauli("ZZ", (0, 1)): 1.0}, 4)


def test_a_thread_count_past_the_budget_is_refused_at_construction(monkeypatch):
    held = resident_bytes()
    monkeypatch.setenv(ENV, str(held + 64 * 2**20))
    # 3000 first: without the check it would construct (436 MB), and the test fail safely.
    for threads in ("3000", "999999"):
        monkeypatch.setenv(THREADS, threads)
        with pytest.raises(MemoryError) as caught:
            PauliPropagator(small_operator(), [], cutoff=2)
        message = str(caught.value)
        assert f"{THREADS}={threads} would give this propagator {threads} shards" in message
        assert re.search(r"at least [\d.]+ [MT]B", message), message
        assert re.search(r"memory budget of [\d.]+ MB", message), message
        assert ENV in message and "fewer threads" in message, message
        assert "Nothing was allocated" in message, message
        assert resident_bytes() - held < 8 * 2**20  # nothing the size of the shards
    assert "at least 48.0 TB" in message, message


def test_the_refusal_uses_a_lower_bound_and_its_advice_fits(monkeypatch):
    # The bound the message states for 1500 threads is at most what 1500 threads take.
    monkeypatch.setenv(ENV, str(resident_bytes() + 16 * 2**20))
    monkeypatch.setenv(THREADS, "1500")
    with pytest.raises(MemoryError) as caught:
        PauliPropagator(small_operator(), [], cutoff=2)
    bound = float(re.search(r"at least ([\d.]+) MB", str(caught.value)).group(1)) * 1e6
    monkeypatch.delenv(ENV)
    # Freed heap pages that malloc kept would be reused without growing the process.
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    before = resident_bytes()
    prop = PauliPropagator(small_operator(), [], cutoff=2)
    grown = resident_bytes() - before
    assert prop.num_threads == 1500
    assert 0.9 * grown <= bound <= grown, (bound, grown)  # a lower bound, and a close one
    del prop
    # A count a little under the largest that the message says fits is built, within budget.
    held = resident_bytes()
    room = 64 * 2**20
    monkeypatch.setenv(ENV, str(held + room))
    monkeypatch.setenv(THREADS, "999999")
    with pytest.raises(MemoryError) as caught:
        PauliPropagator(small_operator(), [], cutoff=2)
    most = int(re.search(r"at most (\d+) fit here", str(caught.value)).group(1))
    assert 500 < most < 2000, most  # 64 MB: about 1160 threads
    monkeypatch.setenv(THREADS, str(int(0.9 * most)))
    prop = PauliPropagator(small_operator(), [], cutoff=2)
    assert resident_bytes() - held < room
    assert prop.expectation_value() == 1.0  # <0000|Z0 Z1|0000>


# The memory_limit keyword: bytes, over monoprop_MEMORY_LIMIT; a budget belongs to the
# machine, so copies keep it and saves do not record it.
def test_the_keyword_overrides_the_variable_and_stops_the_build(monkeypatch):
    monkeypatch.setenv(ENV, str(2**62))  # would allow everything
    limit = resident_bytes() + 40 * 2**20
    prop = PauliPropagator(
        PauliOperator({Pauli("Z", N // 2): 1.0}, N), [], cutoff=N, memory_limit=limit
    )
    assert prop.memory_limit == limit and prop._engine.memory_budget == limit
    prop.build_graph(Circuit(ising_layers(1), N))
    before = (prop.size(), prop.graph_size(), prop.graph_layers)
    big = Circuit(ising_layers(6), N)
    with pytest.raises(MemoryError) as caught:
        prop.build_graph(big, seed_parameters=[0.3] * (prop.n_parameters + big.n_parameters))
    message = str(caught.value)
    assert f"memory_limit={limit} the propagator was given" in message, message
    assert (prop.size(), prop.graph_size(), prop.graph_layers) == before


def test_the_keyword_is_kept_by_copies_and_not_saved(tmp_path):
    import copy
    import pickle

    import monoprop
    from monoprop import MajoranaOperator, MajoranaPropagator

    prop = MajoranaPropagator(
        MajoranaOperator({(0, 1): 1j}, 2), [], cutoff=4, memory_limit=3 * 10**9
    )
    assert prop.memory_limit == 3 * 10**9
    assert copy.copy(prop).memory_limit == 3 * 10**9
    assert copy.deepcopy(prop).memory_limit == 3 * 10**9
    assert copy.deepcopy(prop)._engine.memory_budget == 3 * 10**9
    assert pickle.loads(pickle.dumps(prop)).memory_limit is None
    prop.save(tmp_path / "saved")
    assert monoprop.load(tmp_path / "saved").memory_limit is None
    assert PauliPropagator(small_operator(), [], cutoff=2).memory_limit is None


@pytest.mark.parametrize(
    "value, error",
    [
        ("8000000000", TypeError),
        (8e9, TypeError),
        (True, TypeError),
        ([10], TypeError),
        (0, ValueError),
        (-5, ValueError),
        (2**64, ValueError),
    ],
)
def test_bad_keywords_are_refused_before_anything_is_built(value, error):
    for make in (
        lambda: PauliPropagator(small_operator(), [], cutoff=2, memory_limit=value),
        lambda: __import__("monoprop").MajoranaPropagator(
            __import__("monoprop").MajoranaOperator({(0, 1): 1j}, 2),
            [],
            cutoff=4,
            memory_limit=value,
        ),
    ):
        with pytest.raises(error) as caught:
            make()
        message = str(caught.value)
        assert f"memory_limit={value!r}" in message or f"got {value!r}" in message, message
        assert "memory_limit" in message and "bytes" in message, message


# The default, without the keyword or the variable: when an operation starts, what the
# process holds plus 80% of the memory available then, at most 90% of the physical memory.
def available_bytes() -> int:
    with open("/proc/meminfo") as fh:
        fields = dict(line.split(":", 1) for line in fh)
    available = int(fields["MemAvailable"].split()[0]) * 1024
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            cap = fh.read().strip()
        if cap != "max":
            with open("/sys/fs/cgroup/memory.current") as fh:
                current = int(fh.read())
            with open("/sys/fs/cgroup/memory.stat") as fh:
                stat = dict(line.split() for line in fh)
            available = min(available, int(cap) - (current - int(stat["inactive_file"])))
    except FileNotFoundError:
        pass
    return available


def default_budget_now(prop: PauliPropagator) -> tuple[int, int, int]:
    """(low, budget, high): the budget an operation set, between what the readings before
    and after it allow."""
    low = resident_bytes() + 0.8 * available_bytes()
    prop.propagate(Circuit([ExpGate(PauliOperator({Pauli("X", 0): 1.0}, 4))], 4, parameters=[0.1]))
    budget = prop._engine.memory_budget
    high = resident_bytes() + 0.8 * available_bytes()
    return min(low, high), budget, max(low, high)


def test_the_default_follows_the_available_memory(monkeypatch):
    import subprocess
    import sys

    monkeypatch.delenv(ENV, raising=False)
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    prop = PauliPropagator(small_operator(), [], cutoff=4)
    low, budget, high = default_budget_now(prop)
    slack = 64 * 2**20  # page cache and other processes move a little between readings
    assert low - slack <= budget <= high + slack
    assert budget <= 0.9 * total
    # Memory another process holds is not available: the budget drops by about 80% of it.
    hog = min(2 * 2**30, available_bytes() // 4)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys; b = bytearray({hog}); b[::4096] = b'x' * len(b[::4096]); "
            "print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "held"
        low_held, budget_held, high_held = default_budget_now(prop)
    finally:
        child.communicate("")
    assert low_held - slack <= budget_held <= high_held + slack
    assert budget_held < budget - 0.5 * hog, (budget, budget_held, hog)
