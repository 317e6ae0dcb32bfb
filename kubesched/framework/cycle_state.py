"""CycleState: per-scheduling-cycle storage shared by a profile's plugins.

Keys are typed: ``KEY: StateKey[MyState] = StateKey("PreFilterMyPlugin")`` and
``state.read(KEY)`` returns a ``MyState``. Values that the preemption dry run may mutate
(through PreFilter AddPod/RemovePod) implement ``clone()``; ``CycleState.clone`` calls it.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar, cast, runtime_checkable

from kubesched.errors import PluginError

T = TypeVar("T")


@runtime_checkable
class StateData(Protocol):
    def clone(self) -> StateData: ...


class StateKey(Generic[T]):
    """A typed key; identity is the name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"StateKey({self.name!r})"


class CycleState:
    __slots__ = ("_data", "skip_filter_plugins", "skip_score_plugins", "record_plugin_metrics")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        # Plugins whose PreFilter / PreScore returned Skip this cycle.
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.record_plugin_metrics = False

    def write(self, key: StateKey[T], value: T) -> None:
        self._data[key.name] = value

    def read(self, key: StateKey[T]) -> T:
        """The value stored under ``key``; PluginError if absent (a plugin bug: its
        PreFilter/PreScore did not run)."""
        try:
            return cast(T, self._data[key.name])
        except KeyError:
            raise PluginError(f"{key.name!r} not found in the cycle state") from None

    def get(self, key: StateKey[T]) -> T | None:
        return cast("T | None", self._data.get(key.name))

    def delete(self, key: StateKey[T]) -> None:
        self._data.pop(key.name, None)

    def __contains__(self, key: StateKey[Any]) -> bool:
        return key.name in self._data

    def clone(self) -> CycleState:
        c = CycleState()
        for k, v in self._data.items():
            # hasattr, not isinstance(v, StateData): a runtime-checkable Protocol check costs
            # ~10 us, and the preemption dry run clones the state once per node examined.
            c._data[k] = v.clone() if hasattr(v, "clone") else v
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.record_plugin_metrics = self.record_plugin_metrics
        return c


class PodsToActivate:
    """Pods a plugin wants moved to activeQ once this cycle ends (framework.PodsToActivate,
    stored under :data:`PODS_TO_ACTIVATE_KEY`): ``state.read(PODS_TO_ACTIVATE_KEY).map[key] = pod``
    with ``key = "namespace/name"``. The scheduler activates them after the scheduling cycle
    and again after the binding cycle."""

    __slots__ = ("map",)

    def __init__(self) -> None:
        self.map: dict[str, Any] = {}

    def clone(self) -> PodsToActivate:
        # Shared on purpose, as upstream: clones made for preemption's dry run write into the
        # same map as the cycle's state.
        return self


PODS_TO_ACTIVATE_KEY: StateKey[PodsToActivate] = StateKey("kubernetes.io/pods-to-activate")
