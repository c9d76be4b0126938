"""VQE for the 1D Fermi-Hubbard chain with Majorana propagation
==============================================================

``H = -t sum_{i,s} (c^dag_{i,s} c_{i+1,s} + h.c.) + U sum_i n_{i,up} n_{i,down}`` on an open
chain of L sites, 2L spin-orbitals (spin up 0..L-1, spin down L..2L-1). The Hamiltonian is
written in the orbitals that diagonalise the hopping matrix, so the Hartree-Fock reference (the
lowest orbitals of each spin filled) is a product state. The ansatz repeats ``layers`` times: a
Givens rotation ``exp(+i a i(c^dag_v c_o - h.c.))`` between every occupied and every virtual
orbital of each spin, then a double excitation ``exp(+i b i(c^dag_v c^dag_w c_p c_o - h.c.))``
from every pair of occupied spin-orbitals into every pair of virtual ones with as many up
spins, each gate with its own angle. The graph is recorded once and
``monoprop.optimize.minimize`` replays it for the energy and the exact gradient. For small
chains the result is compared with exact diagonalisation in the sector of the reference's up
and down electron numbers, which every gate conserves. Graphs this small replay fastest on one
thread (``monoprop_NUM_THREADS=1``). ::

    python examples/vqe_hubbard.py --sites 4 --interaction 4 --layers 2
"""

from __future__ import annotations

import argparse
import itertools
import time
from functools import reduce

import numpy as np

from monoprop import (
    Circuit,
    ExpGate,
    FermiOperator,
    MajoranaPropagator,
    integrals_to_fermion,
    optimize,
)

# The dense reference holds 2^(2L) x 2^(2L) matrices: 2^10 = 1024 is still quick.
MAX_EXACT_MODES = 10


def hopping_matrix(sites: int, t: float) -> np.ndarray:
    hopping = np.zeros((sites, sites))
    for i in range(sites - 1):
        hopping[i, i + 1] = hopping[i + 1, i] = -t
    return hopping


def site_hamiltonian(sites: int, t: float, u: float) -> FermiOperator:
    """The Hubbard chain in the site basis, as written: the reference for the checks."""
    terms = {}
    for spin in (0, sites):
        for i in range(sites - 1):
            terms[((i + spin, "+"), (i + 1 + spin, "-"))] = -t
            terms[((i + 1 + spin, "+"), (i + spin, "-"))] = -t
    for i in range(sites):
        terms[((i, "+"), (i, "-"), (i + sites, "+"), (i + sites, "-"))] = u
    return FermiOperator.from_dict(terms, 2 * sites)


def orbital_hamiltonian(orbitals: np.ndarray, t: float, u: float) -> FermiOperator:
    """The Hubbard chain in the orbitals a_k = sum_i orbitals[i, k] c_i (same for both spins).

    The hopping becomes diagonal; the on-site repulsion, (ii|ii) = U in chemists' notation,
    becomes U sum_i C_ip C_iq C_ir C_is in every orbital index. It lives in the opposite-spin
    block h2[1] of integrals_to_fermion (h2[0] and h2[2] are the same-spin blocks).
    """
    sites = orbitals.shape[0]
    one_body = orbitals.T @ hopping_matrix(sites, t) @ orbitals
    two_body = np.zeros((3, sites, sites, sites, sites))
    two_body[1] = u * np.einsum("ip,iq,ir,is->pqrs", *[orbitals] * 4)
    return integrals_to_fermion(0.0, np.array([one_body, one_body]), two_body)


def givens_rotation(p: int, q: int, num_modes: int) -> FermiOperator:
    # i(c_p^dag c_q - c_q^dag c_p) is Hermitian, so exp(+i a H) is a real rotation of p and q.
    return FermiOperator.from_dict({((p, "+"), (q, "-")): 1j, ((q, "+"), (p, "-")): -1j}, num_modes)


