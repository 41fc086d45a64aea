"""Import of PyTorch Profiler / Kineto Chrome-trace JSON into the profui trace format.

``convert_kineto_file`` converts one file into an existing trace (used by profcap's daemon);
``import_kineto`` builds a whole new trace from files or folders (``profui import``).
"""

from .errors import KinetoFormatError
from .importer import ConvertResult, convert_kineto_file, detect_node, detect_rank, import_kineto

__all__ = [
    "ConvertResult",
    "KinetoFormatError",
    "convert_kineto_file",
    "detect_node",
    "detect_rank",
    "import_kineto",
]
