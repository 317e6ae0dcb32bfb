"""Preemption internals (issue 4)."""
