"""MLflow: opening the tracking store (client), run keys and names (runs), streaming metrics while a sweep runs
(stream), per-run summaries and artifacts at the end (summary, artifacts), the tracker the driver holds
(tracking) and reading an experiment back for the report (read)."""
