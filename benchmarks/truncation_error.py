"""What truncation_error costs, and how bound, estimate and actual error compare.

For a kicked-Ising chain (rx on every qubit, then exp(+i t ZZ) on every bond, per step;
observable Z in the middle, state |0...0>) it prints

  * cost: a value replay with its truncation error (``expectation_value_functional(
    with_error=True)``) against the value alone, best of several repeats, at T = 1 (the graph
    spelled out on one thread when it has at most 2^18 entries, else the per-shard sweep) and
    at T = 2 (the team's per-shard sweep); target: at most 1.15x;
  * accuracy: at two tolerances, the value, the actual error against an untruncated run of
    the same circuit, the estimate and the bound, after ``propagate``.

    python benchmarks/truncation_error.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling benchmarks

from replay import best_of  # noqa: E402

from monoprop import Circuit, ExpGate, Pauli, PauliOperator, PauliPropagator

# (workload of threads.py, its size, Trotter steps) for the accuracy rows.
WORKLOAD_SIZES = {
    "quick": [("ising", (4, 4), 3), ("tfim", (4, 4), 3), ("fh", (4,), 3)],
    "full": [("ising", (5, 5), 4), ("tfim", (4, 4), 4), ("fh", (6,), 4)],
}


def kicked_ising(n: int, steps: int, kick: float = 0.6, bond: float = 0.4) -> Circuit:
    gates, parameters = [], []
    for _ in range(steps):
        for q in range(n):
            gates.append(ExpGate(PauliOperator({Pauli("X", q): 1.0}, n)))
            parameters.append(kick)
        for q in range(n - 1):
            gates.append(ExpGate(PauliOperator({Pauli("ZZ", (q, q + 1)): 1.0}, n)))
            parameters.append(bond)
    return Circuit(gates, n, parameters=parameters)


def observable(n: int) -> PauliOperator:
    return PauliOperator({Pauli("Z", n // 2): 1.0}, n)


def cost(n: int, steps: int, atol: float, calls: int) -> None:
    circuit = kicked_ising(n, steps)
    prop = PauliPropagator(observable(n), [], cutoff=2 * n, lower_atol=atol)
    if prop.num_threads > 1:
        prop._engine._set_small_work(0)  # the team's per-shard sweep, however small the graph
    prop.build_graph(circuit)
    point = np.asarray(circuit.parameters) * 1.05
    plain = prop.expectation_value_functional()
    bounded = prop.expectation_value_functional(with_error=True)
    for fn in (plain, bounded):  # warm the replay buffers
        fn(point)
    repeat = 7
    t_plain = best_of(lambda: [plain(point) for _ in range(calls)], repeat) / calls
    t_bound = best_of(lambda: [bounded(point) for _ in range(calls)], repeat) / calls
    entries = sum(prop.graph_size())
    print(
        f"T={prop.num_threads} n={n} steps={steps} lower_atol={atol:g} entries={entries}: "
        f"value {t_plain * 1e3:.3f} ms, with error {t_bound * 1e3:.3f} ms, "
        f"ratio {t_bound / t_plain:.3f}"
    )


def accuracy(n: int, steps: int, tolerances) -> None:
    circuit = kicked_ising(n, steps)
    exact_prop = PauliPropagator(observable(n), [], cutoff=2 * n)
    exact_prop.propagate(circuit)
    exact = exact_prop.expectation_value()
    print(f"n={n} steps={steps}: untruncated value {exact:.10f}")
    for atol in tolerances:
        prop = PauliPropagator(observable(n), [], cutoff=2 * n, lower_atol=atol)
        prop.propagate(circuit)
        value = prop.expectation_value()
        error = prop.truncation_error()
        print(
            f"  lower_atol={atol:g}: value {value:.10f}, actual error {abs(value - exact):.3e}, "
            f"estimate {error.estimate:.3e}, bound {error.bound:.3e}"
        )


def workload_accuracy(name: str, size, steps: int, tolerances) -> None:
    """The benchmark workloads of ``threads.py`` after ``propagate``: actual error against a run
    at a thousandth of the smallest tolerance, estimate and bound."""
    from threads import WORKLOADS, make_propagator

    import monoprop

    wl = WORKLOADS[name](*size)
    reference_atol = min(tolerances) / 1000
    rows = []
    for atol in (reference_atol, *tolerances):
        prop, circuit = make_propagator(monoprop, wl, steps, atol)
        prop.propagate(circuit)
        rows.append((atol, prop.expectation_value(), prop.truncation_error(), prop.size()))
    _, reference, reference_error, reference_terms = rows[0]
    print(
        f"{wl['desc']}, {steps} steps: reference lower_atol={reference_atol:g} "
        f"({reference_terms} terms) value {reference:.10f} ± {reference_error.bound:.1e}"
    )
    for atol, value, error, terms in rows[1:]:
        print(
            f"  lower_atol={atol:g} ({terms} terms): value {value:.10f}, actual error "
            f"{abs(value - reference):.3e}, estimate {error.estimate:.3e}, bound {error.bound:.3e}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, steps, atol, calls = args.child
        cost(int(n), int(steps), float(atol), int(calls))
        return
    sizes = (
        [(12, 4, 1e-3, 200), (16, 6, 1e-4, 5)]
        if args.quick
        else [
            (12, 4, 1e-3, 200),
            (16, 6, 1e-4, 5),
            (20, 8, 1e-5, 1),
        ]
    )
    print("cost (each row a fresh process; the thread count is read at construction)")
    for threads in (1, 2):
        for n, steps, atol, calls in sizes:
            env = dict(os.environ, monoprop_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
            child = [str(n), str(steps), str(atol), str(calls)]
            subprocess.run([sys.executable, __file__, "--child", *child], env=env, check=True)
    print("accuracy")
    accuracy(10, 4, [1e-2, 1e-3])
    if not args.quick:
        accuracy(12, 5, [1e-3, 1e-4])
    for name, size, steps in WORKLOAD_SIZES["quick" if args.quick else "full"]:
        workload_accuracy(name, size, steps, [1e-3, 1e-4])


if __name__ == "__main__":
    main()
