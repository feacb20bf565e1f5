"""Sizing a pair before it loads: memory plans, GPUs, roofline costs."""
