"""VQE under depolarizing noise, and a noise rate fitted to measured energies
===========================================================================

The model is the 1D transverse-field Ising chain ``H = -sum_i Z_i Z_{i+1} - h sum_i X_i``,
the ansatz the Hamiltonian-variational circuit of ``vqe_tfim.py``, with a one-qubit
depolarizing channel on every qubit after every layer. All channels read their rate p from
one slot of the parameter vector, the last one, after the angles. So one recorded graph gives
the energy and its exact gradient with respect to every angle and to p.

1. VQE at the device's noise rate (``--rate``): L-BFGS-B over the angles, with the rate's
   slot held by its bounds; and the same without noise, for comparison.
2. Calibration: "measured" energies at a few angle settings (made here with the true rate
   ``--true-rate``, plus shot noise of ``--shots-error``) are fitted by gradient descent on
   the rate alone, d energy / d p coming from the same replay as the energy.

::

    python examples/noisy_vqe.py --qubits 6 --layers 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from monoprop import Circuit, ExpGate, Pauli, PauliOperator, PauliPropagator, noise
from monoprop.optimize import minimize


def tfim_hamiltonian(n: int, h: float) -> PauliOperator:
    terms = {Pauli("ZZ", (i, i + 1)): -1.0 for i in range(n - 1)}
    terms.update({Pauli("X", i): -h for i in range(n)})
    return PauliOperator(terms, n)


def noisy_ansatz(n: int, layers: int) -> Circuit:
    """The ansatz with depolarizing on every qubit after every layer, its rate in the last slot."""
    gates: list = [ExpGate(PauliOperator({Pauli("Y", i): 1.0}, n)) for i in range(n)]
    angles = n + layers * (2 * n - 1)
    for _ in range(layers):
        gates += [ExpGate(PauliOperator({Pauli("ZZ", (i, i + 1)): 1.0}, n)) for i in range(n - 1)]
        gates += [ExpGate(PauliOperator({Pauli("X", i): 1.0}, n)) for i in range(n)]
        gates += [noise.depolarizing(qubits=i, index=angles) for i in range(n)]
    return Circuit(gates, n)


def vqe(propagator: PauliPropagator, rate: float, seed: int):
    """The angles that minimise the energy at a fixed rate: L-BFGS-B with the rate pinned."""
    angles = propagator.n_parameters - 1
    x0 = np.append(np.random.default_rng(seed).normal(scale=0.1, size=angles), rate)
    bounds = [(None, None)] * angles + [(rate, rate)]
    return minimize(propagator, x0, method="L-BFGS-B", bounds=bounds)


def fit_rate(energy_and_gradient, settings, measured, start: float, steps: int) -> float:
    """Least squares in the rate by gradient descent: loss = sum_k (E(theta_k, p) - m_k)^2,
    d loss / d p = 2 sum_k (E_k - m_k) dE_k/dp, with the step scaled by the curvature
    sum_k (dE_k/dp)^2 so that one learning rate suits every problem."""
    p = start
    for step in range(steps + 1):
        residuals, slopes = [], []
        for angles in settings:
            value, gradient = energy_and_gradient(np.append(angles, p))
            residuals.append(value - measured[len(residuals)])
            slopes.append(gradient[-1])
        r, g = np.array(residuals), np.array(slopes)
        if step % 10 == 0 or step == steps:
            print(f"  step {step:3d}  rate {p:.6f}  loss {np.sum(r**2):.3e}")
        if step < steps:
            p = min(max(p - 0.5 * (r @ g) / (g @ g), 0.0), 1.0)
    return p


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--qubits", type=int, default=6)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--field", type=float, default=1.0, help="transverse field h")
    parser.add_argument("--rate", type=float, default=0.01, help="depolarizing rate of the VQE")
    parser.add_argument("--true-rate", type=float, default=0.03, help="rate behind the data")
    parser.add_argument("--shots-error", type=float, default=1e-4, help="noise on the data")
    parser.add_argument("--steps", type=int, default=40, help="gradient-descent steps")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    n = args.qubits
    hamiltonian = tfim_hamiltonian(n, args.field)
    circuit = noisy_ansatz(n, args.layers)
    propagator = PauliPropagator(hamiltonian, [], cutoff=n)
    start = time.perf_counter()
    propagator.build_graph(circuit)
    print(
        f"graph: {propagator.graph_layers} layers, {propagator.n_parameters} parameters "
        f"({propagator.n_parameters - 1} angles and the rate), {propagator.size()} terms "
        f"({time.perf_counter() - start:.2f} s)"
    )
    clean = vqe(propagator, 0.0, args.seed)
    noisy = vqe(propagator, args.rate, args.seed)
    for name, result in (("without noise     ", clean), (f"at rate {args.rate:<10g}", noisy)):
        print(
            f"VQE energy {name} {result.fun:.10f} ± {result.truncation_error.bound:.1e}  "
            f"({result.nit} iterations)"
        )
    print(f"noise costs                   {noisy.fun - clean.fun:.10f}")

    # Calibration data: the energy at the noiseless optimum and at random angles, measured on
    # a device whose rate is true_rate.
    energy_and_gradient = propagator.expectation_value_and_gradient_functional()
    rng = np.random.default_rng(args.seed + 1)
    settings = [clean.x[:-1]] + [rng.uniform(-np.pi, np.pi, len(clean.x) - 1) for _ in range(3)]
    measured = [
        energy_and_gradient(np.append(a, args.true_rate))[0] + rng.normal(scale=args.shots_error)
        for a in settings
    ]
    print(f"fitting the rate to {len(measured)} measured energies (true rate {args.true_rate}):")
    rate = fit_rate(energy_and_gradient, settings, measured, start=0.0, steps=args.steps)
    print(f"recovered rate {rate:.6f}  (true {args.true_rate}, error {rate - args.true_rate:+.2e})")


if __name__ == "__main__":
    main()
