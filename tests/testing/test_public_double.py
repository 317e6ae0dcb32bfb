"""kubesched.testing: the local API server double has a public home for plugin authors, and the
live scheduler never imports it."""

from __future__ import annotations

import subprocess
import sys

import httpx

from kubesched.testing import LocalApiServer


def test_the_double_serves_what_a_plugin_authors_test_creates() -> None:
    with LocalApiServer() as api:
        api.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
        assert api.get("nodes", "n1")["metadata"]["name"] == "n1"
        listed = httpx.get(f"{api.url}/api/v1/nodes").json()
        assert [n["metadata"]["name"] for n in listed["items"]] == ["n1"]


def test_the_live_path_does_not_load_the_double() -> None:
    code = ("import sys, kubesched.live.command, kubesched.live.runner; "
            "print(any(m.startswith(('kubesched.testing', 'kubesched.bench')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
