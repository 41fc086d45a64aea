"""profui.capture: getting data into the trace format (profcap, Kineto import, annotations).

Never imports polars, textual or analysis: it runs inside or beside a training job.
"""
