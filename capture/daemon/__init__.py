"""profcap's sampling daemon: a process of its own beside the job.

It samples the host (psutil), the GPUs (NVML) and CPU counters (``perf stat``) into metrics
files, and converts the trace windows the job hands over in the spool folder.
"""
