"""What every converter (Kineto, Nsight Systems, JAX) writes through: the rows of a rank written
and described (:mod:`.converted`), the :class:`~.result.ConvertResult` it hands the import
pipeline with the node and rank rules (:mod:`.result`), the value errors (:mod:`.errors`), the
C heap given back between steps (:mod:`.heap`), the CPUs a conversion may use (:mod:`.cpus`)
and whether the machine's memory balloon takes freed memory back (:mod:`.free_pages`: numpy's
huge pages are left off there).

No converter and no format's dispatch here: the converters import this package, and the import
pipeline (:mod:`profui.capture.ingest`) imports the converters.
"""
