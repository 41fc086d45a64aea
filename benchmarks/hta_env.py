"""Where the benchmarks find Holistic Trace Analysis (HTA), which is never a profui dependency,
and how to set it up: one environment, ``.venv-bench`` at the repository's root (git-ignored).

HTA 0.5.0 (the release the benchmarks and the reference numbers were measured with) needs
pandas below 3: under pandas 3.1 its ``critical_path_analysis`` fails on every window
("Cannot specify both 'axis' and 'index'/'columns'"), while its parse still runs, so a
benchmark against it would time a tool that cannot do the work. ``orjson`` is for
``import_size_speed.py --decoders``.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The benchmarks' HTA interpreter unless one is named.
HTA_PYTHON = REPO / ".venv-bench" / "bin" / "python"
#: The commands that make it, run from the repository's root.
HTA_SETUP = (
    "python3 -m venv .venv-bench && .venv-bench/bin/pip install HolisticTraceAnalysis 'pandas<3' orjson"
)
