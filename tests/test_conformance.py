"""The conformance corpora, one test per scenario.

- ``../shared/conformance``: the default configuration on clusters under 100 nodes;
- ``../shared/conformance3`` (``corpus.tar.xz``, extracted once per test session): custom
  KubeSchedulerConfigurations (``configs/NAME.yaml``) and clusters of 100-700 nodes, where the
  sampled search (percentageOfNodesToScore, nextStartNodeIndex) decides which nodes are seen.

Each scenario is simulated in-process exactly as `kubesched simulate SCENARIO --deterministic
[--config configs/SCENARIO.yaml] --trace OUT` does, and compared with the real kube-scheduler
v1.30.12's trace using the corpus' own checker, every field. Every scenario is expected to pass:
none is xfail.
"""

from __future__ import annotations

import importlib.util
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from kubesched.config import load_config
from kubesched.objects import load_manifests
from kubesched.simulation import Simulator

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "conformance"
CORPUS3_ARCHIVE = SHARED / "conformance3" / "corpus.tar.xz"


def _checker() -> Any:
    spec = importlib.util.spec_from_file_location("conformance_check", CORPUS / "check.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _scenarios() -> list[Any]:
    if not (CORPUS / "features.json").exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"conformance corpus not found at {CORPUS}"))]
    features = json.loads((CORPUS / "features.json").read_text())
    return [pytest.param(name, id=name) for name in sorted(features)]


def _scenarios3() -> list[Any]:
    if not CORPUS3_ARCHIVE.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"corpus 3 not found at {CORPUS3_ARCHIVE}"))]
    with tarfile.open(CORPUS3_ARCHIVE) as tar:
        names = sorted(Path(m.name).stem for m in tar.getmembers()
                       if m.isfile() and Path(m.name).parent.name == "scenarios" and m.name.endswith(".yaml"))
    return [pytest.param(name, id=name) for name in names]


@pytest.fixture(scope="session")
def corpus3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("conformance3")
    with tarfile.open(CORPUS3_ARCHIVE) as tar:
        tar.extractall(root, filter="data")
    return root


def _run_and_compare(corpus: Path, name: str) -> None:
    check = _checker()
    config_file = corpus / "configs" / f"{name}.yaml"
    config = load_config(config_file) if config_file.exists() else None
    # --deterministic reads the scenario as written: no controller expansion.
    objs = load_manifests([corpus / "scenarios" / f"{name}.yaml"], controllers="none")
    trace = Simulator(objs, config, deterministic=True).run().trace()
    # The trace must survive JSON, as the CLI writes it.
    trace = json.loads(json.dumps(trace))
    expected = json.loads((corpus / "expected" / f"{name}.json").read_text())
    diff = check.compare(expected, trace, check.FIELDS)
    assert diff is None, f"{diff[0]}: {diff[1]}"


@pytest.mark.parametrize("name", _scenarios())
def test_scenario_matches_kube_scheduler(name: str) -> None:
    _run_and_compare(CORPUS, name)


@pytest.mark.parametrize("name", _scenarios3())
def test_corpus3_scenario_matches_kube_scheduler(name: str, corpus3: Path) -> None:
    _run_and_compare(corpus3, name)
