"""A saved propagator on disk: a directory holding a JSON header and arrays in ``.npy`` layout.

The layout is ::

    path/
        monoprop.json     format name and version, the monoprop version that wrote it, the
                          writer's metadata, for each array its file, dtype, shape, size and
                          CRC-32, and a CRC-32 of the header itself
        <name>.npy        one array each, in numpy's .npy layout (so it can be memory-mapped)

Writing is atomic: everything goes into a hidden sibling directory first, is flushed to disk,
and only then takes the place of ``path``, so a crash mid-save never replaces a good save with
a partial one. A directory that is not a monoprop save is never overwritten.

A save made by several processes together (one part each, as the ranks of an MPI job save a
distributed propagator) is a directory of parts, each a save as above, and a header that lists
them with the CRC-32 of each part's header ::

    path/
        monoprop.json     as above, with no arrays, and "parts": {name: header CRC-32}
        <part>/           one save per part

One process opens it with :func:`begin`, each writes its part with :func:`write` into the
directory :func:`begin` returned, and the first, once all have, calls :func:`commit`, which
writes the header and puts the directory in place of ``path`` at once. :func:`read_part` reads
one part and checks that it is the part the header lists, so that parts of two saves never mix.

Reading checks before it returns anything: the header must name this format and a version this
monoprop reads, every array must exist with the recorded dtype, shape and size, and its CRC-32
must match. Any failure raises :class:`ValueError` naming the path and the problem (a missing
path raises :class:`FileNotFoundError`). Nothing in the directory is executed: the header is
JSON and arrays are loaded with ``allow_pickle=False``.

>>> import tempfile, numpy as np
>>> from pathlib import Path
>>> from monoprop import archive
>>> folder = Path(tempfile.mkdtemp()) / "saved"
>>> archive.write(folder, {"family": "pauli"}, {"base": np.arange(3.0)})
>>> meta, arrays = archive.read(folder)
>>> meta["family"], arrays["base"].tolist()
('pauli', [0.0, 1.0, 2.0])
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ._version import __version__

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "abort",
    "begin",
    "check_writable",
    "commit",
    "read",
    "parts",
    "read_part",
    "write",
]

FORMAT = "monoprop-propagator"
FORMAT_VERSION = 1
HEADER = "monoprop.json"

# Array names become file names: no separators, no hidden files, nothing a shell would expand.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_CHUNK = 1 << 24  # bytes a checksum reads at a time


def write(
    path: str | os.PathLike, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> None:
    """Saves ``meta`` (JSON-serialisable) and numeric ``arrays`` as the directory ``path``.

    Replaces an earlier save at ``path`` atomically; refuses with :class:`FileExistsError` if
    ``path`` exists and is not a monoprop save, and with :class:`ValueError` for an array name
    that cannot be a file name or an array of objects.
    """
    target = Path(path)
    for name, array in arrays.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(
                f"array name {name!r} is not a plain file name; use letters, digits, '_', '.', '-'"
            )
        if np.asarray(array).dtype.hasobject:
            raise ValueError(
                f"array {name!r} holds Python objects; only numeric arrays can be saved"
            )
    check_writable(target)
    json.dumps(meta, allow_nan=False)  # refuses what JSON cannot hold, before anything is written
    staging = target.parent / f".{target.name}.saving-{uuid.uuid4().hex[:12]}"
    staging.mkdir(parents=True)
    try:
        entries = {}
        for name, array in arrays.items():
            data = np.asarray(array, order="C")
            file = staging / f"{name}.npy"
            with open(file, "wb") as out:
                np.save(out, data, allow_pickle=False)
                out.flush()
                os.fsync(out.fileno())
            entries[name] = {
                "file": file.name,
                "dtype": data.dtype.str,
                "shape": list(data.shape),
                "bytes": file.stat().st_size,
                "crc32": _crc32(file),
            }
        _write_header(staging, meta, entries)
        _replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def begin(path: str | os.PathLike) -> Path:
    """A hidden directory beside ``path`` for the parts of a save by several processes; refuses
    as :func:`write` does. :func:`commit` puts it in place of ``path``, :func:`abort` removes
    it."""
    target = Path(path)
    check_writable(target)
    staging = target.parent / f".{target.name}.saving-{uuid.uuid4().hex[:12]}"
    staging.mkdir(parents=True)
    return staging


def commit(
    staging: Path, path: str | os.PathLike, meta: Mapping[str, Any], parts: list[str]
) -> None:
    """Lists ``parts`` (each a save written into ``staging``) in a header with ``meta``, then
    moves ``staging`` into place of ``path`` atomically."""
    recorded = {}
    for name in parts:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f"part name {name!r} is not a plain file name")
        recorded[name] = _read_header(staging / name)["crc32"]
    _write_header(staging, meta, {}, recorded)
    _replace(staging, Path(path))


def abort(staging: Path) -> None:
    """Removes what :func:`begin` made, with whatever parts are in it."""
    shutil.rmtree(staging, ignore_errors=True)


def check_writable(path: str | os.PathLike) -> None:
    """:class:`FileExistsError` if ``path`` exists and is not a monoprop save, which
    :func:`write` would refuse to replace."""
    target = Path(path)
    if target.exists() and not (target / HEADER).is_file():
        raise FileExistsError(
            f"{target} exists and is not a monoprop save; choose another path or remove it first"
        )


def _write_header(
    folder: Path,
    meta: Mapping[str, Any],
    entries: dict[str, Any],
    parts: dict[str, int] | None = None,
) -> None:
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "monoprop_version": __version__,
        "meta": meta,
        "arrays": entries,
    }
    if parts is not None:
        header["parts"] = parts
    header["crc32"] = _header_crc32(header)
    with open(folder / HEADER, "w", encoding="utf-8") as out:
        out.write(json.dumps(header, allow_nan=False, indent=1))
        out.flush()
        os.fsync(out.fileno())


def read(
    path: str | os.PathLike, *, mmap: bool = False
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The metadata and arrays of the save at ``path``, every array checked against its CRC-32.

    With ``mmap=True`` the arrays are read-only memory maps of the files (checked all the same).
    A save in parts has no arrays of its own: its metadata is returned, and :func:`parts`
    names the parts.
    """
    folder = Path(path)
    header = _read_header(folder)
    return header["meta"], {
        name: _load(folder, name, entry, mmap) for name, entry in header["arrays"].items()
    }


