"""A slow, plainly written Pauli propagator with monoprop's truncation rule.

Independent of monoprop: Pauli strings are full-width letter strings, products are
computed letter by letter, and the rule is written out as MonomialPropagator's docstring
(monoprop/monomial_propagator.py) states it. For a layer exp(+i theta G) (Heisenberg,
phi = 2 theta, sn = sin phi, cs = cos phi) and each term P anticommuting with G:

* P is *active* when ``|sn * c_P| > lower_atol`` (always without lower_atol);
* an active P tests its partner Q ~ P G: ``weight(Q) <= cutoff``, or Q is a Z-string,
  or ``|sn * c_P| > upper_atol``; if Q passes, P *asks* for it;
* a pair {P, Q} of held terms rotates both ways when at least one of them asked;
  an asking P whose Q is not held gives birth to Q; every other anticommuting term is
  only scaled by cs.
"""

from __future__ import annotations

import math

# Single-qubit products: (a, b) -> (phase, letter) with a * b = phase * letter.
_TABLE = (
    {("I", x): (1, x) for x in "IXYZ"}
    | {(x, "I"): (1, x) for x in "XYZ"}
    | {(x, x): (1, "I") for x in "XYZ"}
    | {
        ("X", "Y"): (1j, "Z"),
        ("Y", "Z"): (1j, "X"),
        ("Z", "X"): (1j, "Y"),
        ("Y", "X"): (-1j, "Z"),
        ("Z", "Y"): (-1j, "X"),
        ("X", "Z"): (-1j, "Y"),
    }
)


def random_string(rng, n: int) -> str:
    """A random non-identity Pauli string of n letters (``rng`` a numpy Generator)."""
    s = "".join("IXYZ"[i] for i in rng.integers(0, 4, size=n))
    return s if s.strip("I") else "Z" + s[1:]


def product(p: str, g: str) -> tuple[complex, str]:
    phase, letters = 1, []
    for a, b in zip(p, g, strict=True):
        f, c = _TABLE[(a, b)]
        phase *= f
        letters.append(c)
    return phase, "".join(letters)


def anticommutes(p: str, g: str) -> bool:
    return sum(a != "I" and b != "I" and a != b for a, b in zip(p, g, strict=True)) % 2 == 1


def weight(p: str) -> int:
    return sum(a != "I" for a in p)


def apply_layer(
    ops: dict[str, float],
    g: str,
    theta: float,
    cutoff: int,
    lower=None,
    upper=None,
    births_above=None,
):
    """One Heisenberg layer exp(+i theta G); returns the new operator.

    ``births_above`` (a memory truncation): an asking P whose Q is not held gives birth to Q
    only when ``|sn * c_P| > births_above``; otherwise P is only scaled by cs. Pairs of held
    terms rotate whatever their weight."""
    phi = 2 * theta
    sn, cs = math.sin(phi), math.cos(phi)
    new = dict(ops)
    asking = {}
    for p, c in ops.items():
        if not anticommutes(p, g):
            continue
        new[p] = cs * c  # quiet until a pair says otherwise
        moved = abs(sn * c)
        if lower is not None and not moved > lower:
            continue
        phase, q = product(p, g)
        s = (1j * phase).real  # i P G = s Q
        if weight(q) <= cutoff or set(q) <= {"I", "Z"} or (upper is not None and moved > upper):
            asking[p] = (q, s)
    for p, (q, s) in asking.items():
        if q in ops:  # a pair (both asked: the same rotation twice, written once)
            new[p] = cs * ops[p] - s * sn * ops[q]
            new[q] = cs * ops[q] + s * sn * ops[p]
        elif births_above is None or abs(sn * ops[p]) > births_above:  # a birth
            new[q] = s * sn * ops[p]
    return new


def propagate(observable: dict[str, float], gates, cutoff: int, lower=None, upper=None):
    """``gates`` = [(generator string, theta)] in application order; Heisenberg."""
    ops = dict(observable)
    for g, theta in reversed(gates):
        ops = apply_layer(ops, g, theta, cutoff, lower, upper)
    return ops


def apply_clifford(ops: dict[str, float], g: str, k: int) -> dict[str, float]:
    """The quarter turns exp(+i k pi/4 G), exactly: each anticommuting P becomes
    sin(k pi/2) s (P G) for odd k (i P G = s Q), or -P for k = 2; no term is added or cut."""
    new = {}
    for p, c in ops.items():
        if not anticommutes(p, g) or k % 4 == 0:
            new[p] = c
        elif k % 4 == 2:
            new[p] = -c
        else:
            phase, q = product(p, g)
            s = (1j * phase).real
            new[q] = (1 if k % 4 == 1 else -1) * s * c
    return new


def propagate_mixed(observable: dict[str, float], gates, cutoff: int, lower=None, upper=None):
    """``gates`` = [("rotation", G, theta) or ("clifford", G, k)] in application order."""
    ops = dict(observable)
    for kind, g, value in reversed(gates):
        if kind == "clifford":
            ops = apply_clifford(ops, g, value)
        else:
            ops = apply_layer(ops, g, value, cutoff, lower, upper)
    return ops
