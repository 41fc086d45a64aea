"""``is_trace_dir`` answers for any path a user or a saved file can name: a name longer than the
file system takes (a saved baseline's ``folder`` of 5,000 characters crashed ``profui open --diff``
with ``OSError: File name too long``) or holding a NUL is no trace folder, not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from profui.capture.format import is_trace_dir

from realdata import SAMPLES


@pytest.mark.parametrize(
    "name", ["x" * 5000, "a/" * 3000, "with\0nul"], ids=["long-name", "long-path", "nul"]
)
def test_names_no_file_system_holds_are_no_trace(tmp_path: Path, name: str) -> None:
    assert is_trace_dir(tmp_path / name) is False


def test_a_trace_folder_still_is_one(tmp_path: Path) -> None:
    assert is_trace_dir(SAMPLES / "mlp_cpu") and not is_trace_dir(tmp_path)
