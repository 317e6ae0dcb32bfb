"""The scheduling queue (issue 4)."""