def double_excitation(p: int, q: int, r: int, s: int, num_modes: int) -> FermiOperator:
    excite, deexcite = (
        ((p, "+"), (q, "+"), (r, "-"), (s, "-")),
        ((s, "+"), (r, "+"), (q, "-"), (p, "-")),
    )
    return FermiOperator.from_dict({excite: 1j, deexcite: -1j}, num_modes)


def ansatz(sites: int, up: int, down: int, layers: int) -> Circuit:
    num_modes = 2 * sites
    spins = [
        (range(up), range(up, sites)),
        (range(sites, sites + down), range(sites + down, num_modes)),
    ]
    occupied = [o for occ, _ in spins for o in occ]
    virtual = [v for _, vir in spins for v in vir]
    gates = []
    for _ in range(layers):
        # The rotations relax the orbitals (the hopping orbitals are the mean-field ones only
        # at half filling) and, from the second layer on, act on the correlated state.
        for occ, vir in spins:
            gates += [ExpGate(givens_rotation(v, o, num_modes)) for o in occ for v in vir]
        for o, p in itertools.combinations(occupied, 2):
            for v, w in itertools.combinations(virtual, 2):
                # Only excitations that keep the up and down electron numbers.
                if (o >= sites) + (p >= sites) == (v >= sites) + (w >= sites):
                    gates.append(ExpGate(double_excitation(v, w, p, o, num_modes)))
    return Circuit(gates, num_modes)


def majorana_matrices(num_modes: int) -> list[np.ndarray]:
    """Dense m_{2j} = Z..Z X_j and m_{2j+1} = Z..Z Y_j, mode 0 the leftmost Kronecker factor."""
    pauli_x = np.array([[0, 1], [1, 0]], dtype=complex)
    pauli_y = np.array([[0, -1j], [1j, 0]])
    pauli_z = np.diag([1.0 + 0j, -1.0])
    identity = np.eye(2, dtype=complex)
    return [
        reduce(np.kron, [pauli_z] * j + [last] + [identity] * (num_modes - j - 1))
        for j in range(num_modes)
        for last in (pauli_x, pauli_y)
    ]


