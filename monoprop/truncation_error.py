"""The truncation error of a value: a rigorous bound, and an estimate of its typical size."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class TruncationError(NamedTuple):
    """How far a truncated value can be from the untruncated one.

    ``bound`` is rigorous: ``|exact - value| <= bound`` for every state, where ``exact`` is
    what the same circuit gives without truncation. Every term the engine drops is the sine
    branch ``sin(phi) c M'`` of a term ``c M`` that a rotation (or a noise transfer) only
    scaled: the error telescopes to a sum of the exact later images of these branches, later
    gates and channels never raise an operator's norm, and a monomial has norm 1, so the
    bound is the sum of ``|sin(phi) c|`` over them. In the Schrödinger picture the dropped
    branches belong to the state, and each carries the observable's norm, bounded by the sum
    of ``|h|`` over its non-identity terms (``schrodinger_cutoff`` below the width also drops
    terms of the initial state: each counts with weight 1).

    ``estimate`` is ``sqrt(sum (sin(phi) c)^2)`` times the same factor: the typical error if
    the dropped branches' later contributions were independent with random signs. It is a
    model, not a bound: on the benchmark workloads (``benchmarks/truncation_error.py``) it lay
    between the actual error and the bound, 1 to 300 times above the actual error, but a
    single actual error can exceed it.

    Both are exactly ``0.0`` when nothing was dropped. For a batch of parameter points (a 2-D
    array, one row a point) both are ``(K,)`` arrays, one entry a row.

    >>> from monoprop import TruncationError
    >>> TruncationError(0.25, 0.125).bound
    0.25
    """

    bound: float | np.ndarray
    estimate: float | np.ndarray
