"""Electronic-structure integrals to a second-quantised :class:`FermiOperator`."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from monoprop.fermi import FermiOperator
from monoprop.validation import check_finite, check_finite_array

__all__ = ["integrals_to_fermion"]

# Coefficients at or below this magnitude are left out of the operator.
_DROP_ATOL = 1e-12


def integrals_to_fermion(h0: float, h1: ArrayLike, h2: ArrayLike) -> FermiOperator:
    """Build ``H = h0 + sum h1 a^† a + 1/2 sum (pq|rs) a_p^† a_r^† a_s a_q`` on 2k modes.

    Unrestricted spatial-orbital integrals: ``h1`` has shape ``(2, k, k)`` (alpha, beta)
    and ``h2`` shape ``(3, k, k, k, k)`` in chemists' notation ``(pq|rs)``, with blocks
    indexed as the terms below use them: ``h2[0]`` alpha-alpha, ``h2[1]`` the opposite-
    spin block (p, q alpha; r, s beta), ``h2[2]`` beta-beta. Spin-orbitals: alpha
    ``0..k-1``, beta ``k..2k-1``.

    With ``hh[σ,p,q,r,s] = h2[σ,p,s,q,r]`` the terms are: identity ``h0``; one-body
    ``((p,'+'),(q,'-'))`` (shifted by k for beta); same spin, for ``p<q`` and ``r<s``,
    ``((p,'+'),(q,'+'),(r,'-'),(s,'-'))`` with ``C/2``, where
    ``C = hh[pqrs] - hh[pqsr] - hh[qprs] + hh[qpsr]``; opposite spin, for all p, q, r, s,
    ``((p,'+'),(q+k,'+'),(r+k,'-'),(s,'-'))`` with ``hh[1,p,q,r,s]``. Coefficients with
    ``|c| <= 1e-12`` are dropped. A NaN or infinite ``h0`` or integral raises ``ValueError``
    naming it (a NaN would otherwise be dropped silently).

    >>> import numpy as np
    >>> h1 = np.zeros((2, 1, 1)); h1[:, 0, 0] = -1.0
    >>> h2 = np.zeros((3, 1, 1, 1, 1)); h2[1] = 0.5
    >>> integrals_to_fermion(0.25, h1, h2)  # doctest: +NORMALIZE_WHITESPACE
    FermiOperator(4 terms, 2 modes: 0.25*FermiString(), -1.0*FermiString(c_0^+ c_0^-),
    -1.0*FermiString(c_1^+ c_1^-), 0.5*FermiString(c_0^+ c_1^+ c_1^- c_0^-))
    """
    one_body = np.asarray(h1)
    two_body = np.asarray(h2)
    if one_body.ndim != 3 or one_body.shape[0] != 2 or one_body.shape[1] != one_body.shape[2]:
        raise ValueError(
            f"h1 must have shape (2, k, k) (alpha and beta one-body integrals); "
            f"got {one_body.shape}."
        )
    k = one_body.shape[1]
    if two_body.shape != (3, k, k, k, k):
        raise ValueError(
            f"h2 must have shape (3, k, k, k, k) = {(3, k, k, k, k)} to match h1 with k={k}; "
            f"got {two_body.shape}."
        )
    fix = "pass finite integrals"
    check_finite(h0, "h0", fix=fix)
    check_finite_array(one_body, "h1", fix=fix)
    check_finite_array(two_body, "h2", fix=fix)
    hh = two_body.transpose(0, 1, 3, 4, 2)  # hh[σ,p,q,r,s] = (ps|qr)_σ
    terms: dict[tuple, complex | float] = {}

    def add(key: tuple, value: Any) -> None:
        value = value.item() if isinstance(value, np.generic) else value
        if abs(value) > _DROP_ATOL:
            terms[key] = terms.get(key, 0) + value

    add((), h0)
    for spin, shift in ((0, 0), (1, k)):
        for p, q in itertools.product(range(k), repeat=2):
            add(((p + shift, "+"), (q + shift, "-")), one_body[spin, p, q])
    for sigma, shift in ((0, 0), (2, k)):
        block = hh[sigma]
        for (p, q), (r, s) in itertools.product(itertools.combinations(range(k), 2), repeat=2):
            c = block[p, q, r, s] - block[p, q, s, r] - block[q, p, r, s] + block[q, p, s, r]
            key = ((p + shift, "+"), (q + shift, "+"), (r + shift, "-"), (s + shift, "-"))
            add(key, c / 2)
    for p, q, r, s in itertools.product(range(k), repeat=4):
        add(((p, "+"), (q + k, "+"), (r + k, "-"), (s, "-")), hh[1, p, q, r, s])
    return FermiOperator.from_dict(terms, 2 * k)
