"""A graph larger than one process's memory budget, built over MPI ranks
=======================================================================

The problem is a VQE step for the 2D transverse-field Ising model,
``H = -J sum_<ij> Z_i Z_j - h sum_i X_i`` on an open ``rows x cols`` lattice, with a
Hamiltonian-variational ansatz: ``exp(+i c Y)`` on every site, then ``layers`` repetitions of
``exp(+i a ZZ)`` on every bond and ``exp(+i b X)`` on every site, each gate with its own angle.
The graph is recorded once (Pauli-weight cutoff ``--cutoff``), then replayed for the energy and
its exact gradient at a fixed starting point.

Every rank runs this script; the terms are divided over the ranks (``MPI.COMM_WORLD``), so each
rank holds about 1/R of them. ``--memory-limit`` (bytes; K, M and G suffixes are powers of ten)
is each rank's memory budget, the ``memory_limit=`` of the propagator: a build that would take
its process past it stops with a ``MemoryError`` before it grows. Without it the budget is
``monoprop_MEMORY_LIMIT`` (bytes) if set, else 80% of the memory available when the build
starts. With more than one rank, a rank that stops aborts the launch with its message
(``MPI_Abort``).

Rank 0 prints each rank's terms, the bytes its propagator holds (``memory()``) and the
process's peak resident memory during the build and during the value and gradient, then the
energy and the gradient norm. After that (unless ``--no-one-rank``) rank 0 builds the same
graph alone, under the same budget, to show what one process would have needed: its peak, or
the ``MemoryError`` with which the budget refused it. ::

    mpiexec -n 4 python examples/distributed.py --memory-limit 115M

Without mpi4py, or on one rank, it runs as a single process. Threads per rank come from
``monoprop_NUM_THREADS`` (else ``OMP_NUM_THREADS``); give each rank as many cores.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import os
import resource
import sys
import time

import numpy as np

import monoprop
from monoprop import Circuit, ExpGate, Pauli, PauliOperator, PauliPropagator

MB = 1e6


def bonds(rows: int, cols: int) -> list[tuple[int, int]]:
    """Nearest-neighbour pairs of an open rows x cols lattice, qubit r * cols + c."""
    out = []
    for r in range(rows):
        for c in range(cols):
            q = r * cols + c
            if c + 1 < cols:
                out.append((q, q + 1))
            if r + 1 < rows:
                out.append((q, q + cols))
    return out


def tfim_hamiltonian(rows: int, cols: int, j: float, h: float) -> PauliOperator:
    n = rows * cols
    terms = {Pauli("ZZ", pair): -j for pair in bonds(rows, cols)}
    terms.update({Pauli("X", q): -h for q in range(n)})
    return PauliOperator(terms, n)


def ansatz(rows: int, cols: int, layers: int) -> Circuit:
    n = rows * cols
    gates = [ExpGate(PauliOperator({Pauli("Y", q): 1.0}, n)) for q in range(n)]
    for _ in range(layers):
        gates += [ExpGate(PauliOperator({Pauli("ZZ", pair): 1.0}, n)) for pair in bonds(rows, cols)]
        gates += [ExpGate(PauliOperator({Pauli("X", q): 1.0}, n)) for q in range(n)]
    return Circuit(gates, n)


def starting_point(n_parameters: int, seed: int) -> np.ndarray:
    """The angles the energy and gradient are evaluated at: small, the same on every rank."""
    return np.random.default_rng(seed).uniform(-0.3, 0.3, n_parameters)


def byte_count(text: str) -> int:
    """'150M' -> 150_000_000: bytes, with an optional K, M or G (powers of ten)."""
    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit() or int(digits) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a byte count such as 150000000 or 150M")
    return int(digits) * scale


# -- the process's memory, as the operating system counts it (what the budget reads) --------


def resident() -> int:
    """Resident memory of this process in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def reset_peak() -> None:
    """Restart the peak count (Linux; elsewhere the peak stays the process's lifetime peak)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak() -> int:
    """Peak resident memory in bytes since reset_peak()."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, else kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def release_freed_memory() -> None:
    """Hand freed heap back to the system (glibc keeps it otherwise), so that the resident
    memory, and with it the budget, counts only what is still held."""
    gc.collect()
    libc = ctypes.util.find_library("c")
    if libc and hasattr(ctypes.CDLL(libc), "malloc_trim"):
        ctypes.CDLL(libc).malloc_trim(0)


# -- the run ----------------------------------------------------------------------------------


def world():
    """MPI.COMM_WORLD when this monoprop has MPI and there are several ranks, else None."""
    if not monoprop.has_mpi:
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None


