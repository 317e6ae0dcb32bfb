"""Row -> NodeInfo lookup for batch methods that need per-node data the NodeTable has no
column for (used host ports, image states ...)."""

from __future__ import annotations

from collections.abc import Sequence

from kubesched.framework import NodeInfo, NodeTable

_EXTRAS_KEY = "helpers.rows"


class _RowIndex:
    __slots__ = ("version", "source", "infos")

    def __init__(self, table: NodeTable, source: Sequence[NodeInfo]) -> None:
        self.version = table.node_version
        self.source = source
        infos: list[NodeInfo | None] = [None] * table.size
        for ni in source:
            if 0 <= ni.index < table.size:
                infos[ni.index] = ni
        self.infos = infos


def row_node_infos(table: NodeTable, node_infos: Sequence[NodeInfo]) -> list[NodeInfo | None]:
    """``result[row]`` is the NodeInfo of ``node_infos`` (the snapshot's list) on that row,
    or None for a cleared row. Cached in ``table.extras`` for one ``node_version`` and one
    snapshot list: NodeInfos are replaced only when nodes are added or removed, and both
    bump the version."""
    idx = table.extras.get(_EXTRAS_KEY)
    if not isinstance(idx, _RowIndex) or idx.version != table.node_version or idx.source is not node_infos:
        idx = _RowIndex(table, node_infos)
        table.extras[_EXTRAS_KEY] = idx
    return idx.infos
