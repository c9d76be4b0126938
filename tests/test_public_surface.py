"""Every name of the public API contract imports, module by module.

The table below is the contract's list of modules and their public names, written out here so
that a refactor that drops, renames or moves one of them fails this test rather than the
scripts of the users who import it. ``monoprop.__all__`` must hold at least the names listed
for ``monoprop`` (it may hold more); the other modules must have each of their names as an
attribute, importable with ``from module import name``.
"""

from __future__ import annotations

import importlib
import importlib.util

import pytest

# module -> names the contract lists for it
CONTRACT: dict[str, tuple[str, ...]] = {
    "monoprop": (
        "MAX_NUM_MODES",
        "Circuit",
        "ExpGate",
        "FermiOperator",
        "FermiString",
        "Majorana",
        "MajoranaOperator",
        "MajoranaPropagator",
        "MonomialPropagator",
        "Pauli",
        "PauliOperator",
        "PauliPropagator",
        "__build_type__",
        "__version__",
        "antihermitian_generator_correction",
        "expand_monomials",
        "has_mpi",
        "integrals_to_fermion",
        "is_antihermitian",
        "jordan_wigner_basis_change",
        "validate_parameter_mapping",
        # exported at top level beyond the list above
        "MultiShardUnsupported",
        "StaleFunctionalError",
        "InvalidPropagatorError",
        "TruncationError",
    ),
    "monoprop.pauli": ("Pauli", "PauliOperator"),
    "monoprop.majorana": ("Majorana", "MajoranaOperator"),
    "monoprop.fermi": ("FermiString", "FermiOperator", "MajoranaOperator"),
    "monoprop.circuit": (
        "ExpGate",
        "Circuit",
        "validate_parameter_mapping",
        "expand_monomials",
        "GateFamily",
        "CircuitFamily",
    ),
    "monoprop.monomial_propagator": ("MonomialPropagator",),
    "monoprop.majorana_propagator": ("MajoranaPropagator",),
    "monoprop.pauli_propagator": ("PauliPropagator",),
    "monoprop.qiskit_conversion": (
        "from_qiskit_operator",
        "to_qiskit_operator",
        "from_qiskit_circuit",
        "to_qiskit_circuit",
        "PAULI_EVOLUTION_EQUIVALENT",
        "VALID_PAULI_GATES",
    ),
    "monoprop.integral_conversion": ("integrals_to_fermion",),
    "monoprop.utils": (
        "jordan_wigner_basis_change",
        "validate_basis_change",
        "_validate_system_size",
    ),
    "monoprop.exceptions": ("NumberOfModesInvalidError",),
    "monoprop.quantum_data": ("IQuantumOperator",),
    "monoprop.optimize": (
        "Evaluation",
        "Objective",
        "Segment",
        "landscape",
        "load_or_build",
        "minimize",
        "run_study",
        "value_and_grad",
    ),
    "monoprop.optimize.jax": ("expectation",),
}

# The names monoprop exports only when qiskit is installed.
QISKIT_NAMES = (
    "from_qiskit_circuit",
    "from_qiskit_operator",
    "to_qiskit_circuit",
    "to_qiskit_operator",
)

# The optional extra each module or name needs: without it, it is skipped (and tested not to
# be exported where the contract says so).
NEEDS = {
    "monoprop.qiskit_conversion": "qiskit",
    "monoprop.optimize.jax": "jax",
    "monoprop.optimize.run_study": "optuna",
}

HAS_QISKIT = importlib.util.find_spec("qiskit") is not None


def _installed(extra: str | None) -> bool:
    return extra is None or importlib.util.find_spec(extra) is not None


@pytest.mark.parametrize(
    ("module_name", "name"),
    [(module, name) for module, names in CONTRACT.items() for name in names],
)
def test_contract_name_imports(module_name: str, name: str) -> None:
    extra = NEEDS.get(module_name) or NEEDS.get(f"{module_name}.{name}")
    if not _installed(extra):
        pytest.skip(f"{module_name}.{name} needs {extra}, which is not installed")
    module = importlib.import_module(module_name)
    namespace: dict[str, object] = {}
    exec(f"from {module_name} import {name}", namespace)  # the import a user writes
    assert namespace[name] is getattr(module, name)


@pytest.mark.parametrize("name", CONTRACT["monoprop"] + (QISKIT_NAMES if HAS_QISKIT else ()))
def test_top_level_all_lists_the_contract(name: str) -> None:
    import monoprop

    assert name in monoprop.__all__


def test_qiskit_names_follow_qiskit() -> None:
    """With qiskit the four conversions are in ``monoprop.__all__``; without, absent."""
    import monoprop

    listed = [name for name in QISKIT_NAMES if name in monoprop.__all__]
    assert listed == (list(QISKIT_NAMES) if HAS_QISKIT else [])


def test_every_all_name_resolves() -> None:
    """No module's ``__all__`` names something the module does not have."""
    for module_name in CONTRACT:
        extra = NEEDS.get(module_name)
        if not _installed(extra):
            continue
        module = importlib.import_module(module_name)
        missing = [
            name
            for name in getattr(module, "__all__", ())
            if _installed(NEEDS.get(f"{module_name}.{name}")) and not hasattr(module, name)
        ]
        assert missing == [], f"{module_name}.__all__ names {missing}, which it lacks"


def test_the_table_is_checked() -> None:
    """A name removed from a module fails the import test above (the test can fail)."""
    module = importlib.import_module("monoprop.utils")
    saved = module._validate_system_size
    del module._validate_system_size
    try:
        with pytest.raises(ImportError, match="_validate_system_size"):
            test_contract_name_imports("monoprop.utils", "_validate_system_size")
    finally:
        module._validate_system_size = saved
