"""``python -m profui.capture.daemon.convert FILE TRACE_DIR NODE``: convert one spool file.

Run by the daemon in a child process at low priority, so conversion never competes with the
job for the daemon's sampling loop, and a crash in conversion costs only that window.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .spool import convert_file


def main() -> None:
    """Convert and print the result as one JSON line."""
    src, trace_dir, node = sys.argv[1:4]
    try:
        os.nice(10)
    except OSError:
        pass
    result = convert_file(Path(src), Path(trace_dir), node)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
