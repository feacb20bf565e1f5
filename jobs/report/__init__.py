"""Turning result rows into figures: derived metrics (metrics), paired-bootstrap intervals (intervals), the
paper-style tables (tables), Spec-Bench speed.py parity (specbench), replay-vs-live agreement (agreement),
plots (figures) and per-token views (token_view)."""
