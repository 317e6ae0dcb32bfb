"""NodeLabel (framework/plugins/nodelabel/node_label.go, v1.21/v1.22; removed upstream
since). Legacy Policy's CheckNodeLabelPresence predicate and labelPreference priorities."""

from kubesched.plugins.nodelabel.plugin import ERR_REASON_PRESENCE_VIOLATED, NAME, NodeLabel, new

__all__ = ["ERR_REASON_PRESENCE_VIOLATED", "NAME", "NodeLabel", "new"]
