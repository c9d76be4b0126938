"""Error bars on truncated values
==============================

Value ± bound and ± estimate against the exact value. A kicked Ising chain (``rx`` kicks of
angle θ, then ``exp(+i J Z_q Z_q+1)`` on every bond, repeated), observable ``Z`` on the middle
qubit, state ``|0…0>``. For three values of ``lower_atol`` it records one graph seeded at
θ = 0.4, replays it along a scan of θ, and compares each replayed value with the exact one (an
untruncated graph: at this size the light cone keeps it small). ``prop.truncation_error(x)``
gives, at every point of the scan, a bound that the error provably stays under and a
typical-size estimate, at the cost of one replay. ::

    python examples/error_bars.py                 # 12 qubits, 4 steps, writes error_bars.png
    python examples/error_bars.py --qubits 16 --steps 5 --plot out.png
"""

from __future__ import annotations

import argparse

import numpy as np

from monoprop import Circuit, ExpGate, Pauli, PauliOperator, PauliPropagator

TOLERANCES = (1e-3, 1e-4, 1e-5)
SEED_ANGLE = 0.4


def kicked_ising(n: int, steps: int) -> Circuit:
    """Parameter 0 is the kick angle θ of every ``rx``, parameter 1 the bond angle."""
    gates = []
    for _ in range(steps):
        gates += [ExpGate(PauliOperator({Pauli("X", q): 1.0}, n), 0) for q in range(n)]
        gates += [
            ExpGate(PauliOperator({Pauli("ZZ", (q, q + 1)): 1.0}, n), 1) for q in range(n - 1)
        ]
    return Circuit(gates, n)


def propagator(n: int, circuit: Circuit, seed, lower_atol) -> PauliPropagator:
    prop = PauliPropagator(
        PauliOperator({Pauli("Z", n // 2): 1.0}, n), [], cutoff=n, lower_atol=lower_atol
    )
    prop.build_graph(circuit, seed_parameters=seed)
    return prop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--qubits", type=int, default=12)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--coupling", type=float, default=0.3, help="bond angle J")
    parser.add_argument("--points", type=int, default=41)
    parser.add_argument("--plot", default="error_bars.png", help="PNG path")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args()

    n = args.qubits
    circuit = kicked_ising(n, args.steps)
    angles = np.linspace(0.0, 0.8, args.points)
    points = [np.array([theta, args.coupling]) for theta in angles]
    exact_prop = propagator(n, circuit, None, None)
    exact = np.array([exact_prop.expectation_value(x) for x in points])
    print(f"kicked Ising, {n} qubits, {args.steps} steps, J = {args.coupling}, <Z_{n // 2}>")
    print(f"exact graph: {sum(exact_prop.graph_size())} entries")

    rows = []
    for tol in TOLERANCES:
        prop = propagator(n, circuit, [SEED_ANGLE, args.coupling], tol)
        values = np.array([prop.expectation_value(x) for x in points])
        errors = [prop.truncation_error(x) for x in points]
        bound = np.array([e.bound for e in errors])
        estimate = np.array([e.estimate for e in errors])
        actual = np.abs(values - exact)
        assert np.all(actual <= bound + 1e-12), "the bound failed"  # a proof, checked anyway
        k = int(np.argmin(np.abs(angles - SEED_ANGLE)))
        print(
            f"lower_atol {tol:<7g} {sum(prop.graph_size()):>8} entries   at θ = {angles[k]:.2f}: "
            f"E = {values[k]:.6f} ± {bound[k]:.1e} (estimate {estimate[k]:.1e}, "
            f"actual error {actual[k]:.1e})   over the scan: worst actual {actual.max():.1e}, "
            f"worst bound {bound.max():.1e}"
        )
        rows.append((tol, values, bound, estimate))

    if not args.no_plot:
        plot(args.plot, angles, exact, rows)


def plot(path: str, angles, exact, rows) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print('no plot: matplotlib is not installed (pip install "monoprop[plot]")')
        return
    fig, axes = plt.subplots(1, len(rows), figsize=(4.2 * len(rows), 3.8), sharey=True)
    for ax, (tol, values, bound, estimate) in zip(axes, rows, strict=True):
        ax.fill_between(angles, values - bound, values + bound, alpha=0.2, label="± bound")
        ax.fill_between(angles, values - estimate, values + estimate, alpha=0.4, label="± estimate")
        ax.plot(angles, values, lw=1.5, label="truncated value")
        ax.plot(angles, exact, "k--", lw=1, label="exact")
        ax.axvline(SEED_ANGLE, color="grey", lw=0.8, ls=":")
        ax.set_title(f"lower_atol = {tol:g}")
        ax.set_xlabel("kick angle θ (graph seeded at the dotted line)")
    axes[0].set_ylabel("<Z>")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot         {path}")


if __name__ == "__main__":
    main()
