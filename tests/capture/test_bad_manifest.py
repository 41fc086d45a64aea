"""A manifest whose fields have the wrong types is refused where it is read, by every command,
in one line naming the file and the field (``name`` a list made ``open`` crash inside Textual
and exit 0; ``capture`` a list crashed ``summary``; ``hosts`` a number crashed ``info``).
Each bad manifest is the bundled sample's with one field changed here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_bad_input_import import assert_refused, profui

from realdata import SAMPLES

CASES = {
    "name": (["a"], "'name' must be a string, not a list"),
    "status": (3, "'status' must be a string, not an integer"),
    "hosts": (5, "'hosts' must be a list, not an integer"),
    "capture": ([1], "'capture' must be an object, not a list"),
    "start_ns": ("abc", "'start_ns' must be an integer, not a string"),
    "notes": ({"a": 1}, "'notes' must be a list, not an object"),
}


@pytest.mark.parametrize("command", ["info", "summary", "open"])
@pytest.mark.parametrize("field", sorted(CASES))
def test_a_mistyped_manifest_field_is_one_line(tmp_path: Path, field: str, command: str) -> None:
    value, said = CASES[field]
    trace = tmp_path / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    manifest = trace / "manifest.json"
    data = json.loads(manifest.read_text())
    data[field] = value
    manifest.write_text(json.dumps(data))
    before = manifest.read_bytes()
    line = assert_refused(profui(command, trace), manifest)
    assert said in line
    assert manifest.read_bytes() == before


def test_unknown_fields_are_kept_and_the_sample_still_reads() -> None:
    from profui.capture.format import Manifest

    data = json.loads((SAMPLES / "synthetic_gpu" / "manifest.json").read_text())
    m = Manifest.from_dict({**data, "from_the_future": {"x": 1}})
    assert m.extra["from_the_future"] == {"x": 1} and m.name == data["name"]
