"""ADAPT-VQE for the 1D transverse-field Ising model
==================================================

``H = -J sum_i Z_i Z_{i+1} - h sum_i X_i`` on an open chain, from the reference state
``|0...0>``. ADAPT grows the circuit one gate at a time: each round it scores every generator
P of a pool (``Y_i`` on every site; ``X_i Y_j``, ``Y_i X_j``, ``Z_i Y_j``, ``Y_i Z_j`` on
every bond) by the gradient of appending ``exp(+i t P)`` at t = 0, appends the steepest one
with ``build_graph``, and re-optimises all angles from the previous optimum and t = 0. It stops
when no pool gradient reaches ``--tol``.

The propagator works in the Schrödinger picture, where ``build_graph`` puts a new gate after
the recorded ones on the state and its angle last in the parameter vector, as ADAPT wants. One
``monoprop.optimize.Objective`` serves every round: its guard replaces the stale functional
after each growth, so ``objective.refreshes`` ends equal to the number of gates. With
``--schrodinger-cutoff`` at the number of qubits (the default) every energy is exact; for
small chains the result is compared with exact diagonalisation. ::

    python examples/adapt_vqe.py --qubits 6 --field 1.0 --tol 1e-5
"""

from __future__ import annotations

import argparse
import copy
import os
import time

import numpy as np

from monoprop import Circuit, ExpGate, Pauli, PauliOperator, PauliPropagator
from monoprop.optimize import Objective, minimize


def tfim_hamiltonian(n: int, j: float, h: float) -> PauliOperator:
    terms = {Pauli("ZZ", (i, i + 1)): -j for i in range(n - 1)}
    terms.update({Pauli("X", i): -h for i in range(n)})
    return PauliOperator(terms, n)


def operator_pool(n: int) -> list[tuple[str, ExpGate]]:
    """(label, gate) pairs. Every generator has an odd number of Y's: the state and H are
    real, so only such generators can move the energy at t = 0."""
    strings = [("Y", (i,)) for i in range(n)]
    for i in range(n - 1):
        strings += [(s, (i, i + 1)) for s in ("XY", "YX", "ZY", "YZ")]
    return [
        (
            "".join(f"{letter}{q}" for letter, q in zip(s, qubits, strict=True)),
            ExpGate(PauliOperator({Pauli(s, qubits): 1.0}, n)),
        )
        for s, qubits in strings
    ]


def pool_gradients(
    propagator: PauliPropagator, x: np.ndarray, pool: list[tuple[str, ExpGate]]
) -> np.ndarray:
    """d E / d t for appending each pool gate alone, at t = 0 and the current angles x.

    All pool gates are appended at once to a copy: at zero angle each is the identity, so the
    gradient with respect to one of them is that of appending it by itself. One replay scores
    the whole pool, and the real propagator keeps only the gate chosen."""
    trial = copy.deepcopy(propagator)
    trial.build_graph(Circuit([gate for _, gate in pool], propagator.num_qubits))
    _, gradient = trial.expectation_value_and_gradient(np.concatenate([x, np.zeros(len(pool))]))
    return np.asarray(gradient)[len(x) :]


def exact_ground_energy(hamiltonian: PauliOperator) -> float:
    n = hamiltonian.num_qubits
    single = {
        "X": np.array([[0, 1], [1, 0]], dtype=complex),
        "Y": np.array([[0, -1j], [1j, 0]]),
        "Z": np.diag([1.0 + 0j, -1.0]),
    }
    matrix = np.zeros((2**n, 2**n), dtype=complex)
    for pauli, coefficient in hamiltonian.terms.items():
        factors = [np.eye(2, dtype=complex)] * n
        for letter, qubit in zip(pauli.string, pauli.qubits, strict=True):
            factors[qubit] = single[letter]
        term = factors[0]
        for f in factors[1:]:
            term = np.kron(term, f)
        matrix += coefficient * term
    return float(np.linalg.eigvalsh(matrix)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--qubits", type=int, default=6)
    parser.add_argument("--field", type=float, default=1.0, help="transverse field h (J = 1)")
    parser.add_argument("--max-rounds", type=int, default=60, help="at most this many gates")
    parser.add_argument(
        "--tol", type=float, default=1e-5, help="stop once every pool |gradient| is below this"
    )
    parser.add_argument(
        "--schrodinger-cutoff",
        type=int,
        default=None,
        help="Pauli-weight cutoff of the evolved state (default: the number of qubits, exact)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="monoprop threads per propagator (sets monoprop_NUM_THREADS)",
    )
    args = parser.parse_args()

    # Read when each propagator is constructed. A chain this small replays in microseconds, so
    # a team of threads woken for each of scipy's calls costs more than it saves (on small
    # VMs, where waking an idle core takes milliseconds, 100x more).
    os.environ["monoprop_NUM_THREADS"] = str(args.threads)
    n = args.qubits
    hamiltonian = tfim_hamiltonian(n, 1.0, args.field)
    pool = operator_pool(n)
    cutoff = args.schrodinger_cutoff or n
    propagator = PauliPropagator(hamiltonian, [], cutoff=n, schrodinger_cutoff=cutoff)

    # Made on the empty graph and kept for the whole run: every build_graph below makes its
    # functional stale, and the next call takes a new one instead of failing.
    objective = Objective(propagator)
    x = np.zeros(0)
    energy, _ = objective(x)
    print(f"{n} qubits, h = {args.field}, pool of {len(pool)} generators")
    print(f"reference energy {energy:.10f}  (|{'0' * n}>)")

    start = time.perf_counter()
    for round_ in range(1, args.max_rounds + 1):
        gradients = pool_gradients(propagator, x, pool)
        best = int(np.argmax(np.abs(gradients)))
        if abs(gradients[best]) < args.tol:
            print(f"converged: largest |grad| {abs(gradients[best]):.3e} < tol {args.tol:g}")
            break
        label, gate = pool[best]
        propagator.build_graph(Circuit([gate], n))
        # Warm start: the previous optimum with the new angle at 0 is the circuit just scored.
        # Optimise well below --tol: a loosely converged round leaves gradients on the old
        # angles that the next screening mistakes for gains from new gates.
        result = minimize(
            objective,
            np.append(x, 0.0),
            method="L-BFGS-B",
            options={"ftol": 1e-15, "gtol": 1e-3 * args.tol},
        )
        x, energy = result.x, result.fun
        print(
            f"round {round_}: gate {label}  |grad| {abs(gradients[best]):.6e}  "
            f"energy {energy:.10f}  ({result.nfev} replays)"
        )
    else:
        print(f"stopped after --max-rounds {args.max_rounds} gates")
    elapsed = time.perf_counter() - start

    bound = objective.truncation_error(x).bound  # the error bar of the truncated value
    print(
        f"ADAPT energy {energy:.10f} ± {bound:.1e}  ({len(x)} gates, {objective.nfev} replays, "
        f"{objective.refreshes} refreshes, {elapsed:.2f} s)"
    )
    if n <= 12:
        exact = exact_ground_energy(hamiltonian)
        print(f"exact energy {exact:.10f}  (error {energy - exact:.2e})")


if __name__ == "__main__":
    main()
