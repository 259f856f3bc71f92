"""Benchmark definitions for the instruction-count suite (see standard.py)."""
