"""The on-disk format of a saved propagator: round trips, atomic replacement, and every damaged
or foreign file refused with a ValueError that names the path."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from monoprop import archive


def sample_arrays(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "base": rng.standard_normal(1000),
        "keys": rng.integers(0, 2**63, size=(300, 2), dtype=np.uint64),
        "graph.bytes": rng.integers(0, 256, size=5000, dtype=np.uint8),
        "sections": rng.integers(-(2**31), 2**31, size=(40, 6), dtype=np.int32),
        "empty": np.zeros(0, dtype=np.float64),
        "scalar": np.array(2.5),
    }


META = {"family": "pauli", "num_modes": 7, "lower_atol": 1e-4, "threads": [2], "schrodinger": None}


@pytest.fixture
def saved(tmp_path):
    arrays = sample_arrays(np.random.default_rng(0))
    path = tmp_path / "prop"
    archive.write(path, META, arrays)
    return path, arrays


@pytest.mark.parametrize("mmap", [False, True])
def test_round_trip_is_bitwise(saved, mmap):
    path, arrays = saved
    meta, loaded = archive.read(path, mmap=mmap)
    assert meta == META
    assert loaded.keys() == arrays.keys()
    for name, array in arrays.items():
        assert loaded[name].dtype == array.dtype and loaded[name].shape == array.shape
        assert loaded[name].tobytes() == array.tobytes(), name
    if mmap:
        assert not loaded["base"].flags.writeable


def test_replacing_a_save_leaves_only_the_new_one(saved):
    path, _ = saved
    archive.write(path, {"second": True}, {"x": np.arange(4)})
    meta, arrays = archive.read(path)
    assert meta == {"second": True} and list(arrays) == ["x"]
    assert sorted(p.name for p in path.parent.iterdir()) == ["prop"]


def test_other_directories_are_never_overwritten(tmp_path):
    precious = tmp_path / "results"
    precious.mkdir()
    (precious / "data.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not a monoprop save"):
        archive.write(precious, {}, {"x": np.arange(3)})
    assert (precious / "data.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    ("meta", "arrays", "error"),
    [
        ({}, {"../escape": np.arange(2)}, "not a plain file name"),
        ({}, {".hidden": np.arange(2)}, "not a plain file name"),
        ({}, {"objects": np.array([1, "a"], dtype=object)}, "Python objects"),
        ({"rate": float("nan")}, {}, "JSON compliant"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(tmp_path, meta, arrays, error):
    with pytest.raises(ValueError, match=error):
        archive.write(tmp_path / "prop", meta, arrays)
    assert list(tmp_path.iterdir()) == []


def test_a_crash_mid_save_keeps_the_earlier_save(saved, monkeypatch):
    path, arrays = saved
    calls = []

    def failing_save(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk full")
        return real_save(*args, **kwargs)

    real_save = np.save
    monkeypatch.setattr(np, "save", failing_save)
    with pytest.raises(OSError, match="disk full"):
        archive.write(path, {"second": True}, arrays)
    monkeypatch.undo()
    meta, loaded = archive.read(path)
    assert meta == META and loaded["base"].tobytes() == arrays["base"].tobytes()
    assert sorted(p.name for p in path.parent.iterdir()) == ["prop"]


def test_a_crash_between_the_renames_says_where_the_earlier_save_is(saved, monkeypatch):
    path, _ = saved
    real_replace = os.replace

    def second_fails(source, destination):
        if ".saving-" in str(source):
            raise OSError("power cut")
        return real_replace(source, destination)

    monkeypatch.setattr(os, "replace", second_fails)
    with pytest.raises(OSError, match="power cut"):
        archive.write(path, {}, {"x": np.arange(2)})
    monkeypatch.undo()
    with pytest.raises(FileNotFoundError, match=r"interrupted.*replaced-.*rename it back") as error:
        archive.read(path)
    aside = str(error.value).split("previous save is at ")[1].split(":")[0]
    assert archive.read(aside)[0] == META


def array_file(path, name):
    return path / json.loads((path / archive.HEADER).read_text())["arrays"][name]["file"]


@pytest.mark.parametrize("name", ["base", "keys", "graph.bytes", "sections", "empty", "scalar"])
def test_truncation_at_random_offsets_is_refused(saved, name):
    path, _ = saved
    file = array_file(path, name)
    data = file.read_bytes()
    for offset in np.random.default_rng(1).integers(0, len(data), size=8):
        file.write_bytes(data[:offset])
        with pytest.raises(ValueError, match=rf"{path}.*{name}.*truncated"):
            archive.read(path)
    file.write_bytes(data)
    archive.read(path)


def test_header_truncation_is_refused(saved):
    path, _ = saved
    header = path / archive.HEADER
    text = header.read_bytes()
    for offset in np.random.default_rng(2).integers(0, len(text) - 2, size=10):
        header.write_bytes(text[:offset])
        with pytest.raises(ValueError, match=str(path)):
            archive.read(path)


@pytest.mark.parametrize("name", ["base", "keys", "graph.bytes", "sections", "scalar"])
def test_flipped_bytes_are_refused(saved, name):
    path, _ = saved
    file = array_file(path, name)
    data = bytearray(file.read_bytes())
    for offset in np.random.default_rng(3).integers(0, len(data), size=8):
        data[offset] ^= 0x10
        file.write_bytes(bytes(data))
        with pytest.raises(ValueError, match=rf"{path}.*{name}.*checksum"):
            archive.read(path)
        data[offset] ^= 0x10
    file.write_bytes(bytes(data))
    archive.read(path)


def test_flipped_header_bytes_are_refused(saved):
    path, _ = saved
    header = path / archive.HEADER
    text = bytearray(header.read_bytes())
    significant = [i for i, byte in enumerate(text) if chr(byte) not in " \n"]
    for offset in np.random.default_rng(4).choice(significant, size=40, replace=False):
        text[offset] ^= 0x01
        header.write_bytes(bytes(text))
        with pytest.raises(ValueError, match=str(path)):
            archive.read(path)
        text[offset] ^= 0x01


def rewrite_header(path, change) -> None:
    """Edits the header and signs it again, as a writer of another version would."""
    header_file = path / archive.HEADER
    header = json.loads(header_file.read_text())
    header.pop("crc32")
    change(header)
    header["crc32"] = archive._header_crc32(header)
    header_file.write_text(json.dumps(header))


def test_a_newer_format_asks_for_an_upgrade(saved):
    path, _ = saved
    rewrite_header(
        path, lambda h: h.update(format_version=archive.FORMAT_VERSION + 1, monoprop_version="9.9")
    )
    with pytest.raises(
        ValueError, match=rf"{path} has format version 2, written by monoprop '9.9'.*upgrade"
    ):
        archive.read(path)


def test_a_foreign_format_is_refused(saved):
    path, _ = saved
    rewrite_header(path, lambda h: h.update(format="something-else"))
    with pytest.raises(ValueError, match=rf"{path} is not a monoprop save"):
        archive.read(path)


def test_pickled_arrays_are_never_loaded(saved):
    """A file swapped for a pickled object array, with a header that vouches for it, is refused
    by the .npy reader without unpickling."""
    path, _ = saved
    file = array_file(path, "base")
    np.save(file, np.array([{"payload": 1}], dtype=object), allow_pickle=True)

    def vouch(header):
        entry = header["arrays"]["base"]
        entry.update(bytes=file.stat().st_size, crc32=archive._crc32(file), dtype="|O", shape=[1])

    rewrite_header(path, vouch)
    with pytest.raises(ValueError, match=r"base.*not a readable \.npy file.*pickle"):
        archive.read(path)


def test_a_missing_array_file_is_refused(saved):
    path, _ = saved
    array_file(path, "keys").unlink()
    with pytest.raises(ValueError, match=rf"{path}.*'keys'.*missing"):
        archive.read(path)


def test_missing_paths_and_other_files_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "nothing")):
        archive.read(tmp_path / "nothing")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match=rf"{other} is not a monoprop save"):
        archive.read(other)
    plain = tmp_path / "plain.npy"
    np.save(plain, np.arange(3))
    with pytest.raises(ValueError, match=rf"{plain} is not a monoprop save"):
        archive.read(plain)


# -- saves in parts (one per MPI rank) ------------------------------------------------------


def save_in_parts(path, count: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """What the ranks of an MPI job do, in one process: each writes its part, then one commits."""
    rng = np.random.default_rng(seed)
    staging = archive.begin(path)
    contents = []
    for part in range(count):
        arrays = sample_arrays(rng)
        archive.write(staging / f"rank-{part}-of-{count}", {**META, "rank": part}, arrays)
        contents.append(arrays)
    archive.commit(staging, path, {"ranks": count}, [f"rank-{p}-of-{count}" for p in range(count)])
    return contents


def test_a_save_in_parts_reads_back_part_by_part(tmp_path):
    path = tmp_path / "parts"
    contents = save_in_parts(path, 3)
    assert archive.parts(path) == [f"rank-{p}-of-3" for p in range(3)]
    assert archive.read(path) == ({"ranks": 3}, {})
    for p, arrays in enumerate(contents):
        meta, loaded = archive.read_part(path, f"rank-{p}-of-3")
        assert meta["rank"] == p
        assert all(loaded[name].tobytes() == arrays[name].tobytes() for name in arrays)
    assert [p.name for p in tmp_path.iterdir()] == ["parts"]  # no staging left behind


def test_parts_of_two_saves_never_mix(tmp_path):
    save_in_parts(tmp_path / "a", 2, seed=1)
    save_in_parts(tmp_path / "b", 2, seed=2)
    os.rename(tmp_path / "b" / "rank-1-of-2", tmp_path / "b-part")
    os.rename(tmp_path / "a" / "rank-1-of-2", tmp_path / "b" / "rank-1-of-2")
    with pytest.raises(ValueError, match="not the part its save lists"):
        archive.read_part(tmp_path / "b", "rank-1-of-2")
    with pytest.raises(ValueError, match="part 'rank-1-of-2' is missing"):
        archive.read_part(tmp_path / "a", "rank-1-of-2")
    with pytest.raises(ValueError, match="has no part 'rank-2-of-3'"):
        archive.read_part(tmp_path / "a", "rank-2-of-3")


def test_an_aborted_save_in_parts_leaves_the_earlier_save(saved):
    path, arrays = saved
    staging = archive.begin(path)
    archive.write(staging / "rank-0-of-2", META, arrays)
    archive.abort(staging)
    assert archive.read(path)[1].keys() == arrays.keys()
    assert sorted(p.name for p in path.parent.iterdir()) == ["prop"]
    save_in_parts(path, 2)  # and a save in parts replaces a save of one process
    assert archive.parts(path) == ["rank-0-of-2", "rank-1-of-2"]


def test_a_save_in_parts_never_overwrites_other_directories(tmp_path):
    (tmp_path / "mine").mkdir()
    with pytest.raises(FileExistsError, match="not a monoprop save"):
        archive.begin(tmp_path / "mine")
    assert list(tmp_path.iterdir()) == [tmp_path / "mine"]


def test_a_propagator_saved_over_several_ranks_is_refused_in_one_process(tmp_path):
    import monoprop

    save_in_parts(tmp_path / "parts", 2)
    with pytest.raises(ValueError, match=r"saved over 2 rank\(s\); this load has 1.*2 MPI ranks"):
        monoprop.load(tmp_path / "parts")
