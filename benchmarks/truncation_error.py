"""Truncation error bars: how close the estimate and the bound come to the actual error, what
they cost, and how many terms an error budget (``max_error``) keeps.

Accuracy. Each workload below is run truncated at two tolerances, after ``propagate`` and from
a graph (built at its seed, evaluated there and at a nearby parameter vector), and each
truncated value is compared with the exact one: a state vector for the Pauli circuits without
noise (computed here with numpy), an untruncated run of the same circuit otherwise. For each
case the table prints the actual error, the estimate and the bound and their ratios to the
actual error; the summary gives the share of cases whose estimate is within 3x of the actual
error and the median of bound / actual error. A case whose actual error is 0 (every dropped
branch was dark) counts as within 3x when its estimate is 0 too.

Workloads (12 qubits or fewer, so that the exact values are cheap):

* ``hea``: a hardware-efficient ansatz (ry and rz layers, a chain of cx as Clifford gates; as
  Qiskit's ``efficient_su2``) at random angles, Heisenberg-chain observable;
* ``tfim``: 4x3 transverse-field Ising Trotter circuit, magnetisation (both pictures);
* ``random``: random rotations of weight 1-3 Pauli strings, a random observable;
* ``kicked``: kicked Ising chain (rx and rzz at generic angles), Z in the middle;
* ``kicked-clifford``: 4x3 kicked Ising with rzz(-pi/2) as Clifford gates;
* ``noisy-tfim``: 3x3 TFIM with depolarizing noise after every layer;
* ``hubbard``: spinful Fermi-Hubbard chain of 4 sites as Majorana monomials (both pictures).

Cost: a value replay with its truncation error against the value alone, on larger kicked-Ising
graphs, at T = 1 and T = 2 (each a fresh process: the thread count is read at construction).

Budget (where the propagator has ``max_error``): for each workload, the terms held after
``propagate`` with ``max_error=eps`` against those of the uniform ``lower_atol`` that reaches
the same actual error (interpolated, log-log, between the tolerances run), and the share of
cases whose actual error is within eps.

    python benchmarks/truncation_error.py [--quick] [--plot PATH] [--json PATH] [--only NAMES]
        [--no-accuracy] [--no-budget] [--no-cost]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling benchmarks

import monoprop  # noqa: E402
from monoprop import (  # noqa: E402
    Circuit,
    CliffordGate,
    ExpGate,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
    noise,
)

TOLERANCES = (1e-2, 1e-3)

# --------------------------------------------------------------------------------------------
# Workloads: (kind, Pauli label or channel, angle) in circuit order
# --------------------------------------------------------------------------------------------


def label(n: int, letters: dict[int, str]) -> str:
    return "".join(letters.get(q, "I") for q in range(n))


def hea(n: int, reps: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    items = []
    for r in range(reps + 1):
        for q in range(n):
            items.append(("rot", label(n, {q: "Y"}), rng.uniform(-1, 1)))
        for q in range(n):
            items.append(("rot", label(n, {q: "Z"}), rng.uniform(-1, 1)))
        if r < reps:
            items += [("cx", (q, q + 1), None) for q in range(n - 1)]
    obs = {label(n, {q: c, q + 1: c}): 1.0 for q in range(n - 1) for c in "XYZ"}
    return {"n": n, "items": items, "observable": obs, "desc": f"HEA {n}q reps={reps} seed={seed}"}


def grid_bonds(lx: int, ly: int) -> list[tuple[int, int]]:
    bonds = []
    for y in range(ly):
        for x in range(lx):
            q = x + lx * y
            if x + 1 < lx:
                bonds.append((q, q + 1))
            if y + 1 < ly:
                bonds.append((q, q + lx))
    return bonds


def tfim(lx: int, ly: int, steps: int, dt: float = 0.1, h: float = 3.0, depolarizing=None) -> dict:
    n = lx * ly
    items = []
    for _ in range(steps):
        items += [("rot", label(n, {a: "Z", b: "Z"}), dt) for a, b in grid_bonds(lx, ly)]
        items += [("rot", label(n, {q: "X"}), h * dt) for q in range(n)]
        if depolarizing:
            items += [("channel", noise.depolarizing(depolarizing, q), None) for q in range(n)]
    obs = {label(n, {q: "Z"}): 1.0 / n for q in range(n)}
    noisy = f", depolarizing {depolarizing}" if depolarizing else ""
    return {
        "n": n,
        "items": items,
        "observable": obs,
        "desc": f"TFIM {lx}x{ly} {steps} steps{noisy}",
    }


def random_rotations(n: int, count: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(count):
        qubits = rng.choice(n, size=int(rng.integers(1, 4)), replace=False)
        items.append(
            (
                "rot",
                label(n, {int(q): "XYZ"[rng.integers(3)] for q in qubits}),
                rng.uniform(-1.5, 1.5),
            )
        )
    obs = {}
    for _ in range(4):
        qubits = rng.choice(n, size=int(rng.integers(1, 3)), replace=False)
        obs[label(n, {int(q): "XYZ"[rng.integers(3)] for q in qubits})] = float(rng.uniform(-1, 1))
    return {
        "n": n,
        "items": items,
        "observable": obs,
        "desc": f"random rotations {n}q x{count} seed={seed}",
    }


def kicked_chain(n: int, steps: int, kick: float = 0.6, bond: float = 0.4) -> dict:
    items = []
    for _ in range(steps):
        items += [("rot", label(n, {q: "X"}), kick) for q in range(n)]
        items += [("rot", label(n, {q: "Z", q + 1: "Z"}), bond) for q in range(n - 1)]
    obs = {label(n, {n // 2: "Z"}): 1.0}
    return {
        "n": n,
        "items": items,
        "observable": obs,
        "desc": f"kicked Ising chain {n}q {steps} steps",
    }


def kicked_clifford(lx: int, ly: int, steps: int, kick: float = 0.6) -> dict:
    n = lx * ly
    items = []
    for _ in range(steps):
        items += [("rot", label(n, {q: "X"}), kick) for q in range(n)]
        items += [("clifford", label(n, {a: "Z", b: "Z"}), None) for a, b in grid_bonds(lx, ly)]
    centre = lx // 2 + lx * (ly // 2)
    obs = {label(n, {centre: "Z"}): 1.0}
    return {
        "n": n,
        "items": items,
        "observable": obs,
        "desc": f"kicked Ising {lx}x{ly} rzz(-pi/2) {steps} steps",
    }


def hubbard(sites: int, steps: int, dt: float = 0.25, hop: float = 1.0, u: float = 4.0) -> dict:
    """Spinful chain, modes 2i (up) and 2i+1 (down); Jordan-Wigner Pauli labels, run as
    Majorana monomials. Neel filling, observable n_0 = (1 - Z_0) / 2."""
    n = 2 * sites
    items = []

    def hopping(a: int, b: int) -> list[str]:  # a < b: X Z..Z X and Y Z..Z Y
        between = {q: "Z" for q in range(a + 1, b)}
        return [label(n, {a: c, b: c, **between}) for c in "XY"]

    for _ in range(steps):
        for i in range(sites - 1):
            for spin in (0, 1):
                for term in hopping(2 * i + spin, 2 * i + 2 + spin):
                    items.append(("rot", term, -0.5 * hop * dt))
        for i in range(sites):
            items.append(("rot", label(n, {2 * i: "Z", 2 * i + 1: "Z"}), 0.25 * u * dt))
    occupied = [2 * i + (i % 2) for i in range(sites)]
    obs = {label(n, {}): 0.5, label(n, {0: "Z"}): -0.5}
    return {
        "n": n,
        "items": items,
        "observable": obs,
        "occupied": occupied,
        "majorana": True,
        "desc": f"Fermi-Hubbard {sites} sites {steps} steps (Majorana)",
    }


def workloads(quick: bool, only=None) -> list[tuple[str, dict, list[str]]]:
    """(name, workload, pictures), of the names in `only` where given."""
    out = [
        ("hea", hea(10 if quick else 12, 2, 0), ["heisenberg"]),
        ("hea", hea(10 if quick else 12, 2, 1), ["heisenberg"]),
        ("tfim", tfim(4, 3, 4), ["heisenberg", "schrodinger"]),
        ("random", random_rotations(10 if quick else 12, 50, 0), ["heisenberg"]),
        ("random", random_rotations(10 if quick else 12, 50, 1), ["heisenberg"]),
        ("kicked", kicked_chain(10 if quick else 12, 5), ["heisenberg"]),
        ("kicked-clifford", kicked_clifford(4, 3, 4), ["heisenberg"]),
        ("noisy-tfim", tfim(3, 3, 5, depolarizing=0.01), ["heisenberg"]),
        ("hubbard", hubbard(4, 4), ["heisenberg", "schrodinger"]),
    ]
    return [w for w in out if only is None or w[0] in only]


# --------------------------------------------------------------------------------------------
# Circuits, propagators and exact values
# --------------------------------------------------------------------------------------------


def operator(wl: dict, terms: dict[str, float]):
    op = PauliOperator(dict(terms), wl["n"])
    return op.get_majorana_operator() if wl.get("majorana") else op


def circuit(wl: dict, angles=None) -> Circuit:
    n, gates, bound = wl["n"], [], []
    for kind, what, angle in wl["items"]:
        if kind == "rot":
            gates.append(ExpGate(operator(wl, {what: 1.0})))
            bound.append(angle)
        elif kind == "cx":
            gates.append(CliffordGate.cx(what[0], what[1], n))
        elif kind == "clifford":
            gates.append(CliffordGate(operator(wl, {what: 1.0})))  # rzz(-pi/2) = exp(+i pi/4 ZZ)
        else:
            gates.append(what)
    return Circuit(gates, n, parameters=list(bound if angles is None else angles))


def angles_of(wl: dict) -> np.ndarray:
    return np.array([a for kind, _, a in wl["items"] if kind == "rot"], dtype=float)


def propagator(wl: dict, picture: str, atol: float | None, **options):
    n = wl["n"]
    cls = MajoranaPropagator if wl.get("majorana") else PauliPropagator
    full = 2 * n if wl.get("majorana") else n
    config = {"cutoff": full, "lower_atol": atol, **options}
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = 2 * n
    return cls(operator(wl, wl["observable"]), list(wl.get("occupied", [])), **config)


def pauli_apply(psi: np.ndarray, text: str) -> np.ndarray:
    """P |psi> for a Pauli label, qubit q at bit q of the index."""
    index = np.arange(psi.size)
    x = z = y = 0
    for q, c in enumerate(text):
        if c in "XY":
            x |= 1 << q
        if c in "ZY":
            z |= 1 << q
        if c == "Y":
            y += 1
    parity = np.zeros(psi.size, dtype=np.int64)
    bits = index & z
    while np.any(bits):
        parity ^= bits & 1
        bits >>= 1
    out = np.empty_like(psi)
    out[index ^ x] = (1j**y) * np.where(parity, -1.0, 1.0) * psi
    return out


def statevector_value(wl: dict, angles) -> float:
    """<psi|O|psi> for the circuit applied to |occupied>, gates exp(+i theta P) in order."""
    n = wl["n"]
    psi = np.zeros(2**n, dtype=complex)
    psi[sum(1 << q for q in wl.get("occupied", []))] = 1.0
    angles = iter(angles)

    def turn(text: str, theta: float) -> None:
        nonlocal psi
        psi = math.cos(theta) * psi + 1j * math.sin(theta) * pauli_apply(psi, text)

    for kind, what, _ in wl["items"]:
        if kind == "rot":
            turn(what, next(angles))
        elif kind == "cx":  # exp(i pi/4) exp(-i pi/4 Z_c) exp(-i pi/4 X_t) exp(+i pi/4 Z_c X_t)
            c, t = what
            turn(label(n, {c: "Z", t: "X"}), math.pi / 4)
            turn(label(n, {c: "Z"}), -math.pi / 4)
            turn(label(n, {t: "X"}), -math.pi / 4)
        elif kind == "clifford":
            turn(what, math.pi / 4)
        else:
            raise ValueError("noise: no state vector")
    return float(
        sum(h * np.vdot(psi, pauli_apply(psi, text)).real for text, h in wl["observable"].items())
    )


def exact_value(wl: dict, picture: str, angles) -> float:
    if not wl.get("majorana") and all(kind != "channel" for kind, _, _ in wl["items"]):
        return statevector_value(wl, angles)
    prop = propagator(wl, picture, None)
    prop.propagate(circuit(wl, angles))
    return prop.expectation_value()


# --------------------------------------------------------------------------------------------
# Accuracy
# --------------------------------------------------------------------------------------------


def accuracy(quick: bool, only=None) -> list[dict]:
    rows = []
    rng = np.random.default_rng(2026)
    print("accuracy: |exact - value| against the estimate and the bound")
    print(
        f"{'case':58s} {'actual':>9s} {'estimate':>9s} {'est/act':>8s} {'bound':>9s} "
        f"{'bnd/act':>9s}"
    )
    for name, wl, pictures in workloads(quick, only):
        theta = angles_of(wl)
        nearby = theta + rng.normal(0.0, 0.05, size=theta.size)
        for picture in pictures:
            exact = {
                "seed": exact_value(wl, picture, theta),
                "nearby": exact_value(wl, picture, nearby),
            }
            for atol in TOLERANCES:
                prop = propagator(wl, picture, atol)
                prop.propagate(circuit(wl))
                cases = [
                    ("propagate", prop.expectation_value(), prop.truncation_error(), exact["seed"])
                ]
                graph = propagator(wl, picture, atol)
                graph.build_graph(circuit(wl))  # seeded at the circuit's bound angles
                for where, x in (("seed", theta), ("nearby", nearby)):
                    fn = graph.expectation_value_functional(with_error=True)
                    value, error = fn(x)
                    cases.append((f"graph at {where}", value, error, exact[where]))
                for how, value, error, reference in cases:
                    row = {
                        "workload": name,
                        "case": f"{wl['desc']}, {picture[:5]}., atol={atol:g}, {how}",
                        "actual": abs(value - reference),
                        "estimate": float(error.estimate),
                        "bound": float(error.bound),
                    }
                    rows.append(row)
                    print_row(row)
    summarize(rows)
    return rows


def ratio(x: float, actual: float) -> float:
    if actual <= 1e-13:
        return 1.0 if x <= 1e-13 else math.inf
    return x / actual


def print_row(row: dict) -> None:
    est, bnd = ratio(row["estimate"], row["actual"]), ratio(row["bound"], row["actual"])
    print(
        f"{row['case'][:58]:58s} {row['actual']:9.2e} {row['estimate']:9.2e} {est:8.2f} "
        f"{row['bound']:9.2e} {bnd:9.1f}",
        flush=True,
    )


def summarize(rows: list[dict]) -> None:
    truncated = [r for r in rows if r["bound"] > 0.0]
    est = [ratio(r["estimate"], r["actual"]) for r in truncated]
    bnd = [ratio(r["bound"], r["actual"]) for r in truncated if r["actual"] > 1e-13]
    within = sum(1 for e in est if 1 / 3 <= e <= 3)
    print(
        f"summary: {len(truncated)} truncated cases; estimate within 3x of the actual error in "
        f"{within} ({within / len(truncated):.0%}); median estimate/actual "
        f"{statistics.median(est):.2f}; under 1/3: {sum(e < 1 / 3 for e in est)}, over 3: "
        f"{sum(e > 3 for e in est)}; median bound/actual {statistics.median(bnd):.1f} "
        f"(min {min(bnd):.1f}, max {max(bnd):.3g})"
    )


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if r["bound"] > 0.0 and r["actual"] > 1e-13]
    actual = np.array([r["actual"] for r in shown])
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.loglog(actual, [r["bound"] for r in shown], "v", label="bound", alpha=0.7)
    ax.loglog(actual, [r["estimate"] for r in shown], "o", label="estimate", alpha=0.7)
    lo, hi = actual.min() / 3, max(r["bound"] for r in shown) * 3
    line = np.array([lo, hi])
    ax.loglog(line, line, "k-", lw=1, label="actual")
    ax.fill_between(line, line / 3, line * 3, color="0.85", label="within 3x")
    ax.set_xlabel("actual error |exact - value|")
    ax.set_ylabel("error bar")
    ax.set_title("truncation_error on the benchmark workloads")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


# --------------------------------------------------------------------------------------------
# Budget
# --------------------------------------------------------------------------------------------


def budget(quick: bool, only=None) -> None:
    if "max_error" not in PauliPropagator.propagate.__code__.co_varnames:
        print("budget: this monoprop has no max_error")
        return
    print("budget: propagate(max_error=eps) against uniform lower_atol at the same actual error")
    honoured = total = 0
    ratios = []  # uniform terms over the budget's, where a uniform run reached its error
    for _, wl, pictures in workloads(quick, only):
        picture = pictures[0]
        reference = exact_value(wl, picture, angles_of(wl))
        uniform = []
        for atol in (3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6):
            prop = propagator(wl, picture, atol)
            prop.propagate(circuit(wl))
            uniform.append((abs(prop.expectation_value() - reference), prop.size()))
            if prop.size() > 2_000_000:  # finer ones would take minutes and gigabytes
                break
        for eps in (1e-1, 1e-2, 1e-3):
            for rigorous in (False, True):
                prop = propagator(wl, picture, None)
                began = time.perf_counter()
                prop.propagate(circuit(wl), max_error=eps, rigorous=rigorous)
                took = time.perf_counter() - began
                actual = abs(prop.expectation_value() - reference)
                error = prop.truncation_error()
                kept = prop.size()
                same = matched_terms(uniform, actual)
                if same is not None:
                    ratios.append(same / kept)
                total += 1
                honoured += actual <= eps
                print(
                    f"  {wl['desc'][:40]:40s} eps={eps:g} "
                    f"{'bound' if rigorous else 'estimate':8s}: "
                    f"actual {actual:.2e} estimate {error.estimate:.2e} bound {error.bound:.2e}, "
                    f"{kept} terms ({took:.2f} s); uniform lower_atol at that error: "
                    f"{'-' if same is None else f'{same:.0f} terms ({same / kept:.1f}x)'}",
                    flush=True,
                )
    print(f"budget: actual error within eps in {honoured} of {total} runs")
    if ratios:
        print(
            f"budget: fewer terms than the uniform lower_atol at the same actual error in "
            f"{sum(r > 1 for r in ratios)} of {len(ratios)} runs with a uniform match; "
            f"median ratio {statistics.median(ratios):.1f}x"
        )


def matched_terms(uniform: list[tuple[float, int]], actual: float) -> float | None:
    """Terms the uniform tolerance keeps at actual error `actual`, interpolated log-log between
    the tolerances run (None where `actual` lies outside them). The uniform error is not
    monotone in the tolerance; the interpolation uses the points sorted by error."""
    points = sorted((e, t) for e, t in uniform if e > 0)
    if actual <= 0 or not points or actual < points[0][0]:
        return None
    if actual >= points[-1][0]:
        return float(min(t for _, t in points))
    for (e0, t0), (e1, t1) in itertools.pairwise(points):
        if e0 <= actual <= e1:
            f = math.log(actual / e0) / math.log(e1 / e0) if e1 > e0 else 0.0
            return math.exp(math.log(t0) + f * (math.log(t1) - math.log(t0)))
    return None


# --------------------------------------------------------------------------------------------
# Cost
# --------------------------------------------------------------------------------------------


def best_of(fn, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - began)
    return best


def cost(n: int, steps: int, atol: float, calls: int) -> None:
    wl = kicked_chain(n, steps)
    prop = propagator(wl, "heisenberg", atol)
    if prop.num_threads > 1:
        prop._engine._set_small_work(0)  # the team's per-shard sweep, however small the graph
    prop.build_graph(circuit(wl))
    point = angles_of(wl) * 1.05
    plain = prop.expectation_value_functional()
    bounded = prop.expectation_value_functional(with_error=True)
    for fn in (plain, bounded):  # warm the replay buffers
        fn(point)
    t_plain = best_of(lambda: [plain(point) for _ in range(calls)], 7) / calls
    t_bound = best_of(lambda: [bounded(point) for _ in range(calls)], 7) / calls
    print(
        f"  T={prop.num_threads} n={n} steps={steps} lower_atol={atol:g} "
        f"entries={sum(prop.graph_size())}: value {t_plain * 1e3:.3f} ms, "
        f"with error {t_bound * 1e3:.3f} ms, ratio {t_bound / t_plain:.3f}",
        flush=True,
    )


def costs(quick: bool) -> None:
    print("cost: a value replay with its error bars over the value alone (target at most 1.5x)")
    sizes = [(12, 4, 1e-3, 200), (16, 6, 1e-4, 5)] + ([] if quick else [(20, 8, 1e-5, 1)])
    for threads in (1, 2):
        for n, steps, atol, calls in sizes:
            env = dict(os.environ, monoprop_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
            child = [str(n), str(steps), str(atol), str(calls)]
            subprocess.run([sys.executable, __file__, "--child", *child], env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10-qubit HEA and random circuits")
    parser.add_argument(
        "--plot", metavar="PATH", help="estimate and bound against actual error (PNG)"
    )
    parser.add_argument("--json", metavar="PATH", help="the accuracy rows, as JSON")
    parser.add_argument("--only", metavar="NAMES", help="comma-separated workloads (default: all)")
    parser.add_argument("--no-accuracy", action="store_true")
    parser.add_argument("--no-cost", action="store_true")
    parser.add_argument("--no-budget", action="store_true")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, steps, atol, calls = args.child
        cost(int(n), int(steps), float(atol), int(calls))
        return
    print(f"monoprop {monoprop.__version__} from {os.path.dirname(monoprop.__file__)}")
    only = args.only.split(",") if args.only else None
    if not args.no_accuracy:
        rows = accuracy(args.quick, only)
        if args.json:
            with open(args.json, "w") as out:
                json.dump(rows, out, indent=1)
        if args.plot:
            plot(rows, args.plot)
    if not args.no_budget:
        budget(args.quick, only)
    if not args.no_cost:
        costs(args.quick)


if __name__ == "__main__":
    main()
