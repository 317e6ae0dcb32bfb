"""NodePreferAvoidPods (framework/plugins/nodepreferavoidpods/node_prefer_avoid_pods.go,
v1.21/v1.22; removed upstream since). Legacy Policy's NodePreferAvoidPodsPriority."""

from kubesched.plugins.nodepreferavoidpods.plugin import NAME, NodePreferAvoidPods, new

__all__ = ["NAME", "NodePreferAvoidPods", "new"]
