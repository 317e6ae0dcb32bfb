"""HTTP scheduler extenders: client and Python SDK (issue 6)."""
