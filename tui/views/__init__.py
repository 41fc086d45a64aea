"""The views of an opened trace (Dashboard, Kernels, Steps, Runs) and the session they share."""
