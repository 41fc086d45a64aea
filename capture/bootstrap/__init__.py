"""The folder profcap puts first on the job's ``PYTHONPATH``: it holds only ``sitecustomize``.

Nothing else lives here, so the job's own top-level imports are never shadowed.
"""