def ladder_matrices(majoranas: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
    """c_j^dag = (m_{2j} - i m_{2j+1}) / 2 under "+", c_j = (m_{2j} + i m_{2j+1}) / 2 under "-"."""
    even, odd = majoranas[0::2], majoranas[1::2]
    return {
        "+": [(m - 1j * n) / 2 for m, n in zip(even, odd, strict=True)],
        "-": [(m + 1j * n) / 2 for m, n in zip(even, odd, strict=True)],
    }


def dense_matrix(operator: FermiOperator, ladders: dict[str, list[np.ndarray]]) -> np.ndarray:
    # Straight from the ladder strings, so monoprop's own Majorana conversion is checked too.
    dimension = ladders["+"][0].shape[0]
    matrix = np.zeros((dimension, dimension), dtype=complex)
    for term, coefficient in zip(operator.terms, operator.coefficients, strict=True):
        factors = [ladders[op][mode] for mode, op in term.expression]
        matrix += coefficient * reduce(np.matmul, factors, np.eye(dimension))
    return matrix


def sector(sites: int, up: int, down: int) -> np.ndarray:
    """Basis indices with `up` and `down` occupied modes (mode j is bit 2L-1-j; occupied = 1)."""
    modes = np.arange(2 * sites)
    occupation = (np.arange(4**sites)[:, None] >> (2 * sites - 1 - modes)) & 1
    counts = occupation[:, :sites].sum(axis=1), occupation[:, sites:].sum(axis=1)
    return np.flatnonzero((counts[0] == up) & (counts[1] == down))


def hartree_fock_vector(
    orbitals: np.ndarray, up: int, down: int, ladders: dict[str, list[np.ndarray]]
) -> np.ndarray:
    """Slater determinant of the lowest orbitals, built in the site basis from the vacuum."""
    sites = orbitals.shape[0]
    creators = ladders["+"]
    state = np.zeros(4**sites, dtype=complex)
    state[0] = 1.0  # every mode empty
    for spin, count in ((0, up), (sites, down)):
        for k in range(count):
            state = sum(orbitals[i, k] * creators[i + spin] for i in range(sites)) @ state
    return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--sites", type=int, default=4)
    parser.add_argument("--electrons", type=int, default=None, help="default: half filling")
    parser.add_argument("--hopping", type=float, default=1.0, help="hopping t")
    parser.add_argument("--interaction", type=float, default=4.0, help="on-site repulsion U")
    parser.add_argument("--layers", type=int, default=2)
    # A truncated energy is not variational: the optimiser can exploit the dropped terms.
    parser.add_argument(
        "--cutoff", type=int, default=None, help="Majorana-length cutoff (default: none, exact)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--progress", action="store_true", help="tqdm bar on stderr")
    args = parser.parse_args()

    sites, t, u = args.sites, args.hopping, args.interaction
    electrons = sites if args.electrons is None else args.electrons
    up, down = (electrons + 1) // 2, electrons // 2
    if not 0 < electrons <= 2 * sites:
        parser.error(f"--electrons must be between 1 and {2 * sites} for {sites} sites")
    num_modes = 2 * sites
    # eigh sorts the orbital energies, so the reference fills orbitals 0..up-1 and 0..down-1.
    _, orbitals = np.linalg.eigh(hopping_matrix(sites, t))
    hamiltonian = orbital_hamiltonian(orbitals, t, u)
    reference = [*range(up), *range(sites, sites + down)]
    # get_majorana_operator() keeps the terms that cancel, with coefficient 0.
    majorana_terms = sum(abs(c) > 0 for c in hamiltonian.get_majorana_operator().terms.values())
    print(
        f"Hubbard chain: {sites} sites, t = {t:g}, U = {u:g}, {up} up + {down} down electrons, "
        f"{num_modes} modes, {majorana_terms} Majorana terms"
    )

    propagator = MajoranaPropagator(hamiltonian, reference, cutoff=args.cutoff or 2 * num_modes)
    start = time.perf_counter()
    propagator.build_graph(ansatz(sites, up, down, args.layers))
    print(
        f"graph: {propagator.graph_layers} layers, {propagator.n_parameters} parameters, "
        f"{propagator.size()} terms, graph size {propagator.graph_size()} "
        f"({time.perf_counter() - start:.2f} s)"
    )
    hartree_fock = propagator.expectation_value(np.zeros(propagator.n_parameters))
    print(f"HF energy    {hartree_fock:.10f}")

    x0 = np.random.default_rng(args.seed).normal(scale=0.1, size=propagator.n_parameters)
    start = time.perf_counter()
    result = optimize.minimize(propagator, x0, method="L-BFGS-B", progress=args.progress)
    elapsed = time.perf_counter() - start
    print(
        f"VQE energy   {result.fun:.10f} ± {result.truncation_error.bound:.1e}  "
        f"({result.nit} iterations, {result.nfev} replays, "
        f"{elapsed:.2f} s)"
    )

    if num_modes <= MAX_EXACT_MODES:
        ladders = ladder_matrices(majorana_matrices(num_modes))
        matrix = dense_matrix(site_hamiltonian(sites, t, u), ladders)
        state = hartree_fock_vector(orbitals, up, down, ladders)
        # The same reference energy from the site-basis model checks the orbital rotation,
        # the integral layout, the Majorana conventions and the reference state at once.
        dense_hartree_fock = np.vdot(state, matrix @ state).real
        print(
            f"dense HF     {dense_hartree_fock:.10f}  "
            f"(site basis; propagator - dense {hartree_fock - dense_hartree_fock:.1e})"
        )
        if abs(dense_hartree_fock - hartree_fock) > 1e-9:
            raise RuntimeError(f"dense HF energy {dense_hartree_fock} != {hartree_fock}")
        basis = sector(sites, up, down)
        exact = np.linalg.eigvalsh(matrix[np.ix_(basis, basis)])[0]
        print(
            f"exact energy {exact:.10f}  (error {result.fun - exact:.2e}, sector dim {len(basis)})"
        )


if __name__ == "__main__":
    main()
