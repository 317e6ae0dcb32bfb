"""A binary heap of QueuedPodInfos addressable by pod key (internal/heap: Heap with a key
function), so entries can be looked up, updated in place and deleted in O(log n)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cmp_to_key

from kubesched.framework import QueuedPodInfo

Before = Callable[[QueuedPodInfo, QueuedPodInfo], bool]


def pod_key(pinfo: QueuedPodInfo) -> str:
    """podInfoKeyFunc: MetaNamespaceKeyFunc, ``namespace/name``."""
    return pinfo.pod_info.pod.key


class KeyedHeap:
    """Min-heap under ``before`` (a strict order: True if ``a`` comes out first)."""

    __slots__ = ("_before", "_items", "_index")

    def __init__(self, before: Before) -> None:
        self._before = before
        self._items: list[QueuedPodInfo] = []
        self._index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        """Entries in heap (not sorted) order."""
        return iter(list(self._items))

    def get(self, key: str) -> QueuedPodInfo | None:
        i = self._index.get(key)
        return None if i is None else self._items[i]

    def peek(self) -> QueuedPodInfo | None:
        return self._items[0] if self._items else None

    def add(self, pinfo: QueuedPodInfo) -> None:
        """heap.Add: insert, or replace the entry with the same key and re-position it."""
        key = pod_key(pinfo)
        i = self._index.get(key)
        if i is not None:
            self._items[i] = pinfo
            self._fix(i)
            return
        self._items.append(pinfo)
        self._index[key] = len(self._items) - 1
        self._up(len(self._items) - 1)

    def update(self, pinfo: QueuedPodInfo) -> None:
        """heap.Update: same as add."""
        self.add(pinfo)

    def pop(self) -> QueuedPodInfo | None:
        if not self._items:
            return None
        return self._remove_at(0)

    def delete(self, key: str) -> QueuedPodInfo | None:
        i = self._index.get(key)
        return None if i is None else self._remove_at(i)

    def sorted(self) -> list[QueuedPodInfo]:
        """Entries in the order pop() would return them."""
        def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
            return -1 if self._before(a, b) else (1 if self._before(b, a) else 0)
        return sorted(self._items, key=cmp_to_key(cmp))

    # ---------------------------------------------------------------- internals
    def _remove_at(self, i: int) -> QueuedPodInfo:
        items = self._items
        item = items[i]
        last = items.pop()
        del self._index[pod_key(item)]
        if i < len(items):
            items[i] = last
            self._index[pod_key(last)] = i
            self._fix(i)
        return item

    def _fix(self, i: int) -> None:
        if not self._up(i):
            self._down(i)

    def _swap(self, i: int, j: int) -> None:
        items = self._items
        items[i], items[j] = items[j], items[i]
        self._index[pod_key(items[i])] = i
        self._index[pod_key(items[j])] = j

    def _up(self, i: int) -> bool:
        moved = False
        items = self._items
        while i > 0:
            parent = (i - 1) // 2
            if not self._before(items[i], items[parent]):
                break
            self._swap(i, parent)
            i = parent
            moved = True
        return moved

    def _down(self, i: int) -> None:
        items = self._items
        n = len(items)
        while True:
            left = 2 * i + 1
            if left >= n:
                return
            best = left
            right = left + 1
            if right < n and self._before(items[right], items[left]):
                best = right
            if not self._before(items[best], items[i]):
                return
            self._swap(i, best)
            i = best
