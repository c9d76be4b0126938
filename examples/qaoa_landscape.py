"""QAOA landscape for MaxCut on a 3-regular graph
===============================================

MaxCut on a random 3-regular graph: the cut of a partition ``z`` is the number of edges
``(i, j)`` with ``z_i != z_j``, so that ``cut = (|E| - <H>) / 2`` for the cost Hamiltonian
``H = sum_(i,j) Z_i Z_j``. The QAOA circuit of depth ``p = 1`` is Qiskit's ``qaoa_ansatz(H)``:
Hadamards, ``exp(-i γ H)`` and ``exp(-i β sum_i X_i)``. monoprop reads it with
``from_qiskit_circuit`` and records its graph once, for ``H`` in the Heisenberg picture;
``monoprop.optimize.landscape`` then evaluates ``<H>`` on a ``γ x β`` grid, a few thousand
points at a time in one batched replay each. The grid spans a whole period in both angles
(``γ`` in ``[0, π)``, ``β`` in ``[0, π/2)``). The lowest grid points seed a multistart
L-BFGS-B (``minimize(..., starts=...)``), which refines the best one.

It prints the graph's size, the landscape's time, the best grid point and the refined
optimum with their expected cut, and draws the expected cut over the grid (``--plot``,
default ``qaoa_landscape.png``, needs matplotlib: ``pip install "monoprop[plot]"``;
``--no-plot`` skips it). The graph is made with a seeded NumPy generator (no networkx needed).
::

    python examples/qaoa_landscape.py --nodes 40 --grid 64
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from qiskit.circuit import QuantumCircuit
from qiskit.circuit.library import qaoa_ansatz
from qiskit.quantum_info import SparsePauliOp

from monoprop import PauliPropagator, from_qiskit_circuit, from_qiskit_operator
from monoprop.optimize import landscape, minimize

# The grid spans one period in each angle: exp(-iγH) repeats with period π in γ (H has
# eigenvalues |E| - 2 cut, all of one parity), exp(-iβ sum X) with period π in β, and <H>
# with period π/2 in β, as H is even under flipping every spin.
GAMMA_PERIOD, BETA_PERIOD = np.pi, np.pi / 2


def random_regular_graph(nodes: int, seed: int, degree: int = 3) -> list[tuple[int, int]]:
    """The edges ``(i, j)``, ``i < j``, of a random ``degree``-regular simple graph: the
    configuration model (each node's ``degree`` stubs paired at random), drawn again until no
    pair is a loop or repeats an edge."""
    if nodes <= degree or nodes * degree % 2:
        raise ValueError(
            f"no {degree}-regular graph has {nodes} nodes: need more than {degree} nodes and "
            f"nodes * {degree} even."
        )
    rng = np.random.default_rng(seed)
    while True:
        pairs = rng.permutation(np.repeat(np.arange(nodes), degree)).reshape(-1, 2)
        edges = {(int(min(a, b)), int(max(a, b))) for a, b in pairs}
        if len(edges) == len(pairs) and all(a != b for a, b in edges):
            return sorted(edges)


def maxcut_hamiltonian(edges: list[tuple[int, int]], nodes: int) -> SparsePauliOp:
    """``H = sum_(i,j) Z_i Z_j``: ``cut = (|E| - <H>) / 2``, so the largest cut is at the least
    ``<H>``."""
    return SparsePauliOp.from_sparse_list([("ZZ", list(edge), 1.0) for edge in edges], nodes)


def qaoa_propagator(
    hamiltonian: SparsePauliOp, cutoff: int | None = None
) -> tuple[PauliPropagator, QuantumCircuit, int, int]:
    """The propagator of ``<H>`` with the graph of ``qaoa_ansatz(H, reps=1)`` recorded, the
    ansatz, and the parameter-vector slots of ``γ`` and ``β``.

    monoprop's slot ``k`` is the circuit's ``parameters[k]`` (Qiskit's order, sorted by name:
    ``β[0]`` before ``γ[0]``), so the slots are looked up by name rather than assumed.
    """
    ansatz = qaoa_ansatz(hamiltonian, reps=1)
    names = [parameter.name for parameter in ansatz.parameters]
    gamma_slot, beta_slot = names.index("γ[0]"), names.index("β[0]")
    nodes = hamiltonian.num_qubits
    # Heisenberg picture: H is propagated back through the circuit to |0...0>. With p = 1 no
    # term grows beyond an edge's neighbourhood (weight 6 on a 3-regular graph), so a cutoff of
    # the whole register truncates nothing.
    propagator = PauliPropagator(from_qiskit_operator(hamiltonian), [], cutoff=cutoff or nodes)
    propagator.build_graph(from_qiskit_circuit(ansatz, []))
    return propagator, ansatz, gamma_slot, beta_slot


def grid_axes(points: int) -> tuple[np.ndarray, np.ndarray]:
    """``points`` values of ``γ`` over ``[0, π)`` and of ``β`` over ``[0, π/2)``."""
    return (
        np.linspace(0.0, GAMMA_PERIOD, points, endpoint=False),
        np.linspace(0.0, BETA_PERIOD, points, endpoint=False),
    )


def plot_landscape(cut, gammas, betas, marks, edges: int, path: str) -> None:
    try:
        import matplotlib
    except ImportError:
        print('no plot: matplotlib is not installed (pip install "monoprop[plot]")')
        return
    matplotlib.use("Agg")  # write files, need no display
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4.5), layout="constrained")
    step_g, step_b = gammas[1] - gammas[0], betas[1] - betas[0]
    image = axis.imshow(
        cut.T,  # rows: β, columns: γ
        origin="lower",
        aspect="auto",
        extent=(gammas[0], gammas[-1] + step_g, betas[0], betas[-1] + step_b),
        cmap="viridis",
    )
    figure.colorbar(image, label=f"expected cut (of {edges} edges)")
    for (gamma, beta), marker, label in marks:
        axis.plot(gamma, beta, marker, color="white", markeredgecolor="black", label=label)
    axis.set(xlabel="γ", ylabel="β", title=f"QAOA p = 1, MaxCut, {len(cut)} x {cut.shape[1]} grid")
    axis.legend(loc="upper right", fontsize="small")
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"plot         {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--nodes", type=int, default=40, help="nodes of the 3-regular graph")
    parser.add_argument("--grid", type=int, default=64, help="grid points per angle")
    parser.add_argument("--starts", type=int, default=4, help="lowest grid points refined")
    parser.add_argument("--cutoff", type=int, default=None, help="Pauli-weight cutoff")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random graph")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=sys.stderr.isatty(),
        help="progress bar on stderr (default: when stderr is a terminal)",
    )
    parser.add_argument("--plot", default="qaoa_landscape.png", help="landscape plot (PNG) path")
    parser.add_argument("--no-plot", dest="plot", action="store_const", const=None, help="no plot")
    args = parser.parse_args()
    if args.grid < 2 or args.starts < 1:
        parser.error(f"--grid must be at least 2 and --starts at least 1; got {args}")

    try:
        edges = random_regular_graph(args.nodes, args.seed)
    except ValueError as error:
        parser.error(str(error))
    hamiltonian = maxcut_hamiltonian(edges, args.nodes)
    start = time.perf_counter()
    propagator, _, gamma_slot, beta_slot = qaoa_propagator(hamiltonian, args.cutoff)
    print(
        f"graph: {args.nodes} nodes, {len(edges)} edges; QAOA p = 1: "
        f"{propagator.graph_layers} layers, {propagator.size()} terms "
        f"({time.perf_counter() - start:.2f} s)"
    )

    gammas, betas = grid_axes(args.grid)
    start = time.perf_counter()
    energy = landscape(
        propagator, [gammas, betas], parameters=[gamma_slot, beta_slot], progress=args.progress
    )
    elapsed = time.perf_counter() - start
    print(
        f"landscape    {args.grid} x {args.grid} = {energy.size} points in {elapsed:.3f} s "
        f"({energy.size / elapsed:.0f} points/s)"
    )
    cut = (len(edges) - energy) / 2

    def describe(gamma: float, beta: float, value: float) -> str:
        return (
            f"gamma {gamma:.4f}, beta {beta:.4f}: <H> {value:.6f}, "
            f"expected cut {(len(edges) - value) / 2:.4f} of {len(edges)} edges"
        )

    i, j = np.unravel_index(np.argmin(energy), energy.shape)
    print(f"best grid    {describe(gammas[i], betas[j], energy[i, j])}")

    # Refine the lowest grid points, each a full parameter vector in slot order.
    lowest = np.argsort(energy, axis=None)[: args.starts]
    starts = np.zeros((len(lowest), propagator.n_parameters))
    rows, columns = np.unravel_index(lowest, energy.shape)
    starts[:, gamma_slot], starts[:, beta_slot] = gammas[rows], betas[columns]
    result = minimize(propagator, starts=starts)
    gamma, beta = result.x[gamma_slot], result.x[beta_slot]
    print(
        f"refined      {describe(gamma, beta, result.fun)} "
        f"(L-BFGS-B from the {len(starts)} lowest grid points, start {result.best_start})"
    )
    if args.plot:
        marks = [
            ((gammas[i], betas[j]), "s", "best grid point"),
            ((gamma % GAMMA_PERIOD, beta % BETA_PERIOD), "*", "refined"),
        ]
        plot_landscape(cut, gammas, betas, marks, len(edges), args.plot)


if __name__ == "__main__":
    main()
