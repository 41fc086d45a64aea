"""The pipeline's refusal type."""

from __future__ import annotations


class PipelineError(Exception):
    """A request the pipeline refuses (bad selection, reference or parameter, lock held ...).

    ``str(err)`` is one line fit to show the user as is.
    """
