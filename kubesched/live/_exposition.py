"""What /metrics renders of a prometheus_client registry (kubesched.live.serving imports this
module, and prometheus_client with it, only when metrics are built)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector


class WithoutCreated(Collector):
    """The registry's metrics without prometheus_client's ``*_created`` samples, which
    kube-scheduler does not expose (keeps the process-wide prometheus_client setting alone), and
    without the families ``--disabled-metrics`` names (``disabled``)."""

    def __init__(self, registry: CollectorRegistry, disabled: frozenset[str] = frozenset()) -> None:
        self._registry = registry
        self.disabled = disabled

    def collect(self) -> Iterable[Metric]:
        for family in self._registry.collect():
            if family.name in self.disabled or (family.type == "counter" and f"{family.name}_total" in self.disabled):
                continue
            out = Metric(family.name, family.documentation, family.type, family.unit)
            out.samples = [s for s in family.samples if s.name != family.name + "_created"]
            yield out


def exposed_without_created(registry: CollectorRegistry,
                            disabled: frozenset[str] = frozenset()) -> tuple[CollectorRegistry, WithoutCreated]:
    """A registry exposing ``registry``'s metrics without the ``*_created`` samples (and the
    ``disabled`` families), and its filter (whose ``disabled`` may change later)."""
    exposed = CollectorRegistry(auto_describe=False)
    filtered = WithoutCreated(registry, disabled)
    exposed.register(filtered)
    return exposed, filtered
