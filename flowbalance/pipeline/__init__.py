"""The fleet pipeline on Spark: the only package that imports pyspark (``rows`` is plain pandas and runs inside
Spark tasks). Stages: ingest (``ingest``), metric weights (``weights``), health (``health``), planning
(``fleetplan``), writing (``output``); ``run`` chains them; ``session`` starts Spark."""
