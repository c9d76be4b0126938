#!/usr/bin/env python
"""Truncation decisions of monoprop and of the other engine with this API, case by case.

``versus.py`` compares speed on large workloads; this script checks the rule both
engines truncate by, on small cases that pin it down one decision at a time, and on
random circuits where many terms sit near ``lower_atol``. Each case runs in this
environment's monoprop and in the reference's (``monoprop==0.9.2``, in the venv
``versus.py`` makes), through the public API only; the evolved operators (terms and
coefficients), ``size()`` and ``graph_size()`` must agree.

Usage:  python benchmarks/versus_rules.py [--reference-venv DIR] [--random 40]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# A case: front, n, observable {key: coefficient} (Pauli strings, or Majorana index tuples
# with bare coefficients as [re, im]), gates [[{key: coeff}, angle], ...], config, route.
QUARTER = math.pi / 4


def pauli_case(name, observable, gates, route="propagate", n=None, state=(), **config):
    n = n or max(len(k) for k in [*observable, *(k for g, _ in gates for k in g)])
    return {
        "name": name,
        "front": "pauli",
        "n": n,
        "observable": observable,
        "gates": gates,
        "config": {"cutoff": n, **config},
        "route": route,
        "state": list(state),
    }


def majorana_case(name, observable, n, gates, route="propagate", **config):
    return {
        "name": name,
        "front": "majorana",
        "n": n,
        "observable": [[list(k), [v.real, v.imag]] for k, v in observable.items()],
        "gates": [[[[list(k), [v.real, v.imag]] for k, v in g.items()], t] for g, t in gates],
        "config": {"cutoff": 2 * n, **config},
        "route": route,
        "state": [],
    }


def cases() -> list[dict]:
    out = []
    for route in ("propagate", "graph"):
        small = {"Z": 1e-5, "Y": 2e-5}
        x = [[{"X": 1.0}, QUARTER]]
        for lower in (1e-4, 2e-5, 1e-5, 5e-6):
            out.append(pauli_case(f"held pair, lower {lower:g}", small, x, route, lower_atol=lower))
        for lower in (1.0, 0.999):
            out.append(
                pauli_case(f"birth at |sin c| = {lower:g}", {"Z": 1.0}, x, route, lower_atol=lower)
            )
        pair = {(0, 1): 1j, (0, 2): 1e-7j}
        for cutoff in (0, 1):
            for lower in (1e-3, 0.5, 10.0):
                out.append(
                    majorana_case(
                        f"held pair cutoff {cutoff} lower {lower:g}",
                        pair,
                        2,
                        [({(1, 2): 1j}, 0.3)],
                        route,
                        cutoff=cutoff,
                        lower_atol=lower,
                    )
                )
        a = {(0, 1): 1j}
        gate = [({(1, 2, 3, 4): 1.0}, math.pi / 6)]
        for config in (
            {"cutoff": 1, "upper_atol": 0.49},
            {"cutoff": 1, "upper_atol": 1.0},
            {"cutoff": 4, "lower_atol": 0.9},
            {"cutoff": 1, "lower_atol": 0.5, "upper_atol": 0.6},
        ):
            out.append(majorana_case(f"upper/lower {config}", a, 5, gate, route, **config))
        # A fully paired partner (Z0 Z1 from Y0 Z1 under X0) below lower_atol.
        for lower in (0.1, 0.9):
            out.append(
                pauli_case(
                    f"fully paired partner lower {lower:g}",
                    {"YZ": 1.0},
                    [[{"XI": 1.0}, 0.5]],
                    route,
                    state=[0],
                    cutoff=0,
                    lower_atol=lower,
                )
            )
        # only_rotate_len_k: a short active term whose held partner is long (a half).
        for coeff in (1.0, 1e-6):
            out.append(
                {
                    **majorana_case(
                        f"half, c = {coeff:g}",
                        {(0, 2): 1j * coeff, (0, 1, 2, 3): 0.5},
                        2,
                        [({(1, 3): 1j}, 0.4)],
                        route,
                        lower_atol=1e-4,
                    ),
                    "only_rotate_len_k": 2,
                }
            )
        # Schrodinger: the state's terms are the operand.
        out.append(
            pauli_case(
                "schrodinger",
                {"ZZ": 1.0, "XI": 0.3},
                [[{"XY": 1.0}, 0.2], [{"YI": 1.0}, QUARTER - 1e-4]],
                route,
                cutoff=1,
                schrodinger_cutoff=2,
                lower_atol=1e-3,
            )
        )
    return out


def random_cases(count: int) -> list[dict]:
    import numpy as np

    out = []
    for seed in range(count):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(3, 6))

        def string(rng=rng, n=n):
            s = "".join("IXYZ"[i] for i in rng.integers(0, 4, size=n))
            return s if s.strip("I") else "Z" + s[1:]

        observable = {string(): float(c) for c in rng.normal(size=int(rng.integers(2, 6)))}
        gates = []
        for _ in range(int(rng.integers(6, 14))):
            angle = float(rng.choice([QUARTER, -QUARTER, rng.normal()]))
            gates.append([{string(): 1.0}, angle])
        lower = float(10 ** rng.uniform(-3, -0.5))
        config = {"lower_atol": lower, "cutoff": int(rng.integers(1, n + 1))}
        if rng.random() < 0.3:
            config["upper_atol"] = lower * float(rng.uniform(1, 5))
        route = "graph" if seed % 2 else "propagate"
        out.append(pauli_case(f"random {seed}", observable, gates, route, n=n, **config))
    return out


# --------------------------------------------------------------------------------------------
# Worker: runs the cases with whichever monoprop this interpreter imports
# --------------------------------------------------------------------------------------------


def run_case(case: dict) -> dict:
    import monoprop as mp

    n = case["n"]
    if case["front"] == "pauli":

        def operator(terms):
            return mp.PauliOperator(terms, n)

        observable = operator(case["observable"])
        cls = mp.PauliPropagator
    else:

        def operator(terms):
            return mp.MajoranaOperator({tuple(k): complex(*v) for k, v in terms}, n)

        observable = operator(case["observable"])
        cls = mp.MajoranaPropagator
    gates = [mp.ExpGate(operator(g)) for g, _ in case["gates"]]
    angles = [t for _, t in case["gates"]]
    circuit = mp.Circuit(gates, n, parameters=angles)
    prop = cls(observable, case["state"], **case["config"])
    k = case.get("only_rotate_len_k")
    extra = {"only_rotate_len_k": k} if k else {}
    if case["route"] == "propagate":
        prop.propagate(circuit, **extra)
        evolved = prop.evolved_operator(atol=0.0)
        value = prop.expectation_value()
    else:
        prop.build_graph(circuit, **extra)
        evolved = prop.evolved_operator(angles, atol=0.0)
        value = prop.expectation_value(angles)
    if case["front"] == "pauli":
        terms = {f"{p.string}{list(p.qubits)}": c for p, c in evolved.terms.items()}
    else:
        terms = {str(list(k)): [v.real, v.imag] for k, v in evolved.terms.items()}
    return {
        "terms": terms,
        "size": prop.size(),
        "graph_size": list(prop.graph_size()),
        "value": value,
    }


def worker(path: str) -> None:
    results = [run_case(case) for case in json.loads(Path(path).read_text())]
    print("RESULT " + json.dumps(results))


# --------------------------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------------------------


def run_all(python: Path, path: Path) -> list[dict]:
    proc = subprocess.run(
        [str(python), __file__, "--worker", str(path)],
        capture_output=True,
        text=True,
        cwd="/",
        timeout=600,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    sys.exit(f"{python} failed: {proc.stderr[-2000:]}")


def differences(a: dict, b: dict) -> list[str]:
    out = []
    if set(a["terms"]) != set(b["terms"]):
        out.append(
            f"terms only ours {sorted(set(a['terms']) - set(b['terms']))}, only "
            f"reference {sorted(set(b['terms']) - set(a['terms']))}"
        )
    for key in set(a["terms"]) & set(b["terms"]):
        x, y = a["terms"][key], b["terms"][key]
        if (
            max(
                abs(u - v)
                for u, v in zip(
                    x if isinstance(x, list) else [x],
                    y if isinstance(y, list) else [y],
                    strict=True,
                )
            )
            > 1e-11
        ):
            out.append(f"{key}: {x} vs {y}")
    for field in ("size", "graph_size"):
        if a[field] != b[field]:
            out.append(f"{field} {a[field]} vs {b[field]}")
    if abs(a["value"] - b["value"]) > 1e-11:
        out.append(f"value {a['value']} vs {b['value']}")
    return out


def main() -> int:
    sys.path.insert(0, str(HERE))
    from versus import DEFAULT_VENV, reference_python

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference-venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--random", type=int, default=40, help="random circuits (default 40)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker)
        return 0
    import tempfile

    all_cases = cases() + random_cases(args.random)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(all_cases, fh)
    ours = run_all(Path(sys.executable), Path(fh.name))
    ref = run_all(reference_python(args.reference_venv), Path(fh.name))
    failed = 0
    for case, a, b in zip(all_cases, ours, ref, strict=True):
        diff = differences(a, b)
        failed += bool(diff)
        status = "same" if not diff else "DIFFER: " + "; ".join(diff)
        print(f"{case['route']:9s} {case['name']:45s} {status}")
    print(f"{len(all_cases) - failed} of {len(all_cases)} cases agree")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
