"""Running a sweep: the driver (driver; ``python -m jobs.sweep`` runs it), the task plan (plan), the checks
before Ray starts (preflight), the output folder and its lock (output), the Parquet log (parquet_log), failure
records (failures), Spec-Bench answer files (answers) and SIGINT/SIGTERM at every stage (signals)."""
