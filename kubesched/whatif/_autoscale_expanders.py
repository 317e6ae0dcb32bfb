"""cluster-autoscaler's expanders: which scale-up option to take (cluster-autoscaler/expander).

Each expander is a filter that keeps the best options by its measure; when more than one
option is left, the ``random`` strategy picks among them (expander/factory/chain.go: the
filters, then the random fallback). The price expander returns one option (the lowest
score, the first on a tie).

- ``random`` (random/random.go): ``rand.Int31n(len(options))``; here a ``random.Random``
  seeded with ``--seed``, so a run is repeatable.
- ``most-pods`` (mostpods/mostpods.go): the options that schedule the most pods.
- ``least-waste`` (waste/waste.go): the least ``wastedCPU + wastedMemory``, each
  ``(capacity x nodes - requests of the option's pods) / (capacity x nodes)``; the
  template's ``status.capacity`` (its allocatable when the template gives no capacity) and
  the pods' regular containers' cpu and memory requests (resourcesForPods).
- ``price`` (price/price.go, preferred.go): ``score = suppressedUnfitness x (nodesPrice +
  stabilization) / (podsPrice + stabilization)``; a node's price is the group's
  ``pricePerHour`` for one hour, a pod's price the GCE price model's (cloudprovider/gce's
  PodPrice: cpu 0.033174/h per core, memory 0.004446/h per GiB, nvidia.com/gpu 0.700/h),
  the stabilization price that of a 500m / 500Mi pod; unfitness against the preferred node
  of the cluster's size (SimplePreferredNodeProvider, SimpleNodeUnfitness: cpu only),
  1000 for a template with GPUs (gpuUnfitnessOverride). Every group exists (no
  autoprovisioning: no notExistCoeficient).
- ``priority`` (priority/priority.go): the options whose group has the highest
  ``spec.priority`` (a group's priority stands for the ConfigMap's regexps matching its id);
  a group without one is not used (the ConfigMap names no regexp for it); when no option's
  group has a priority, random among all.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from kubesched.objects import Node, Pod

RANDOM, MOST_PODS, LEAST_WASTE, PRICE, PRIORITY = "random", "most-pods", "least-waste", "price", "priority"
EXPANDERS = (RANDOM, MOST_PODS, LEAST_WASTE, PRICE, PRIORITY)

# cloudprovider/gce/gce_price_model.go.
CPU_PRICE_PER_HOUR = 0.033174
MEMORY_PRICE_PER_HOUR_PER_GB = 0.004446
GPU_PRICE_PER_HOUR = 0.700
GPU_RESOURCE = "nvidia.com/gpu"
_GIB = 1024**3
_MIB = 1024**2
# expander/price/price.go: priceStabilizationPod (500m, 500Mi), gpuUnfitnessOverride.
STABILIZATION_CPU_MILLI, STABILIZATION_MEMORY = 500, 500 * _MIB
GPU_UNFITNESS_OVERRIDE = 1000.0


@dataclass(frozen=True, slots=True)
class Option:
    """expander.Option: a group, how many nodes it would add and the pods they would take."""

    group: str
    node_count: int
    pods: tuple[Pod, ...]


@dataclass(frozen=True, slots=True)
class Choice:
    """The option an expander picked (None: none), with each option's measure (for the report)."""

    option: Option | None
    measures: Mapping[str, str]


def _container_requests(pod: Pod) -> tuple[int, int]:
    """resourcesForPods for one pod: the regular containers' cpu (milli) and memory requests."""
    cpu = sum((c.requests.get("cpu", Fraction(0)) for c in pod.containers), Fraction(0))
    mem = sum((c.requests.get("memory", Fraction(0)) for c in pod.containers), Fraction(0))
    return math.ceil(cpu * 1000), math.ceil(mem)


def node_cpu_memory(node: Node) -> tuple[int, int]:
    """resourcesForNode: the node's capacity cpu (milli) and memory (bytes); the allocatable
    when the template gives no capacity."""
    src = node.capacity if node.capacity.get("cpu") and node.capacity.get("memory") else node.allocatable
    return src.get("cpu", 0), src.get("memory", 0)


def waste(option: Option, template: Node) -> float:
    """waste.go's wastedScore of an option."""
    cpu = sum(_container_requests(p)[0] for p in option.pods)
    mem = sum(_container_requests(p)[1] for p in option.pods)
    node_cpu, node_mem = node_cpu_memory(template)
    avail_cpu, avail_mem = node_cpu * option.node_count, node_mem * option.node_count
    return (avail_cpu - cpu) / avail_cpu + (avail_mem - mem) / avail_mem


