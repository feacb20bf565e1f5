"""A sweep's files on disk, read and written by the sweep, the report and the MLflow mirror alike: the output
folder's rules and manifest (``output.py``), the Parquet result log (``parquet_log.py``), Spec-Bench answer files
(``answers.py``) and the error log (``failures.py``). It imports no other part of jobs/ but the config-free helpers."""
