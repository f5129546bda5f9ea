"""``read_file``: the one reader whose words the CLI's exit table depends on."""

from __future__ import annotations

from pathlib import Path

import pytest

from flakecore.errors import InputError
from flakecore.jsonio import read_file


def test_reads_at_most_size_bytes(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(b"0123456789")
    assert read_file(str(path), 4) == b"0123"
    assert read_file(str(path), 100) == b"0123456789"


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: None, "no such file"),
        (lambda p: p.mkdir(), "cannot read: is a directory"),
    ],
)
def test_unreadable_files_are_named_and_worded(tmp_path: Path, make: object, words: str) -> None:
    path = tmp_path / "r.json"
    make(path)  # type: ignore[operator]
    with pytest.raises(InputError) as info:
        read_file(str(path), 10)
    assert info.value.message == words
    assert info.value.source == str(path)
