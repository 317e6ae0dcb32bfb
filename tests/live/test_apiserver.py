"""The local API server speaks the Kubernetes API as documented: LIST/WATCH with
resourceVersions, selectors (and the watch cache's filtering: an object leaving a selector
arrives as DELETED), 410 Gone, bookmarks, pods/binding, status patches, deletion with
preconditions and grace periods, optimistic concurrency on Leases, Events, pod admission,
and the fault-injection hooks the live-scheduler tests rely on."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kubesched.testing.apiserver import LocalApiServer, merge_patch

from .apihelpers import node, pod, priority_class, wait_until

SMP = {"Content-Type": "application/strategic-merge-patch+json"}
MP = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture
def api() -> Iterator[LocalApiServer]:
    with LocalApiServer(bookmark_interval=0.1) as server:
        yield server


@pytest.fixture
def http(api: LocalApiServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api.url, timeout=5.0) as c:
        yield c


def _watch(http: httpx.Client, path: str, *, count: int, **params: str) -> list[dict[str, Any]]:
    """The first ``count`` events of a watch (or fewer if it ends)."""
    out: list[dict[str, Any]] = []
    with http.stream("GET", path, params={"watch": "1", **params}) as resp:
        assert resp.status_code == 200
        for line in resp.iter_lines():
            out.append(json.loads(line))
            if len(out) >= count:
                break
    return out


def _bg_watch(http: httpx.Client, path: str, **params: str) -> tuple[list[Any], threading.Thread]:
    got: list[Any] = []

    def run() -> None:
        try:
            with http.stream("GET", path, params={"watch": "1", **params}) as resp:
                for line in resp.iter_lines():
                    got.append(json.loads(line))
        except httpx.HTTPError as e:
            got.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return got, t


# ------------------------------------------------------------------------------------ list / watch
def test_list_carries_the_revision_and_items_without_kind(api: LocalApiServer, http: httpx.Client) -> None:
    api.create(node("b"))
    api.create(node("a"))
    body = http.get("/api/v1/nodes").json()
    assert body["kind"] == "NodeList" and body["apiVersion"] == "v1"
    assert body["metadata"]["resourceVersion"] == str(api.store.rv)
    assert [i["metadata"]["name"] for i in body["items"]] == ["a", "b"]
    assert all("kind" not in i for i in body["items"])


def test_watch_from_a_revision_sends_what_came_after_it(api: LocalApiServer, http: httpx.Client) -> None:
    api.create(node("a"))
    rv = http.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
    api.create(node("b"))
    api.delete("nodes", "a")
    events = _watch(http, "/api/v1/nodes", count=2, resourceVersion=rv)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "b"), ("DELETED", "a")]
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) > int(events[0]["object"]["metadata"]
                                                                          ["resourceVersion"])


def test_watch_without_revision_starts_with_the_current_objects(api: LocalApiServer, http: httpx.Client) -> None:
    api.create(node("a"))
    events = _watch(http, "/api/v1/nodes", count=1, resourceVersion="0")
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "a"


def test_bookmarks_carry_the_revision_and_timeout_ends_the_stream(api: LocalApiServer, http: httpx.Client) -> None:
    rv = str(api.store.rv)
    events = _watch(http, "/api/v1/pods", count=100, resourceVersion=rv, allowWatchBookmarks="true",
                    timeoutSeconds="1")
    assert events and all(e["type"] == "BOOKMARK" for e in events)
    assert events[0]["object"] == {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": rv}}


def test_an_object_leaving_the_field_selector_is_deleted_for_the_watch(api: LocalApiServer,
                                                                       http: httpx.Client) -> None:
    api.create(node("n1"))
    api.create(pod("p"))
    rv = http.get("/api/v1/pods").json()["metadata"]["resourceVersion"]
    api.bind("default", "p", "n1")
    unassigned = _watch(http, "/api/v1/pods", count=1, resourceVersion=rv, fieldSelector="spec.nodeName=")
    assigned = _watch(http, "/api/v1/pods", count=1, resourceVersion=rv, fieldSelector="spec.nodeName!=")
    assert unassigned[0]["type"] == "DELETED" and assigned[0]["type"] == "ADDED"
    api.patch("pods", "p", {"status": {"phase": "Succeeded"}}, "default", subresource="status")
    live = _watch(http, "/api/v1/pods", count=1, resourceVersion=assigned[0]["object"]["metadata"]
                  ["resourceVersion"], fieldSelector="status.phase!=Succeeded,status.phase!=Failed")
    assert live[0]["type"] == "DELETED"
    assert http.get("/api/v1/pods", params={"fieldSelector": "status.phase!=Succeeded"}).json()["items"] == []


def test_label_and_field_selectors_on_list(api: LocalApiServer, http: httpx.Client) -> None:
    api.create(pod("a", labels={"app": "web", "tier": "1"}))
    api.create(pod("b", labels={"app": "db"}))
    api.create(pod("c", scheduler="other"))

    def names(**params: str) -> list[str]:
        return [i["metadata"]["name"] for i in http.get("/api/v1/pods", params=params).json()["items"]]

    assert names(labelSelector="app=web") == ["a"]
    assert names(labelSelector="app in (web,db),!tier") == ["b"]
    assert names(labelSelector="app") == ["a", "b"]
    assert names(fieldSelector="spec.schedulerName=other") == ["c"]
    assert names(fieldSelector="metadata.name!=a") == ["b", "c"]
    assert http.get("/api/v1/pods", params={"fieldSelector": "spec.bogus=x"}).status_code == 400


@pytest.mark.parametrize("how", ["compaction", "forced event", "forced http"])
def test_a_too_old_revision_is_gone(api: LocalApiServer, http: httpx.Client, how: str) -> None:
    api.create(node("a"))
    if how == "compaction":
        api.compact()
    else:
        api.expire_next_watch(http=how == "forced http")
    with http.stream("GET", "/api/v1/nodes", params={"watch": "1", "resourceVersion": "1"}) as resp:
        lines = [json.loads(x) for x in resp.iter_lines()]
        code = resp.status_code
    if how == "forced http":
        assert code == 410
    else:
        assert code == 200 and len(lines) == 1
        assert lines[0]["type"] == "ERROR" and lines[0]["object"]["code"] == 410
        assert lines[0]["object"]["reason"] == "Expired"


# ------------------------------------------------------------------------------------ binding
def test_binding_sets_the_node_and_a_second_binding_conflicts(api: LocalApiServer, http: httpx.Client) -> None:
    created = api.create(pod("p"))
    url = "/api/v1/namespaces/default/pods/p/binding"
    bad_uid = http.post(url, json={"metadata": {"name": "p", "uid": "other"}, "target": {"kind": "Node", "name": "n"}})
    assert bad_uid.status_code == 409 and "Precondition failed: UID in precondition" in bad_uid.json()["message"]
    ok = http.post(url, json={"metadata": {"name": "p", "uid": created["metadata"]["uid"]},
                              "target": {"kind": "Node", "name": "n1"}})
    assert ok.status_code == 201 and ok.json()["status"] == "Success"
    got = api.get("pods", "p", "default")
    assert got["spec"]["nodeName"] == "n1"
    assert [(c["type"], c["status"]) for c in got["status"]["conditions"]] == [("PodScheduled", "True")]
    again = http.post(url, json={"target": {"kind": "Node", "name": "n2"}})
    assert again.status_code == 409
    assert again.json()["message"] == ('Operation cannot be fulfilled on pods/binding "p": pod p is already assigned '
                                       'to node "n1"')
    assert http.post("/api/v1/namespaces/default/pods/nope/binding",
                     json={"target": {"name": "n1"}}).status_code == 404


def test_binding_a_gated_pod_conflicts(api: LocalApiServer, http: httpx.Client) -> None:
    api.create(pod("gated", schedulingGates=[{"name": "wait"}]))
    r = http.post("/api/v1/namespaces/default/pods/gated/binding", json={"target": {"name": "n1"}})
    assert r.status_code == 409 and "schedulingGates" in r.json()["message"]


# ------------------------------------------------------------------------------------ patch / update
def test_status_patch_merges_conditions_by_type_and_keeps_the_spec(api: LocalApiServer, http: httpx.Client) -> None:
    created = api.create(pod("p"))
    url = "/api/v1/namespaces/default/pods/p/status"
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no"}
    r = http.patch(url, json={"metadata": {"uid": created["metadata"]["uid"]},
                              "status": {"conditions": [cond], "nominatedNodeName": "n1"},
                              "spec": {"nodeName": "sneaky"}}, headers=SMP)
    assert r.status_code == 200
    r = http.patch(url, json={"status": {"conditions": [{"type": "Other", "status": "True"}]}}, headers=SMP)
    got = r.json()
    assert [c["type"] for c in got["status"]["conditions"]] == ["PodScheduled", "Other"]
    assert got["status"]["nominatedNodeName"] == "n1" and "nodeName" not in got["spec"]
    cleared = http.patch(url, json={"status": {"nominatedNodeName": None}}, headers=SMP).json()
    assert "nominatedNodeName" not in cleared["status"]
    replaced = http.patch(url, json={"status": {"conditions": [cond]}}, headers=MP).json()
    assert [c["type"] for c in replaced["status"]["conditions"]] == ["PodScheduled"]
    wrong = http.patch(url, json={"metadata": {"uid": "someone-else"}, "status": {}}, headers=SMP)
    assert wrong.status_code == 409
    assert http.patch(url, json={}, headers={"Content-Type": "application/json-patch+json"}).status_code == 415


def test_strategic_merge_deletes_a_keyed_element() -> None:
    cur = {"status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}]}}
    out = merge_patch(cur, {"status": {"conditions": [{"type": "A", "$patch": "delete"}],
                                       "$setElementOrder/conditions": [{"type": "B"}]}}, strategic=True)
    assert out == {"status": {"conditions": [{"type": "B", "status": "True"}]}}


# ------------------------------------------------------------------------------------ delete
def test_delete_checks_preconditions_and_honours_the_grace_period(api: LocalApiServer, http: httpx.Client) -> None:
    api.create(pod("bound", node_name="n1", grace=1))
    api.create(pod("unbound", grace=30))
    url = "/api/v1/namespaces/default/pods/bound"
    wrong = http.request("DELETE", url, json={"preconditions": {"uid": "x"}})
    assert wrong.status_code == 409 and wrong.json()["reason"] == "Conflict"
    assert "UID in precondition: x" in wrong.json()["message"]
    uid = api.get("pods", "bound", "default")["metadata"]["uid"]
    r = http.request("DELETE", url, json={"preconditions": {"uid": uid}})
    assert r.status_code == 200 and r.json()["metadata"]["deletionGracePeriodSeconds"] == 1
    assert api.get("pods", "bound", "default")["metadata"]["deletionTimestamp"]
    # Never-scheduled pods go at once, whatever their grace period.
    assert http.delete("/api/v1/namespaces/default/pods/unbound").status_code == 200
    assert http.get("/api/v1/namespaces/default/pods/unbound").status_code == 404
    wait_until(lambda: http.get(url).status_code == 404, timeout=5, what="the graceful deletion")


def test_delete_with_grace_zero_is_immediate(api: LocalApiServer, http: httpx.Client) -> None:
    api.create(pod("p", node_name="n1", grace=30))
    assert http.delete("/api/v1/namespaces/default/pods/p", params={"gracePeriodSeconds": "0"}).status_code == 200
    assert http.get("/api/v1/namespaces/default/pods/p").status_code == 404


# ------------------------------------------------------------------------------------ leases, events
def test_leases_have_optimistic_concurrency(http: httpx.Client) -> None:
    url = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "kubesched"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    created = http.post(url, json=lease)
    assert created.status_code == 201
    dup = http.post(url, json=lease)
    assert dup.status_code == 409 and dup.json()["reason"] == "AlreadyExists"
    got = http.get(f"{url}/kubesched").json()
    rv = got["metadata"]["resourceVersion"]
    got["spec"]["holderIdentity"] = "b"
    assert http.put(f"{url}/kubesched", json=got).status_code == 200
    stale = http.put(f"{url}/kubesched", json={**got, "metadata": {**got["metadata"], "resourceVersion": rv}})
    assert stale.status_code == 409
    assert stale.json()["message"].startswith('Operation cannot be fulfilled on leases.coordination.k8s.io '
                                              '"kubesched": the object has been modified')
    assert http.get(f"{url}/other").status_code == 404


def test_events_are_created(api: LocalApiServer, http: httpx.Client) -> None:
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "p.1", "namespace": "default"},
          "reason": "Scheduled", "note": "Successfully assigned default/p to n1", "type": "Normal",
          "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}
    assert http.post("/apis/events.k8s.io/v1/namespaces/default/events", json=ev).status_code == 201
    assert [e["reason"] for e in api.objects("events")] == ["Scheduled"]


# ------------------------------------------------------------------------------------ admission
def test_pod_admission_resolves_priority_and_adds_default_tolerations(api: LocalApiServer,
                                                                      http: httpx.Client) -> None:
    api.create(priority_class("high", 1000))
    api.create({**priority_class("default-class", 7), "globalDefault": True})
    high = api.create(pod("h", priority_class="high"))
    plain = api.create(pod("d"))
    assert high["spec"]["priority"] == 1000 and high["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert plain["spec"]["priority"] == 7 and plain["spec"]["priorityClassName"] == "default-class"
    assert {t["key"] for t in plain["spec"]["tolerations"]} == {"node.kubernetes.io/not-ready",
                                                                "node.kubernetes.io/unreachable"}
    assert plain["spec"]["schedulerName"] == "default-scheduler" and plain["status"]["phase"] == "Pending"
    missing = http.post("/api/v1/namespaces/default/pods", json=pod("x", priority_class="nope"))
    assert missing.status_code == 403 and "no PriorityClass with name nope was found" in missing.json()["message"]
    no_ns = http.post("/api/v1/namespaces/ghost/pods", json=pod("x", namespace="ghost"))
    assert no_ns.status_code == 404 and no_ns.json()["message"] == 'namespaces "ghost" not found'
    invalid = http.post("/api/v1/namespaces/default/pods", json={"metadata": {"name": "x"}, "spec": {}})
    assert invalid.status_code == 422


def test_unknown_paths_are_not_found(http: httpx.Client) -> None:
    assert http.get("/api/v1/secrets").status_code == 404
    assert http.get("/apis/apps/v2/replicasets").status_code == 404
    assert http.get("/healthz").text == "ok"


# ------------------------------------------------------------------------------------ faults
def test_fail_next_and_delay_next(api: LocalApiServer, http: httpx.Client) -> None:
    api.fail_next(2, 503, verbs=["list"], resources=["nodes"])
    assert http.get("/api/v1/pods").status_code == 200  # not matched
    assert [http.get("/api/v1/nodes").status_code for _ in range(3)] == [503, 503, 200]
    api.delay_next(1, 0.3)
    t0 = time.monotonic()
    http.get("/api/v1/nodes")
    assert time.monotonic() - t0 >= 0.3


def test_retry_after_dropped_replies_and_slow_writes(api: LocalApiServer, http: httpx.Client) -> None:
    api.fail_next(1, 429, verbs=["list"], retry_after=2)
    r = http.get("/api/v1/nodes")
    assert r.status_code == 429 and r.headers["retry-after"] == "2"
    # A reply dropped: the change is made, the client sees the connection cut.
    api.create(pod("p"))
    api.drop_reply_next(1, verbs=["create"], resources=["pods"])
    with pytest.raises(httpx.RemoteProtocolError):
        http.post("/api/v1/namespaces/default/pods/p/binding", json={"target": {"kind": "Node", "name": "n1"}})
    assert api.get("pods", "p", "default")["spec"]["nodeName"] == "n1"
    assert [(c.code, c.reply_dropped) for c in api.calls("create", "pods", "binding")] == [(201, True)]
    # A slow write is made even if the client gave up waiting.
    api.create(pod("q"))
    api.delay_next(1, 0.5, verbs=["create"])
    with pytest.raises(httpx.ReadTimeout):
        http.post("/api/v1/namespaces/default/pods/q/binding", json={"target": {"kind": "Node", "name": "n1"}},
                  timeout=0.2)
    wait_until(lambda: api.get("pods", "q", "default")["spec"].get("nodeName") == "n1", what="the slow bind made")
    assert api.calls("create", "pods", "binding")[-1].at < time.monotonic() - 0.4  # recorded at its arrival


def test_a_watch_cut_mid_event_and_the_record_of_watch_ends(api: LocalApiServer, http: httpx.Client) -> None:
    got, t = _bg_watch(http, "/api/v1/nodes", resourceVersion=str(api.store.rv))
    wait_until(lambda: api.store.open_watch_count() == 1, what="the watch open")
    assert api.drop_watches(mid_event=True) == 1
    t.join(5)
    assert not t.is_alive() and isinstance(got[-1], httpx.RemoteProtocolError)
    wait_until(lambda: api.watch_ends, what="the end recorded")
    end = api.watch_ends[-1]
    assert (end.resource, end.how) == ("nodes", "drop-mid-event") and end.opened <= end.ended


@pytest.mark.parametrize("abrupt", [True, False], ids=["abrupt drop cuts the connection", "clean close ends"])
def test_drop_watches(api: LocalApiServer, http: httpx.Client, abrupt: bool) -> None:
    got, t = _bg_watch(http, "/api/v1/nodes", resourceVersion=str(api.store.rv))
    wait_until(lambda: api.store.open_watch_count() == 1, what="the watch open")
    api.create(node("a"))
    wait_until(lambda: got, what="the first event")
    assert api.drop_watches(abrupt=abrupt) == 1
    t.join(5)
    assert not t.is_alive()
    assert isinstance(got[-1], httpx.RemoteProtocolError) == abrupt


@pytest.mark.parametrize("keep", [True, False], ids=["restart keeps the state", "restart loses the state"])
def test_restart(api: LocalApiServer, http: httpx.Client, keep: bool) -> None:
    api.create(node("a"))
    rv = str(api.store.rv)
    got, t = _bg_watch(http, "/api/v1/nodes", resourceVersion=rv)
    wait_until(lambda: api.store.open_watch_count() == 1, what="the watch open")
    api.restart(keep_state=keep)
    t.join(5)
    assert not t.is_alive() and isinstance(got[-1], httpx.HTTPError)
    names = [i["metadata"]["name"] for i in http.get("/api/v1/nodes").json()["items"]]
    assert names == (["a"] if keep else [])
    resumed = _watch(http, "/api/v1/nodes", count=1, resourceVersion=rv, timeoutSeconds="1")
    if keep:
        assert resumed == []
    else:
        assert resumed[0]["type"] == "ERROR" and resumed[0]["object"]["code"] == 410
