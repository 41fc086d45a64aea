"""A table's title line (its title, row count and note) is at most two lines of an 80-column
terminal, the most the view gives it: the Launch view's fifth title ran to three and lost its
end ("… of the top 15 by"). Every table of the Comm, Idle, Launch and Sync views, on the
shared traces with GPUs and with comm (nccl_parser_config) and on the bundled GPU sample."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from profui.analysis import open_trace
from profui.analysis.notebook import stage_run
from profui.capture.ingest import import_trace
from profui.tui.views.communication import comm_sections
from profui.tui.views.idle import idle_sections
from profui.tui.views.launches import launch_sections
from profui.tui.views.sync import sync_sections

from realdata import SAMPLES, shared_trace

#: 80 columns less the title's padding (one each side).
WIDTH = 78


def _trace(tmp_path, name: str):
    if name in ("synthetic_gpu",):
        out = tmp_path / name
        shutil.copytree(SAMPLES / name, out, ignore=shutil.ignore_patterns(".profui"))
        return open_trace(out)
    out = tmp_path / "t"
    import_trace([shared_trace(name)], out)
    return open_trace(out)


@pytest.mark.parametrize("name", ["synthetic_gpu", "hta-nccl_parser_config-nccl_data.json.gz"])
def test_every_table_title_fits_two_lines(tmp_path, name: str) -> None:
    trace = _trace(tmp_path, name)
    result = stage_run(trace, "summary", {})
    for sections in (comm_sections, idle_sections, launch_sections, sync_sections):
        for sec in sections(result):
            line = f"{sec.title} · {sec.frame.height:,} rows" + (f" · {sec.note}" if sec.note else "")
            assert len(textwrap.wrap(line, WIDTH)) <= 2, line  # wrapped at spaces, as the view does