def pod_price(pod: Pod) -> float:
    """GcePriceModel.PodPrice for one hour: per regular container, its requests' base price
    plus its GPUs'."""
    price = 0.0
    for c in pod.containers:
        if not c.requests:
            continue
        cpu = float(c.requests.get("cpu", Fraction(0)))
        mem = float(c.requests.get("memory", Fraction(0)))
        price += cpu * CPU_PRICE_PER_HOUR + mem / _GIB * MEMORY_PRICE_PER_HOUR_PER_GB
        price += float(c.requests.get(GPU_RESOURCE, Fraction(0))) * GPU_PRICE_PER_HOUR
    return price


def stabilization_price() -> float:
    return STABILIZATION_CPU_MILLI / 1000 * CPU_PRICE_PER_HOUR + STABILIZATION_MEMORY / _GIB * MEMORY_PRICE_PER_HOUR_PER_GB


def preferred_cpu_milli(cluster_size: int) -> int:
    """SimplePreferredNodeProvider.Node's cpu: doubles each time the cluster triples."""
    for most, cpu in ((2, 1), (6, 2), (20, 4), (60, 8), (200, 16)):
        if cluster_size <= most:
            return cpu * 1000
    return 32 * 1000


def price_score(option: Option, template: Node, node_price: float, cluster_size: int) -> float:
    """priceBased.BestOption's optionScore."""
    total_node_price = node_price * option.node_count
    total_pod_price = sum(pod_price(p) for p in option.pods)
    stab = stabilization_price()
    price_sub_score = (total_node_price + stab) / (total_pod_price + stab)
    preferred = preferred_cpu_milli(cluster_size)
    node_cpu = node_cpu_memory(template)[0]
    unfitness = max(preferred / node_cpu, node_cpu / preferred)
    suppressed = (unfitness - 1.0) * (1.0 - math.tanh((option.node_count - 1) / 15.0)) + 1.0
    if template.allocatable.get(GPU_RESOURCE, 0) > 0 or template.capacity.get(GPU_RESOURCE, 0) > 0:
        suppressed = GPU_UNFITNESS_OVERRIDE
    return suppressed * price_sub_score


def _keep_best(options: Sequence[Option], measure: Callable[[Option], float], *, highest: bool) -> list[Option]:
    best: list[Option] = []
    best_value = 0.0
    for o in options:
        v = measure(o)
        if not best or (v > best_value if highest else v < best_value):
            best, best_value = [o], v
        elif v == best_value:
            best.append(o)
    return best


def choose(expander: str, options: Sequence[Option], rng: random.Random, *, templates: Mapping[str, Node],
           prices: Mapping[str, float], priorities: Mapping[str, int | None], cluster_size: int,
           notes: list[str]) -> Choice:
    """The option ``expander`` picks among ``options`` (in node group order)."""
    if not options:
        return Choice(None, {})
    measures: dict[str, str] = {}
    kept: list[Option]
    if expander == RANDOM:
        kept = list(options)
    elif expander == MOST_PODS:
        for o in options:
            measures[o.group] = f"{len(o.pods)} pods"
        kept = _keep_best(options, lambda o: float(len(o.pods)), highest=True)
    elif expander == LEAST_WASTE:
        wastes = {o.group: waste(o, templates[o.group]) for o in options}
        for o in options:
            w = wastes[o.group]
            measures[o.group] = f"waste {w * 50.0:.2f}% blended"
        kept = _keep_best(options, lambda o: wastes[o.group], highest=False)
    elif expander == PRICE:
        scores = {o.group: price_score(o, templates[o.group], prices[o.group], cluster_size) for o in options}
        for o in options:
            measures[o.group] = f"score {scores[o.group]:.6f}"
        best: Option | None = None
        for o in options:  # priceBased.BestOption: a strictly lower score replaces the best
            if best is None or scores[best.group] > scores[o.group]:
                best = o
        return Choice(best, measures)
    elif expander == PRIORITY:
        with_priority = [o for o in options if priorities.get(o.group) is not None]
        for o in options:
            p = priorities.get(o.group)
            measures[o.group] = f"priority {p}" if p is not None else "no priority"
            if p is None:
                notes.append(f"Priority expander: node group {o.group} not found in priority expander configuration. "
                             f"The group won't be used.")
        if not with_priority:
            notes.append("Priority expander: no priorities info found for any of the expansion options. Falling back "
                         "to random choice.")
            kept = list(options)
        else:
            kept = _keep_best(with_priority, lambda o: float(priorities[o.group] or 0), highest=True)
    else:
        raise ValueError(f"unknown expander {expander!r}")
    if len(kept) == 1:
        return Choice(kept[0], measures)
    return Choice(kept[rng.randrange(len(kept))], measures)
