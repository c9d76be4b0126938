"""The import path ``monoprop.utils`` of :func:`jordan_wigner_basis_change`, kept for scripts
that use it; the function lives in :mod:`monoprop.encoding` with the slot encoding it is
written in, and ``monoprop`` exports it too.

>>> from monoprop.utils import jordan_wigner_basis_change
>>> jordan_wigner_basis_change(1)
[[0], [1]]
"""

from monoprop.encoding import jordan_wigner_basis_change

__all__ = ["jordan_wigner_basis_change"]
