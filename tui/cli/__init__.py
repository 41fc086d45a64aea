"""The ``profui`` command line (Typer). Each sub-command lives in its own module."""

from __future__ import annotations

import typer

from profui.capture.format import TraceFormatError

from . import analyze_cmd, import_cmd, info_cmd, open_cmd, summary_cmd
from .errors import UserError, report

app = typer.Typer(
    name="profui",
    help=(
        "Terminal-native profiler for deep-learning training.\n\n"
        "Record a run with `profcap -- python train.py`, then `profui open trace/` to explore it, "
        "or `profui summary trace/` for the numbers. Existing PyTorch Profiler (Kineto) JSON "
        "traces work too: `profui import rank0.json.gz -o trace/`."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

for _module in (open_cmd, import_cmd, info_cmd, summary_cmd, analyze_cmd):
    _module.register(app)


def main() -> None:
    """Entry point of the ``profui`` console script."""
    try:
        app()
    except (TraceFormatError, UserError) as exc:
        report(str(exc))
    except KeyboardInterrupt:
        report("interrupted", code=130)
