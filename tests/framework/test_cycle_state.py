from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kubesched.errors import PluginError
from kubesched.framework import CycleState, StateKey


@dataclass
class Counter:
    n: int = 0
    seen: list[str] = field(default_factory=list)

    def clone(self) -> Counter:
        return Counter(self.n, list(self.seen))


KEY: StateKey[Counter] = StateKey("PreFilterCounter")
PLAIN: StateKey[int] = StateKey("plain")


def test_read_returns_what_was_written() -> None:
    s = CycleState()
    c = Counter(3)
    s.write(KEY, c)
    assert s.read(KEY) is c
    assert KEY in s


def test_reading_a_missing_key_is_a_plugin_error() -> None:
    with pytest.raises(PluginError, match="PreFilterCounter"):
        CycleState().read(KEY)


def test_clone_clones_clonable_values_and_shares_plain_ones() -> None:
    s = CycleState()
    s.write(KEY, Counter(1, ["a"]))
    s.write(PLAIN, 7)
    s.skip_filter_plugins.add("NodePorts")
    c = s.clone()
    c.read(KEY).n += 1
    c.read(KEY).seen.append("b")
    c.skip_filter_plugins.add("X")
    assert s.read(KEY) == Counter(1, ["a"])
    assert c.read(PLAIN) == 7
    assert s.skip_filter_plugins == {"NodePorts"}


def test_delete_removes_the_key() -> None:
    s = CycleState()
    s.write(PLAIN, 1)
    s.delete(PLAIN)
    assert s.get(PLAIN) is None
