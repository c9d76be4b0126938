"""The truncation error of a value: a rigorous bound, and an estimate of its typical size."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class TruncationError(NamedTuple):
    """How far a truncated value can be from the untruncated one.

    ``bound`` is rigorous: ``|exact - value| <= bound``, where ``exact`` is what the same
    circuit gives without truncation. Every term the engine drops is the sine branch
    ``sin(phi) c M'`` of a term ``c M`` that a rotation (or a noise transfer) only scaled: the
    error telescopes to a sum of the exact later images of these branches, later gates and
    channels never raise an operator's norm, and a monomial has norm 1, so the sum of
    ``|sin(phi) c|`` over them bounds it. Two things make it tighter, both exact:

    * a *dark* branch counts 0. The gates after a branch can only mix it with the monomials
      their generators span, so its image stays in the coset ``M' + span(G)``. In the
      Heisenberg picture a monomial reaches a computational-basis state only where it pairs
      every mode (Z, or ``i g_2k g_2k+1``), so a branch whose coset holds no fully paired
      monomial contributes exactly 0; in the Schrödinger picture the same holds for a coset
      that misses the span of the observable's terms. Clifford gates carry the cosets along.
    * the error is at most ``||O - h_I|| + |value - h_I|`` (``h_I`` the observable's identity
      coefficient, ``||O - h_I||`` at most the sum of ``|h|`` over its other terms), since the
      exact value lies within ``||O - h_I||`` of ``h_I``.

    In the Schrödinger picture the dropped branches belong to the state, and each carries
    the observable's norm, bounded by the sum of ``|h|`` over its non-identity terms
    (``schrodinger_cutoff`` below the width also drops terms of the initial state: each counts
    in full).

    ``estimate`` models the typical error: ``0.7 sqrt(sum (w sin(phi) c)^2)`` over the branches
    that are not dark, each weighed by its *reach* ``w``, how likely its later image is to
    overlap the state. In the Heisenberg picture ``w = 0.2^u``, with ``u`` the modes the
    branch leaves unpaired (an X or Y on a qubit), each of which a later gate must still pair;
    in the Schrödinger picture ``w = max over the observable's terms P of (|h_P| / sum |h|)
    0.1^d``, with ``d`` the modes in which the branch differs from ``P`` (for an observable of
    more than 64 terms, ``0.1^d`` with ``d`` the modes it touches past the widest term's). A
    graph weighs each layer's dropped branches by their mean reach at its seed. The factors
    were fitted on the benchmark workloads (``benchmarks/truncation_error.py``), where the
    estimate came within 3x of the actual error in 71% of the cases; it is a model, not a
    bound, and a single actual error can exceed it. Branches dropped before later layers were
    applied (a graph extended by another ``build_graph``) count with ``w = 1``.

    Both are exactly ``0.0`` when nothing was dropped. For a batch of parameter points (a 2-D
    array, one row a point) both are ``(K,)`` arrays, one entry a row.

    >>> from monoprop import TruncationError
    >>> TruncationError(0.25, 0.125).bound
    0.25
    """

    bound: float | np.ndarray
    estimate: float | np.ndarray
