"""The conformance corpora, one test per scenario.

- ``../shared/conformance``: the default configuration on clusters under 100 nodes (v1.30.12's
  traces, and in ``conformance4/corpus1-expected-1.36.tar.xz`` v1.36.2's of the same scenarios);
- ``../shared/conformance3`` (``corpus.tar.xz``, extracted once per test session): custom
  KubeSchedulerConfigurations (``configs/NAME.yaml``) and clusters of 100-700 nodes, where the
  sampled search (percentageOfNodesToScore, nextStartNodeIndex) decides which nodes are seen;
- ``../shared/conformance4`` (``corpus.tar.xz``): what 1.36 decides differently or only 1.36 has
  (DRA, pod-level resources, sidecars, matchLabelKeys, messages, ...), v1.36.2's traces.

Each scenario is simulated in-process exactly as `kubesched simulate SCENARIO --deterministic
--kube-version V [--config configs/SCENARIO.yaml] --trace OUT` does, and compared with the real
kube-scheduler's trace using the corpus' own checker, every field. Every scenario is expected to
pass: none is xfail.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from corpora import CORPUS, SHARED, conformance_checker

from kubesched.config import load_config
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.objects import load_manifests
from kubesched.simulation import Simulator

CORPUS3_ARCHIVE = SHARED / "conformance3" / "corpus.tar.xz"
CORPUS4_ARCHIVE = SHARED / "conformance4" / "corpus.tar.xz"
CORPUS1_136_ARCHIVE = SHARED / "conformance4" / "corpus1-expected-1.36.tar.xz"


def _scenarios() -> list[Any]:
    if not (CORPUS / "features.json").exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"conformance corpus not found at {CORPUS}"))]
    features = json.loads((CORPUS / "features.json").read_text())
    return [pytest.param(name, id=name) for name in sorted(features)]


def _archived(archive: Path, folder: str, ext: str) -> list[Any]:
    if not archive.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"corpus not found at {archive}"))]
    with tarfile.open(archive) as tar:
        names = sorted(Path(m.name).stem for m in tar.getmembers()
                       if m.isfile() and Path(m.name).parent.name == folder and m.name.endswith(ext))
    return [pytest.param(name, id=name) for name in names]


def _scenarios3() -> list[Any]:
    return _archived(CORPUS3_ARCHIVE, "scenarios", ".yaml")


def _extract(tmp_path_factory: pytest.TempPathFactory, archive: Path, name: str) -> Path:
    root = tmp_path_factory.mktemp(name)
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return root


@pytest.fixture(scope="session")
def corpus3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _extract(tmp_path_factory, CORPUS3_ARCHIVE, "conformance3")


@pytest.fixture(scope="session")
def corpus4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _extract(tmp_path_factory, CORPUS4_ARCHIVE, "conformance4")


@pytest.fixture(scope="session")
def corpus1_136(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _extract(tmp_path_factory, CORPUS1_136_ARCHIVE, "conformance1-136")


def _run_and_compare(corpus: Path, name: str, features: Features = FEATURES_1_30, expected: Path | None = None) -> None:
    check = conformance_checker()
    config_file = corpus / "configs" / f"{name}.yaml"
    config = load_config(config_file, features=features) if config_file.exists() else None
    # --deterministic reads the scenario as written: no controller expansion.
    objs = load_manifests([corpus / "scenarios" / f"{name}.yaml"], controllers="none", features=features)
    trace = Simulator(objs, config, deterministic=True, features=features).run().trace()
    # The trace must survive JSON, as the CLI writes it.
    trace = json.loads(json.dumps(trace))
    expected = json.loads(((expected or corpus / "expected") / f"{name}.json").read_text())
    diff = check.compare(expected, trace, check.FIELDS)
    assert diff is None, f"{diff[0]}: {diff[1]}"


@pytest.mark.parametrize("name", _scenarios())
def test_scenario_matches_kube_scheduler(name: str) -> None:
    _run_and_compare(CORPUS, name)


@pytest.mark.parametrize("name", _scenarios3())
def test_corpus3_scenario_matches_kube_scheduler(name: str, corpus3: Path) -> None:
    _run_and_compare(corpus3, name)


@pytest.mark.parametrize("name", _archived(CORPUS4_ARCHIVE, "scenarios", ".yaml"))
def test_corpus4_scenario_matches_kube_scheduler_1_36(name: str, corpus4: Path) -> None:
    _run_and_compare(corpus4, name, FEATURES_1_36)


@pytest.mark.parametrize("name", _archived(CORPUS1_136_ARCHIVE, "expected", ".json"))
def test_corpus1_scenario_matches_kube_scheduler_1_36(name: str, corpus1_136: Path) -> None:
    _run_and_compare(CORPUS, name, FEATURES_1_36, expected=corpus1_136 / "expected")