def run(args, comm) -> dict:
    """Build, value and gradient on `comm` (None: alone); this process's figures."""
    n = args.rows * args.cols
    release_freed_memory()
    before = resident()
    reset_peak()
    circuit = ansatz(args.rows, args.cols, args.layers)
    start = time.perf_counter()
    try:
        # Construction is refused too when the process alone is past the budget.
        prop = PauliPropagator(
            tfim_hamiltonian(args.rows, args.cols, 1.0, args.field),
            [],
            cutoff=args.cutoff,
            comm=comm,
            memory_limit=args.memory_limit,
        )
        prop.build_graph(circuit)
    except MemoryError as refused:
        return {"refused": str(refused), "before": before, "build peak": peak()}
    build_time = time.perf_counter() - start
    build_peak = peak()
    theta = starting_point(prop.n_parameters, args.seed)
    start = time.perf_counter()
    value, gradient = prop.expectation_value_and_gradient(theta)
    return {
        "qubits": n,
        "gates": prop.graph_layers,
        "threads": prop.num_threads,
        "terms": prop.size(),
        "memory": prop.memory(),
        "before": before,
        "build peak": build_peak,
        "peak": peak(),
        "build time": build_time,
        "replay time": time.perf_counter() - start,
        "value": value,
        "gradient": gradient,
    }


def budget(args) -> str:
    if args.memory_limit:
        return f"{args.memory_limit / MB:.1f} MB a rank (--memory-limit)"
    if limit := os.environ.get("monoprop_MEMORY_LIMIT"):
        return f"{int(limit) / MB:.1f} MB a rank (monoprop_MEMORY_LIMIT)"
    return "the default (80% of the memory available when the build starts)"


def report(args, ranks: list[dict]) -> dict:
    first = ranks[0]
    print(
        f"2D TFIM {args.rows} x {args.cols} ({first['qubits']} qubits), h = {args.field:g}, "
        f"{args.layers} layers, cutoff {args.cutoff}: {first['gates']} gates"
    )
    print(f"{len(ranks)} rank(s) x {first['threads']} thread(s); memory budget {budget(args)}")
    print(
        f"build_graph {max(r['build time'] for r in ranks):.2f} s, "
        f"value and gradient {max(r['replay time'] for r in ranks):.2f} s"
    )
    print(
        "rank      terms  terms MB  index MB  graph MB  buffers MB | process MB: "
        "before  build peak  replay peak"
    )
    for k, r in enumerate(ranks):
        m = r["memory"]
        print(
            f"{k:4d} {r['terms']:10d} {m['terms'] / MB:9.1f} {m['index'] / MB:9.1f} "
            f"{m['graph'] / MB:9.1f} {m['buffers'] / MB:11.1f} | {r['before'] / MB:18.1f} "
            f"{r['build peak'] / MB:11.1f} {r['peak'] / MB:12.1f}"
        )
    total = sum(r["terms"] for r in ranks)
    print(f"terms in all {total}, most on one rank {max(r['terms'] for r in ranks)}")
    print(f"energy {first['value']:.15f}, gradient norm {np.linalg.norm(first['gradient']):.12f}")
    return first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--cols", type=int, default=9)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--field", type=float, default=3.0, help="transverse field h (J = 1)")
    parser.add_argument("--cutoff", type=int, default=5, help="Pauli-weight cutoff")
    parser.add_argument("--seed", type=int, default=1, help="of the starting point's angles")
    parser.add_argument(
        "--memory-limit",
        type=byte_count,
        default=None,
        help="each rank's memory budget in bytes, e.g. 150000000 or 150M (default: "
        "monoprop_MEMORY_LIMIT, else 80%% of the available memory)",
    )
    parser.add_argument(
        "--one-rank",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with several ranks, rank 0 then builds the graph alone under the same budget",
    )
    args = parser.parse_args()

    comm = world()
    rank = comm.Get_rank() if comm else 0
    mine = run(args, comm)
    # A refusal on one of several ranks has aborted the launch; alone it comes back here.
    if "refused" in mine:
        print(f"refused: {mine['refused']}")
        raise SystemExit(1)
    ranks = comm.gather(mine, root=0) if comm else [mine]
    if rank != 0:
        return
    first = report(args, ranks)
    if comm is None or not args.one_rank:
        return
    alone = run(args, None)
    print(f"one rank alone, from {alone['before'] / MB:.1f} MB held, under the same budget:")
    if "refused" in alone:
        print(f"  refused (peak {alone['build peak'] / MB:.1f} MB): {alone['refused']}")
        return
    value_error = abs(alone["value"] - first["value"]) / abs(alone["value"])
    gradient_error = np.max(np.abs(alone["gradient"] - first["gradient"])) / np.max(
        np.abs(alone["gradient"])
    )
    print(
        f"  {alone['terms']} terms, memory() {sum(alone['memory'].values()) / MB:.1f} MB, "
        f"process peak {alone['build peak'] / MB:.1f} MB (build), "
        f"{alone['peak'] / MB:.1f} MB (with the replay); "
        f"energy and gradient agree to {max(value_error, gradient_error):.1e} (relative)"
    )


if __name__ == "__main__":
    main()
