"""The local API server's LIST as the API server serves it: ``limit`` and opaque ``continue``
tokens (every page at the first page's revision), ``resourceVersion`` with
``resourceVersionMatch`` Exact / NotOlderThan served from the event history (410 Expired once
compacted, 504 for a future revision), the watch cache's ``resourceVersion=0`` ignoring the
limit, ListOptions validation, and resources a server does not serve."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import node, pod


@pytest.fixture
def api() -> Iterator[LocalApiServer]:
    with LocalApiServer(history=1000) as server:
        yield server


@pytest.fixture
def http(api: LocalApiServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api.url, timeout=5.0) as c:
        yield c


def _names(body: dict[str, Any]) -> list[str]:
    return [i["metadata"]["name"] for i in body["items"]]


def _pages(http: httpx.Client, path: str, **params: str) -> list[dict[str, Any]]:
    """Every page of a paged LIST (later pages: the token instead of the revision, as client-go's
    pager)."""
    pages = [http.get(path, params=params).json()]
    rest = {k: v for k, v in params.items() if k not in ("resourceVersion", "resourceVersionMatch")}
    while pages[-1]["metadata"].get("continue"):
        pages.append(http.get(path, params={**rest, "continue": pages[-1]["metadata"]["continue"]}).json())
    return pages


# ------------------------------------------------------------------------------------ paging
def test_limit_pages_the_list_and_the_last_page_has_no_token(api: LocalApiServer, http: httpx.Client) -> None:
    for name in ("e", "a", "d", "c", "b"):
        api.create(node(name))
    pages = _pages(http, "/api/v1/nodes", limit="2")
    assert [_names(p) for p in pages] == [["a", "b"], ["c", "d"], ["e"]]
    assert [p["metadata"].get("remainingItemCount") for p in pages] == [3, 1, None]
    assert "continue" not in pages[-1]["metadata"]


def test_the_continue_token_is_base64_of_the_revision_and_the_next_key(api: LocalApiServer,
                                                                       http: httpx.Client) -> None:
    api.create(pod("p1", node_name="n"))
    api.create(pod("p2", node_name="n"))
    body = http.get("/api/v1/pods", params={"limit": "1"}).json()
    token = body["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert decoded == {"v": "meta.k8s.io/v1", "rv": int(body["metadata"]["resourceVersion"]), "start": "default/p1\x00"}


def test_every_page_is_read_at_the_first_pages_revision(api: LocalApiServer, http: httpx.Client) -> None:
    for name in ("a", "b", "c"):
        api.create(node(name, labels={"v": "1"}))
    first = http.get("/api/v1/nodes", params={"limit": "1"}).json()
    rv = first["metadata"]["resourceVersion"]
    # Meanwhile: c changes, d appears, b goes.
    api.patch("nodes", "c", {"metadata": {"labels": {"v": "2"}}})
    api.create(node("d"))
    api.delete("nodes", "b")
    rest = http.get("/api/v1/nodes", params={"limit": "5", "continue": first["metadata"]["continue"]}).json()
    assert rest["metadata"]["resourceVersion"] == rv
    assert _names(rest) == ["b", "c"]
    assert rest["items"][1]["metadata"]["labels"]["v"] == "1"


def test_a_selector_filters_within_the_pages(api: LocalApiServer, http: httpx.Client) -> None:
    for i in range(6):
        api.create(node(f"n{i}", labels={"even": str(i % 2 == 0).lower()}))
    pages = _pages(http, "/api/v1/nodes", limit="2", labelSelector="even=true")
    assert [n for p in pages for n in _names(p)] == ["n0", "n2", "n4"]
    assert all("remainingItemCount" not in p["metadata"] for p in pages)


def test_a_namespace_list_pages_by_name(api: LocalApiServer, http: httpx.Client) -> None:
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    for name in ("b", "a"):
        api.create(pod(name, node_name="n"))
        api.create(pod(name, node_name="n", namespace="other"))
    pages = _pages(http, "/api/v1/namespaces/other/pods", limit="1")
    assert [n for p in pages for n in _names(p)] == ["a", "b"]
    assert all(i["metadata"]["namespace"] == "other" for p in pages for i in p["items"])


def test_resource_version_zero_is_the_watch_cache_which_ignores_the_limit(api: LocalApiServer,
                                                                          http: httpx.Client) -> None:
    for name in ("a", "b", "c"):
        api.create(node(name))
    body = http.get("/api/v1/nodes", params={"limit": "1", "resourceVersion": "0"}).json()
    assert _names(body) == ["a", "b", "c"] and "continue" not in body["metadata"]


# ------------------------------------------------------------------------------------ revisions
def test_exact_reads_the_state_at_that_revision(api: LocalApiServer, http: httpx.Client) -> None:
    api.create(node("a", labels={"v": "1"}))
    api.create(node("b"))
    rv = str(api.store.rv)
    api.patch("nodes", "a", {"metadata": {"labels": {"v": "2"}}})
    api.delete("nodes", "b")
    api.create(node("c"))
    old = http.get("/api/v1/nodes", params={"resourceVersion": rv, "resourceVersionMatch": "Exact"}).json()
    assert old["metadata"]["resourceVersion"] == rv
    assert _names(old) == ["a", "b"] and old["items"][0]["metadata"]["labels"]["v"] == "1"
    # Legacy: a resourceVersion with a limit and no match is exact too.
    legacy = http.get("/api/v1/nodes", params={"resourceVersion": rv, "limit": "10"}).json()
    assert _names(legacy) == ["a", "b"]


def test_not_older_than_reads_the_newest_state(api: LocalApiServer, http: httpx.Client) -> None:
    api.create(node("a"))
    rv = str(api.store.rv)
    api.create(node("b"))
    body = http.get("/api/v1/nodes", params={"resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"}).json()
    assert _names(body) == ["a", "b"] and body["metadata"]["resourceVersion"] == str(api.store.rv)


def test_other_resources_changes_do_not_leak_into_an_exact_list(api: LocalApiServer, http: httpx.Client) -> None:
    api.create(node("a"))
    api.create(pod("p", node_name="a"))
    rv = str(api.store.rv)
    api.delete("pods", "p", "default")
    api.create(node("b"))
    pods = http.get("/api/v1/pods", params={"resourceVersion": rv, "resourceVersionMatch": "Exact"}).json()
    nodes = http.get("/api/v1/nodes", params={"resourceVersion": rv, "resourceVersionMatch": "Exact"}).json()
    assert _names(pods) == ["p"] and _names(nodes) == ["a"]


@pytest.mark.parametrize("match", ["Exact", ""], ids=["exact match", "legacy exact with a limit"])
def test_an_exact_revision_older_than_the_history_is_expired(api: LocalApiServer, http: httpx.Client,
                                                             match: str) -> None:
    api.create(node("a"))
    rv = str(api.store.rv)
    api.create(node("b"))
    api.compact()
    params = {"resourceVersion": rv, "limit": "10"}
    if match:
        params["resourceVersionMatch"] = match
    resp = http.get("/api/v1/nodes", params=params)
    assert resp.status_code == 410
    assert resp.json()["reason"] == "Expired"
    assert resp.json()["message"] == "The resourceVersion for the provided list is too old."


def test_the_compaction_window_is_the_history_kept() -> None:
    with LocalApiServer(history=3) as api, httpx.Client(base_url=api.url) as http:
        api.create(node("a"))
        rv = str(api.store.rv)
        ok = http.get("/api/v1/nodes", params={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
        assert ok.status_code == 200
        for name in ("b", "c", "d", "e"):
            api.create(node(name))
        gone = http.get("/api/v1/nodes", params={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
        assert gone.status_code == 410


def test_a_continue_token_older_than_the_history_is_expired(api: LocalApiServer, http: httpx.Client) -> None:
    for name in ("a", "b"):
        api.create(node(name))
    first = http.get("/api/v1/nodes", params={"limit": "1"}).json()
    api.create(node("c"))
    api.compact()
    resp = http.get("/api/v1/nodes", params={"limit": "1", "continue": first["metadata"]["continue"]})
    assert resp.status_code == 410 and resp.json()["reason"] == "Expired"
    assert resp.json()["message"].startswith("The provided continue parameter is too old")


@pytest.mark.parametrize("match", ["Exact", "NotOlderThan"])
def test_a_future_revision_is_too_large(api: LocalApiServer, http: httpx.Client, match: str) -> None:
    api.create(node("a"))
    resp = http.get("/api/v1/nodes", params={"resourceVersion": str(api.store.rv + 5),
                                            "resourceVersionMatch": match})
    assert resp.status_code == 504
    assert resp.json()["message"] == f"Too large resource version: {api.store.rv + 5}, current: {api.store.rv}"


# ------------------------------------------------------------------------------------ validation
@pytest.mark.parametrize(("params", "code", "says"), [
    ({"resourceVersionMatch": "Exact"}, 422, "resourceVersionMatch is forbidden unless resourceVersion is provided"),
    ({"resourceVersion": "0", "resourceVersionMatch": "Exact"}, 422,
     'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
    ({"resourceVersion": "1", "resourceVersionMatch": "Newest"}, 422, 'Unsupported value: "Newest"'),
    ({"resourceVersion": "x", "resourceVersionMatch": "Exact"}, 400, "invalid resource version"),
    ({"continue": "not-a-token", "limit": "1"}, 400, "invalid continue token"),
], ids=["a match without a revision is forbidden", "exact revision 0 is forbidden",
        "an unknown match is unsupported", "a revision that is no number is a bad request",
        "a garbled continue token is a bad request"])
def test_list_options_are_validated(api: LocalApiServer, http: httpx.Client, params: dict[str, str], code: int,
                                    says: str) -> None:
    resp = http.get("/api/v1/nodes", params=params)
    assert resp.status_code == code
    assert says in resp.json()["message"]


def test_a_continue_token_with_a_revision_is_a_bad_request(api: LocalApiServer, http: httpx.Client) -> None:
    for name in ("a", "b"):
        api.create(node(name))
    token = http.get("/api/v1/nodes", params={"limit": "1"}).json()["metadata"]["continue"]
    resp = http.get("/api/v1/nodes", params={"limit": "1", "continue": token, "resourceVersion": "3"})
    assert resp.status_code == 400
    assert resp.json()["message"] == "specifying resource version is not allowed when using continue"
    both = http.get("/api/v1/nodes", params={"continue": token, "resourceVersion": "3",
                                             "resourceVersionMatch": "Exact"})
    assert both.status_code == 422 and "forbidden when continue is provided" in both.json()["message"]


def test_an_unserved_resource_is_not_found() -> None:
    with LocalApiServer(unserved=["resourceslices"]) as api, httpx.Client(base_url=api.url) as http:
        resp = http.get("/apis/resource.k8s.io/v1/resourceslices")
        assert resp.status_code == 404 and resp.json()["reason"] == "NotFound"
        assert http.get("/apis/resource.k8s.io/v1/deviceclasses").status_code == 200
        assert [(c.verb, c.resource, c.code) for c in api.calls()] == [
            ("list", "resourceslices", 404), ("list", "deviceclasses", 200)]
