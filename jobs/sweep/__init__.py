"""Running a sweep: the driver (driver; ``python -m jobs.sweep`` runs it), the task plan (plan), the checks
before Ray starts (preflight), the output folder and its lock (output), the Parquet log (parquet_log), failure
records (failures) and Spec-Bench answer files (answers)."""
