"""The informers' first LISTs sent ahead (kubesched.cluster.live.FirstLists: ``kubesched run``
sends them before it imports and builds the scheduler): each informer takes its answer
instead of listing again, watches from that answer's resourceVersion (a change made in
between is not missed), and lists by itself when the LIST sent ahead failed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from kubesched.cluster.live import ApiClient, ClusterConfig, FirstLists, LiveCluster, informed_resources
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.live.runner import LiveScheduler
from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import FAST, all_bound, node, pod, successful_binds, wait_until


@pytest.fixture
def api() -> Iterator[LocalApiServer]:
    with LocalApiServer(bookmark_interval=0.2) as server:
        for name in ("n1", "n2"):
            server.create(node(name))
        for name in ("a", "b", "c"):
            server.create(pod(name))
        yield server


def lists(api: LocalApiServer) -> Counter[tuple[str, int]]:
    """(resource, code) of every LIST the server answered."""
    return Counter((c.resource, c.code) for c in api.calls("list"))


def schedule_with(api: LocalApiServer, client: ApiClient, first: FirstLists) -> LiveScheduler:
    cluster = LiveCluster(client, options=FAST, first_lists=first)
    return LiveScheduler(None, cluster, deterministic=True).start_loop()


def test_each_informer_takes_the_list_sent_ahead_and_watches_from_it(api: LocalApiServer) -> None:
    client = ApiClient(ClusterConfig(server=api.url), qps=0, timeout=10.0)
    first = FirstLists(client)
    wait_until(lambda: sum(lists(api).values()) == len(informed_resources()), what="the lists sent ahead")
    api.create(pod("d"))  # after the LIST's answer, before any watch: the watch from its resourceVersion has it
    sched = schedule_with(api, client, first)
    try:
        wait_until(lambda: all_bound(api, ["a", "b", "c", "d"]), what="every pod bound")
    finally:
        sched.stop(timeout=10.0)
        client.close()
    assert lists(api) == Counter({(plural, 200): 1 for plural in informed_resources()})
    assert set(successful_binds(api).values()) == {1}


def test_an_informer_whose_list_sent_ahead_failed_lists_by_itself(api: LocalApiServer) -> None:
    api.fail_next(1, 500, verbs=["list"], resources=["pods"])
    client = ApiClient(ClusterConfig(server=api.url), qps=0, timeout=10.0)
    first = FirstLists(client)
    sched = schedule_with(api, client, first)
    try:
        wait_until(lambda: all_bound(api, ["a", "b", "c"]), what="every pod bound")
    finally:
        sched.stop(timeout=10.0)
        client.close()
    assert lists(api)[("pods", 500)] == 1 and lists(api)[("pods", 200)] == 1
    assert lists(api)[("nodes", 200)] == 1


@pytest.mark.parametrize("features", [FEATURES_1_30, FEATURES_1_36], ids=["1.30", "1.36"])
def test_the_lists_sent_ahead_are_those_of_the_releases_informers(api: LocalApiServer, features: Features) -> None:
    """resource.k8s.io's informers only where DynamicResourceAllocation is on."""
    client = ApiClient(ClusterConfig(server=api.url), qps=0, timeout=10.0)
    try:
        first = FirstLists(client, features)
        plurals = informed_resources(features)
        answers = {p: first.take(p) for p in plurals}
        assert all(a is not None for a in answers.values())
        assert first.take("pods") is None  # taken once
        assert ("resourceclaims" in plurals) == (features is FEATURES_1_36)
        pods = answers["pods"]
        assert pods is not None and len(pods[0]) == 3
    finally:
        client.close()
