"""Scheduler cache: NodeInfos, the columnar NodeTable, node order and image states."""

from kubesched._cache.cache import Cache, Snapshot, node_tree_order

__all__ = ["Cache", "Snapshot", "node_tree_order"]
