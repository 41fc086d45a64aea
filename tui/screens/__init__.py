"""Screens of the profui app: jobs list, import progress, the trace screen, help."""
