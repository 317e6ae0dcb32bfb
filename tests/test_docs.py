"""docs/plugins.md: its "plugin in 20 lines" is real code — the ```python block is run as a
module, registered, configured with the document's ```yaml block, and schedules pods, both
through the API and through ``kubesched simulate --plugin file.py:new``."""

from __future__ import annotations

import json
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from simkit import cluster, node, pod, registry

from kubesched.cli import main
from kubesched.config import parse_config
from kubesched.errors import ConfigError
from kubesched.timeline import TimelineSimulator

DOC = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)


@pytest.fixture
def doc_plugin() -> Iterator[types.ModuleType]:
    """The document's python block, run as the module ``podcap``."""
    (code,) = blocks("python")
    module = types.ModuleType("podcap")
    module.__file__ = str(DOC)
    sys.modules["podcap"] = module  # dataclasses resolve annotations through the module
    try:
        exec(compile(code, str(DOC), "exec"), module.__dict__)  # noqa: S102 - the documentation's own example
        yield module
    finally:
        del sys.modules["podcap"]


def test_the_plugin_fits_in_20_lines() -> None:
    (code,) = blocks("python")
    assert len([line for line in code.splitlines() if line.strip()]) <= 20


def test_the_documented_plugin_and_config_schedule_pods(doc_plugin: types.ModuleType) -> None:
    (cfg_yaml,) = [b for b in blocks("yaml") if "PodCap" in b]
    import yaml

    cfg = parse_config(yaml.safe_load(cfg_yaml))
    nodes = [node("n1"), node("n2")]
    pods = [pod(f"p{i}", cpu="100m", arrives=i) for i in range(5)]
    sim = TimelineSimulator(cluster(nodes, pods), cfg, registry=registry(**{doc_plugin.NAME: doc_plugin.new}))
    res = sim.run()
    placed = [n for n in res.final.values() if n]
    assert sorted(placed) == ["n1", "n1", "n2", "n2"]  # maxPods: 2 from the document's pluginConfig
    assert res.final["default/p4"] is None
    assert res.pending["default/p4"] == "0/2 nodes are available: 2 node already runs 2 pods. no new claims to deallocate, preemption: " \
                                        "0/2 nodes " \
                                        "are available: 2 No preemption victims found for incoming pod."


def test_the_documented_args_error(doc_plugin: types.ModuleType) -> None:
    from kubesched._runtime.handle import FrameworkHandle
    from kubesched._runtime.profile import build_framework

    (cfg_yaml,) = [b for b in blocks("yaml") if "PodCap" in b]
    import yaml

    raw = yaml.safe_load(cfg_yaml)
    raw["profiles"][0]["pluginConfig"][0]["args"]["maxPods"] = "two"
    cfg = parse_config(raw)
    with pytest.raises(ConfigError) as err:
        build_framework(cfg.profiles[0], registry(PodCap=doc_plugin.new), FrameworkHandle.for_nodes([]), index=0)
    (documented,) = [line for b in blocks("text") for line in b.splitlines() if line.startswith("error:")]
    assert f"error: {err.value}" == documented


def test_the_documented_command_line(tmp_path: Path) -> None:
    (code,) = blocks("python")
    (cfg_yaml,) = [b for b in blocks("yaml") if "PodCap" in b]
    (tmp_path / "podcap.py").write_text(code)
    (tmp_path / "podcap.yaml").write_text(cfg_yaml)
    manifests = tmp_path / "my-cluster"
    manifests.mkdir()
    docs = []
    for n in ("n1", "n2", "n3"):
        docs.append(f"apiVersion: v1\nkind: Node\nmetadata: {{name: {n}}}\n"
                    f"status: {{capacity: {{cpu: '8', memory: 8Gi, pods: '110'}}}}\n")
    for i in range(7):
        docs.append(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\nspec: {{containers: [{{name: c, image: x}}]}}\n")
    (manifests / "all.yaml").write_text("---\n".join(docs))
    r = CliRunner().invoke(main, ["simulate", str(manifests), "--config", str(tmp_path / "podcap.yaml"),
                                  "--plugin", f"{tmp_path / 'podcap.py'}:new", "-o", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert sum(1 for n in out["placements"].values() if n) == 6
    (message,) = out["unschedulable"].values()
    assert message.startswith("0/3 nodes are available: 3 node already runs 2 pods.")