def parts(path: str | os.PathLike) -> list[str]:
    """The parts of the save at ``path`` (empty for a save made by one process)."""
    return sorted(_read_header(Path(path)).get("parts", {}))


def read_part(
    path: str | os.PathLike, name: str, *, mmap: bool = False
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The part ``name`` of the save in parts at ``path``, as :func:`read` gives a save; a
    part missing, or not the one the save's header lists, raises :class:`ValueError`."""
    folder = Path(path)
    listed = _read_header(folder).get("parts", {})
    if name not in listed:
        raise ValueError(f"{folder} has no part {name!r}; its parts are {sorted(listed)}")
    part = folder / name
    if not part.exists():
        raise ValueError(f"{folder}: its part {name!r} is missing")
    header = _read_header(part)
    if header["crc32"] != listed[name]:
        raise ValueError(
            f"{part} is not the part its save lists (the parts are of different saves)"
        )
    return header["meta"], {
        array: _load(part, array, entry, mmap) for array, entry in header["arrays"].items()
    }


def _read_header(folder: Path) -> dict[str, Any]:
    """The checked header of the save at ``folder``, its own CRC-32 under "crc32"."""
    if not folder.exists():
        raise FileNotFoundError(f"no monoprop save at {folder}{_interrupted_hint(folder)}")
    header_file = folder / HEADER
    if not folder.is_dir() or not header_file.is_file():
        raise ValueError(f"{folder} is not a monoprop save: it has no {HEADER}")
    try:
        header = json.loads(header_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{header_file} is damaged: it is not valid JSON ({error})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"{folder} is not a monoprop save: its header names no {FORMAT!r} format")
    version = header.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"{header_file} is damaged: format_version {version!r} is not an integer")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"{folder} has format version {version}, written by monoprop "
            f"{header.get('monoprop_version')!r}; this monoprop ({__version__}) reads up to "
            f"version {FORMAT_VERSION}: upgrade monoprop to load it"
        )
    if version < 1:
        raise ValueError(f"{header_file} is damaged: format_version {version} is below 1")
    crc = header.pop("crc32", None)
    if crc != _header_crc32(header):
        raise ValueError(f"{header_file} fails its checksum (the header is corrupted)")
    entries = header.get("arrays")
    if not isinstance(entries, dict) or not isinstance(header.get("meta"), dict):
        raise ValueError(f"{header_file} is damaged: it lacks the 'arrays' or 'meta' table")
    listed = header.get("parts", {})
    if not isinstance(listed, dict) or not all(isinstance(c, int) for c in listed.values()):
        raise ValueError(f"{header_file} is damaged: its 'parts' table is not one of checksums")
    header["crc32"] = crc
    return header


def _load(folder: Path, name: str, entry: Any, mmap: bool) -> np.ndarray:
    where = f"{folder}: array {name!r}"
    if not isinstance(entry, dict) or not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"{where} has a damaged header entry")
    if entry.get("file") != f"{name}.npy":
        raise ValueError(f"{where} names the file {entry.get('file')!r}, not {name + '.npy'!r}")
    file = folder / entry["file"]
    if not file.is_file():
        raise ValueError(f"{where}: {file.name} is missing")
    size = file.stat().st_size
    if size != entry.get("bytes"):
        raise ValueError(
            f"{where}: {file.name} has {size} bytes, the header records "
            f"{entry.get('bytes')} (truncated?)"
        )
    if _crc32(file) != entry.get("crc32"):
        raise ValueError(f"{where}: {file.name} fails its checksum (the file is corrupted)")
    try:
        array = np.load(file, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise ValueError(f"{where}: {file.name} is not a readable .npy file ({error})") from None
    if array.dtype.str != entry.get("dtype") or list(array.shape) != entry.get("shape"):
        raise ValueError(
            f"{where} is {array.dtype.str} {list(array.shape)}, "
            f"the header records {entry.get('dtype')} {entry.get('shape')}"
        )
    return array


def _crc32(file: Path) -> int:
    crc = 0
    with open(file, "rb") as stream:
        while chunk := stream.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return crc


def _header_crc32(header: dict[str, Any]) -> int:
    """Of the header's canonical JSON (sorted keys, no spaces), so that layout does not count."""
    return zlib.crc32(json.dumps(header, sort_keys=True, separators=(",", ":")).encode())


def _replace(staging: Path, target: Path) -> None:
    """Moves the finished save into place. An earlier save is renamed aside first and removed
    after; a crash between the two renames leaves it aside (``read`` says where)."""
    if target.exists():
        aside = target.parent / f".{target.name}.replaced-{uuid.uuid4().hex[:12]}"
        os.replace(target, aside)
        os.replace(staging, target)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(staging, target)
    _sync_directory(target.parent)


def _sync_directory(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # platforms without directory descriptors
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _interrupted_hint(folder: Path) -> str:
    aside = (
        sorted(folder.parent.glob(f".{folder.name}.replaced-*")) if folder.parent.is_dir() else []
    )
    if not aside:
        return ""
    return (
        f"; a save there was interrupted, and the previous save is at {aside[-1]}: rename it back"
    )
