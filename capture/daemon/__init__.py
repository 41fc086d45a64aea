"""profcap's sampling daemon: a process of its own beside the job.

It samples the host (psutil), the GPUs (NVML) and CPU counters (``perf stat``) into metrics
files, and converts the trace windows the job hands over in the spool folder.

Metrics it writes (``source``, ``device``, ``metric``), one row per sample:

============  ===============  ==========================================================
source        device           metric
============  ===============  ==========================================================
``cpu``       CPU index, -1    ``util_pct`` (per CPU; -1 = mean over CPUs)
``mem``       -1               ``used_bytes``, ``available_bytes``
``disk``      -1               ``read_bytes_per_s``, ``write_bytes_per_s``
``net``       -1               ``rx_bytes_per_s``, ``tx_bytes_per_s``
``proc``      -1               ``cpu_pct`` (job process tree, % of one CPU), ``rss_bytes``,
                               ``num_procs``
``gpu``       GPU index        ``util_pct``, ``mem_util_pct``, ``mem_used_bytes``,
                               ``mem_total_bytes``, ``power_w``, ``temp_c``, ``sm_clock_mhz``,
                               ``pcie_rx_bytes_per_s``, ``pcie_tx_bytes_per_s`` (at most 1 Hz),
                               ``job_mem_used_bytes`` (the job's processes on that GPU)
``perf``      CPU index        the perf event name with ``-``/``:`` as ``_`` (``cycles``,
                               ``instructions``, ``context_switches``...), count per interval
============  ===============  ==========================================================
"""
