"""Measuring what a step costs: calibration, the batch cost surface, machine facts and load."""
