from __future__ import annotations

from builders import make_node, make_pod

from kubesched._cache import Cache
from kubesched.framework import HostPortInfo, NodeInfo


def test_add_and_remove_pod_keep_requested_and_table_in_sync() -> None:
    cache = Cache()
    ni = cache.add_node(make_node().name("n").capacity_map({"cpu": "4", "memory": "8Gi", "pods": 10,
                                                                          "example.com/gpu": 2}).obj())
    p = make_pod().name("p").container(requests={"cpu": "500m", "memory": "1Gi", "example.com/gpu": 1}).node("n").obj()
    cache.add_pod(p)
    t = cache.table
    assert (ni.requested.milli_cpu, ni.requested.memory, ni.requested.scalar["example.com/gpu"]) == (500, 2**30, 1)
    assert (t.req_cpu[ni.index], t.req_mem[ni.index], t.pod_count[ni.index]) == (500, 2**30, 1)
    assert t.scalar_req["example.com/gpu"][ni.index] == 1
    cache.remove_pod(p)
    assert (ni.requested.milli_cpu, t.req_cpu[ni.index], t.pod_count[ni.index], len(ni.pods)) == (0, 0, 0, 0)


def test_non_zero_requested_uses_scheduler_defaults_for_missing_requests() -> None:
    ni = NodeInfo(make_node().name("n").obj(), make_pod().name("p").obj())
    assert (ni.non_zero_requested.milli_cpu, ni.non_zero_requested.memory) == (100, 200 * 1024 * 1024)
    assert (ni.requested.milli_cpu, ni.requested.memory) == (0, 0)


def test_clone_is_detached() -> None:
    ni = NodeInfo(make_node().name("n").obj(), make_pod().name("p").req(cpu="1").obj())
    c = ni.clone()
    c.add_pod(make_pod().name("q").req(cpu="1").obj())
    assert len(ni.pods) == 1 and ni.requested.milli_cpu == 1000
    assert len(c.pods) == 2 and c.requested.milli_cpu == 2000


def test_pods_with_affinity_are_tracked() -> None:
    aff = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    p = make_pod().name("p").affinity(aff).obj()
    ni = NodeInfo(make_node().name("n").obj(), p)
    assert len(ni.pods_with_affinity) == 1 and len(ni.pods_with_required_anti_affinity) == 1
    ni.remove_pod(p)
    assert not ni.pods_with_affinity and not ni.pods_with_required_anti_affinity


def test_host_port_conflicts_follow_upstream_wildcard_rules() -> None:
    h = HostPortInfo()
    h.add("127.0.0.1", "TCP", 80)
    assert h.check_conflict("0.0.0.0", "TCP", 80)
    assert h.check_conflict("127.0.0.1", "", 80)
    assert not h.check_conflict("127.0.0.2", "TCP", 80)
    assert not h.check_conflict("127.0.0.1", "UDP", 80)
    h.add("", "UDP", 53)
    assert h.check_conflict("10.0.0.1", "UDP", 53)
