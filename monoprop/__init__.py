"""monoprop: Pauli and Majorana operator propagation with replayable graphs.

>>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
>>> circuit = Circuit([ExpGate(PauliOperator({"X": 1.0}, 2))], 2, parameters=[0.3])
>>> prop = PauliPropagator(PauliOperator({"ZZ": 1.0}, 2), [], cutoff=4)
>>> prop.build_graph(circuit)
>>> round(prop.expectation_value([0.3]), 12)
0.82533561491
"""

from importlib.util import find_spec

from . import noise
from ._core import (
    MAX_NUM_MODES,
    __build_type__,
    antihermitian_generator_correction,
    has_mpi,
    is_antihermitian,
)

# The version is a constant in _version.py (where the build reads it), so that importing monoprop
# costs no package-metadata lookup (50 ms, 4 MB).
from ._version import __version__
from .circuit import Circuit, ExpGate, expand_monomials, validate_parameter_mapping
from .clifford import CliffordGate
from .encoding import jordan_wigner_basis_change
from .exceptions import (
    InvalidPropagatorError,
    MultiShardUnsupported,
    NumberOfModesInvalidError,
    StaleFunctionalError,
    ToleranceWarning,
)
from .fermi import FermiOperator, FermiString
from .integral_conversion import integrals_to_fermion
from .majorana import Majorana, MajoranaOperator
from .majorana_propagator import MajoranaPropagator
from .monomial_propagator import MonomialPropagator
from .pauli import Pauli, PauliOperator
from .pauli_propagator import PauliPropagator
from .persistence import load
from .truncation_budget import error_budget
from .truncation_error import TruncationError

__all__ = [
    "MAX_NUM_MODES",
    "Circuit",
    "CliffordGate",
    "ExpGate",
    "FermiOperator",
    "FermiString",
    "InvalidPropagatorError",
    "MultiShardUnsupported",
    "Majorana",
    "MajoranaOperator",
    "MajoranaPropagator",
    "MonomialPropagator",
    "NumberOfModesInvalidError",
    "Pauli",
    "PauliOperator",
    "PauliPropagator",
    "StaleFunctionalError",
    "ToleranceWarning",
    "TruncationError",
    "__build_type__",
    "__version__",
    "antihermitian_generator_correction",
    "error_budget",
    "expand_monomials",
    "has_mpi",
    "integrals_to_fermion",
    "is_antihermitian",
    "jordan_wigner_basis_change",
    "load",
    "noise",
    "validate_parameter_mapping",
]

# The Qiskit conversions are exported when qiskit is installed, and imported on
# first use: importing qiskit takes a third of a second and 60 MB.
_QISKIT_NAMES = (
    "from_qiskit_circuit",
    "from_qiskit_operator",
    "to_qiskit_circuit",
    "to_qiskit_operator",
)
if find_spec("qiskit") is not None:
    __all__ += list(_QISKIT_NAMES)


def __getattr__(name: str):
    if name in _QISKIT_NAMES and name in __all__:
        from . import qiskit_conversion

        return getattr(qiskit_conversion, name)
    raise AttributeError(f"module 'monoprop' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
