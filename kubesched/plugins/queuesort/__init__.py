"""PrioritySort (framework/plugins/queuesort/priority_sort.go)."""

from kubesched.plugins.queuesort.plugin import NAME, PrioritySort, new

__all__ = ["NAME", "PrioritySort", "new"]
