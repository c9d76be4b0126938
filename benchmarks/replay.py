"""Replay benchmark: what a recorded graph buys a variational loop.

For two ansätze it prints
  * replay (one expectation value from the graph) vs one fresh propagation at the
    same parameters (target: replay >= 20x faster),
  * value+gradient vs value alone from the graph (target: <= 2.5x),
  * graph memory per recorded entry (bytes / (cos-only + rotation entries)).

Workloads:
  vqe16    16-qubit hardware-efficient ansatz, 200 parameters (Y and X rotations and
           ZZ entanglers on a ring), observable: 1D Heisenberg-like XX+YY+ZZ chain,
           cutoff 6 (so the graph has a few hundred thousand entries).
  hubbard  1D Fermi-Hubbard Hamiltonian-variational ansatz in the Majorana picture:
           hopping layers (generator i/2 (m_2p m_2q' + ...)) and on-site layers,
           observable: the Hubbard Hamiltonian, Hartree-Fock-like reference.

    OMP_NUM_THREADS=1 python benchmarks/replay.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from monoprop import (
    Circuit,
    ExpGate,
    FermiOperator,
    MajoranaPropagator,
    Pauli,
    PauliOperator,
    PauliPropagator,
)


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def vqe16(quick: bool):
    n, layers = 16, (3 if quick else 5)
    gates = []
    for _ in range(layers):
        gates += [ExpGate(PauliOperator({Pauli("Y", q): 1.0}, n)) for q in range(n)]
        gates += [ExpGate(PauliOperator({Pauli("ZZ", (q, (q + 1) % n)): 1.0}, n)) for q in range(n)]
        gates += [ExpGate(PauliOperator({Pauli("X", q): 1.0}, n)) for q in range(8)]
    terms = {}
    for q in range(n - 1):
        for p in "XYZ":
            terms[Pauli(p + p, (q, q + 1))] = 1.0
    observable = PauliOperator(terms, n)
    return (
        "vqe16",
        PauliPropagator,
        observable,
        [],
        Circuit(gates, n),
        {"cutoff": 4 if quick else 6},
    )


def hubbard(quick: bool):
    sites, steps = (4, 2) if quick else (6, 3)
    n = 2 * sites  # spin orbitals: up = 2i, down = 2i+1
    t, u = 1.0, 2.0

    def hop(p, q):
        return FermiOperator([[(p, "+"), (q, "-")], [(q, "+"), (p, "-")]], [1.0, 1.0], n)

    def onsite(i):
        return FermiOperator(
            [[(2 * i, "+"), (2 * i, "-"), (2 * i + 1, "+"), (2 * i + 1, "-")]], [1.0], n
        )

    hamiltonian_terms, coefficients = [], []
    for i in range(sites - 1):
        for s in (0, 1):
            p, q = 2 * i + s, 2 * (i + 1) + s
            hamiltonian_terms += [[(p, "+"), (q, "-")], [(q, "+"), (p, "-")]]
            coefficients += [-t, -t]
    for i in range(sites):
        hamiltonian_terms.append([(2 * i, "+"), (2 * i, "-"), (2 * i + 1, "+"), (2 * i + 1, "-")])
        coefficients.append(u)
    observable = FermiOperator(hamiltonian_terms, coefficients, n)
    gates = []
    for _ in range(steps):
        for parity in (0, 1):
            for i in range(parity, sites - 1, 2):
                for s in (0, 1):
                    gates.append(ExpGate(hop(2 * i + s, 2 * (i + 1) + s)))
        gates += [ExpGate(onsite(i)) for i in range(sites)]
    occupied = [2 * i + (i % 2) for i in range(sites)]  # one electron per site, Néel-like
    return "hubbard", MajoranaPropagator, observable, occupied, Circuit(gates, n), {"cutoff": 2 * n}


def measure(name, cls, observable, occupied, circuit, config, repeat):
    prop = cls(observable, occupied, **config)
    start = time.perf_counter()
    prop.build_graph(circuit)
    build = time.perf_counter() - start
    theta = np.random.default_rng(0).uniform(-0.3, 0.3, size=prop.n_parameters)
    bound = Circuit(list(circuit), circuit.system_size, parameters=list(theta))

    def fresh():
        p = cls(observable, occupied, **config)
        p.propagate(bound)
        return p.expectation_value()

    value_fn = prop.expectation_value_functional()
    grad_fn = prop.expectation_value_and_gradient_functional()
    assert abs(fresh() - value_fn(theta)) < 1e-9 * max(1.0, abs(fresh()))
    t_fresh = best_of(fresh, repeat)
    t_value = best_of(lambda: value_fn(theta), repeat)
    t_grad = best_of(lambda: grad_fn(theta), repeat)
    cos_only, cycles = prop.graph_size()
    graph_bytes = prop.memory()["graph"]
    entries = cos_only + cycles
    print(
        f"{name:8s} params {prop.n_parameters:4d}  layers {prop.graph_layers:5d}  "
        f"terms {prop.size():8d}  "
        f"graph entries {entries:9d}  build {build:6.3f} s"
    )
    print(
        f"{'':8s} fresh propagation {t_fresh * 1e3:9.2f} ms  replay value {t_value * 1e3:8.2f} ms  "
        f"value+grad {t_grad * 1e3:8.2f} ms"
    )
    print(
        f"{'':8s} replay speed-up vs fresh: {t_fresh / t_value:6.1f}x (target >= 20)   "
        f"value+grad / value: {t_grad / t_value:4.2f}x (target <= 2.5)   "
        f"graph bytes/entry: {graph_bytes / max(entries, 1):5.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    args = parser.parse_args()
    repeat = 3 if args.quick else 5
    for workload in (vqe16, hubbard):
        measure(*workload(args.quick), repeat)


if __name__ == "__main__":
    main()
