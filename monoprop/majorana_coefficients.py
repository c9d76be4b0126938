"""Coefficient conventions of the two front-ends.

Majorana front-end: slot ``j`` is ``m_j``, and the core stores the real coefficient ``h``
of the Hermitian monomial ``M_S = i**C(w,2) m_S`` (``w`` factors: the reversed product is
``(-1)**C(w,2)`` times the product, and the phase makes it Hermitian), so a bare
coefficient ``c`` of ``m_S`` is ``h = c / i**C(w,2)``. Pauli front-end: qubit ``q`` owns
slots ``2q`` (X), ``2q+1`` (Y) and both (Z); the coefficient is the Pauli coefficient
itself. How terms cross into the core is :mod:`monoprop.core_arrays`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .encoding import HERMITIAN_ATOL, I_POWERS, hermitian_phase_exponent

# i ** k for k mod 4, as (real, imag) factors.
_PHASE_RE = np.array([z.real for z in I_POWERS])
_PHASE_IM = np.array([z.imag for z in I_POWERS])


def _phase_index(keys: Sequence[Sequence[int]]) -> np.ndarray:
    """``C(w, 2) mod 4`` for each key of ``w`` slots: ``M_S = i**that * m_S``."""
    return hermitian_phase_exponent(np.array([len(key) for key in keys], dtype=np.int64)) % 4


def bare_to_hermitian(keys: Sequence[Sequence[int]], coefficients: Sequence[complex]) -> np.ndarray:
    """Hermitian-basis coefficients ``h = c / i**C(w,2)``; raises on non-Hermitian input."""
    c = np.asarray(coefficients, dtype=np.complex128).reshape(-1)
    k = _phase_index(keys)
    # c / i**k = c * i**(-k)
    h = c * (_PHASE_RE[(-k) % 4] + 1j * _PHASE_IM[(-k) % 4])
    bad = np.abs(h.imag) > HERMITIAN_ATOL * np.maximum(1.0, np.abs(h.real))
    if np.any(bad):
        i = int(np.argmax(bad))
        raise RuntimeError(
            f"Non-Hermitian coeffs detected: term {tuple(keys[i])} has coefficient {c[i]!r}; a "
            "Hermitian operator has real coefficients on weights 0,1 (mod 4) and imaginary ones "
            "on weights 2,3 (mod 4)."
        )
    return np.ascontiguousarray(h.real)


def hermitian_to_bare(keys: Sequence[Sequence[int]], h: np.ndarray) -> list[complex]:
    """Bare-product coefficients ``c = h * i**C(w,2)``, each part rounded to 12 decimals."""
    k = _phase_index(keys)
    h = np.asarray(h, dtype=np.float64)
    re = np.round(h * _PHASE_RE[k], 12) + 0.0  # + 0.0 turns -0.0 into 0.0
    im = np.round(h * _PHASE_IM[k], 12) + 0.0
    return [complex(a, b) for a, b in zip(re.tolist(), im.tolist(), strict=True)]
