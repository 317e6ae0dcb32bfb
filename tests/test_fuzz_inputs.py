"""Bad input gets a clear error naming the file, document and field, never a traceback.

The CI sample of the fuzzing that ``python scripts/fuzz.py --cases 10000`` does at scale: the same
strategies and checks (kubesched.testing.fuzz), 200 examples per target. Property tests start from
valid documents (the examples, ``config print-defaults``, a configuration and a Policy using every
field, valid extender replies) and mutate them: a value at a random path replaced by one of another
type, a huge number, an odd quantity or unicode; a key deleted, renamed or added; a value
duplicated into a list, wrapped, nested deeply; the file text given a duplicated key, truncated,
not UTF-8. Every loader must then either succeed or raise a KubeschedError naming the file (and,
for manifests, the document) and the field; a manifest file that loads must simulate without
crashing; an extender reply must decode or fail with one line. The bugs found are kept as explicit
regression cases at the end, each saying what it was.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cli import main
from kubesched.config import load_config, parse_config
from kubesched.config.policy import load_policy, parse_policy
from kubesched.errors import ApiError, ConfigError, KubeschedError, ManifestError
from kubesched.objects import load_manifests
from kubesched.simulation import Simulator
from kubesched.testing.fuzz import (
    FileCase,
    ReplyCase,
    alias_bomb,
    build_profiles,
    config_cases,
    contract_violation,
    load_bases,
    manifest_cases,
    mutated,
    policy_cases,
    reply_cases,
    run_file_case,
    run_reply_case,
)

ROOT = Path(__file__).resolve().parent.parent
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None,
                derandomize=True)
BASES = load_bases(ROOT)
MANIFESTS = BASES.manifests
CLUSTER = BASES.cluster
CONFIG = BASES.configs[0]  # `kubesched config print-defaults`
POLICY = BASES.policies[0]


def test_the_default_configuration_base_is_print_defaults() -> None:
    result = CliRunner().invoke(main, ["config", "print-defaults"])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.output) == CONFIG


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


def _write(path: Path, docs: list[Any]) -> None:
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")


def _load_or_clear_error(fn: Callable[[], Any], file: str, document: bool) -> Any:
    try:
        return fn()
    except KubeschedError as e:
        assert file in str(e), f"error does not name the file: {e}"
        if document:
            assert "document " in str(e), f"error does not name the document: {e}"
        assert "\n" not in str(e).strip(), f"error is not one line: {e!r}"
        return None


def _keeps_the_contract(target: str, case: FileCase | ReplyCase, workdir: Path) -> None:
    out = run_reply_case(case) if isinstance(case, ReplyCase) else run_file_case(target, case, workdir)  # type: ignore[arg-type]
    assert not out.failure, f"{out.failure}: {out.message}\n{out.detail}\ninput:\n{case.reproducer()}"


# ---------------------------------------------------------------- the four targets (as scripts/fuzz.py)
@FUZZ
@given(case=manifest_cases(BASES))
def test_manifest_files_load_and_simulate_or_fail_clearly(case: FileCase, workdir: Path) -> None:
    _keeps_the_contract("manifests", case, workdir)


@FUZZ
@given(case=config_cases(BASES))
def test_configuration_files_load_and_build_or_fail_clearly(case: FileCase, workdir: Path) -> None:
    _keeps_the_contract("config", case, workdir)


@FUZZ
@given(case=policy_cases(BASES))
def test_policy_files_load_and_build_or_fail_clearly(case: FileCase, workdir: Path) -> None:
    _keeps_the_contract("policy", case, workdir)


@FUZZ
@given(case=reply_cases())
def test_extender_replies_decode_or_fail_with_one_line(case: ReplyCase, workdir: Path) -> None:
    _keeps_the_contract("extender", case, workdir)


# ---------------------------------------------------------------- the loaders on their own
@FUZZ
@given(doc=mutated(MANIFESTS))
def test_mutated_manifest_loads_or_fails_clearly(doc: Any, workdir: Path) -> None:
    f = workdir / "manifest.yaml"
    _write(f, [doc])
    _load_or_clear_error(lambda: load_manifests([f]), str(f), document=True)


@FUZZ
@given(doc=mutated(CONFIG))
def test_mutated_configuration_loads_or_fails_clearly(doc: Any) -> None:
    _load_or_clear_error(lambda: parse_config(doc, file="fuzz-config.yaml"), "fuzz-config.yaml", document=False)


@FUZZ
@given(doc=mutated(POLICY))
def test_mutated_policy_loads_or_fails_clearly(doc: Any) -> None:
    _load_or_clear_error(lambda: parse_policy(doc, file="fuzz-policy.yaml"), "fuzz-policy.yaml", document=False)


@settings(FUZZ, max_examples=100)
@given(doc=mutated(CONFIG, max_mutations=1), policy=mutated(POLICY, max_mutations=1))
def test_mutated_files_read_from_disk_fail_clearly(doc: Any, policy: Any, workdir: Path) -> None:
    c, p = workdir / "config.yaml", workdir / "policy.yaml"
    _write(c, [doc])
    _write(p, [policy])
    _load_or_clear_error(lambda: load_config(c), str(c), document=False)
    _load_or_clear_error(lambda: load_policy(p), str(p), document=False)


@FUZZ
@given(index=st.integers(min_value=0, max_value=len(CLUSTER) - 1), doc=st.data())
def test_a_cluster_that_loads_simulates_without_crashing(index: int, doc: st.DataObject, workdir: Path) -> None:
    docs = list(CLUSTER)
    docs[index] = doc.draw(mutated(CLUSTER[index], max_mutations=1))
    f = workdir / "cluster.yaml"
    _write(f, docs)
    objs = _load_or_clear_error(lambda: load_manifests([f]), str(f), document=True)
    if objs is not None:
        try:
            Simulator(objs, deterministic=True).run()
        except KubeschedError:
            pass


@settings(FUZZ, max_examples=30)
@given(doc=mutated(CLUSTER, max_mutations=2))
def test_cli_simulate_exits_0_or_2_with_one_line(doc: Any, workdir: Path) -> None:
    f = workdir / "cli.yaml"
    _write(f, [*CLUSTER, doc])
    result = CliRunner().invoke(main, ["simulate", str(f), "--deterministic"])
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


# ---------------------------------------------------------------- regressions
_DEEP = "[" * 5000 + "]" * 5000
_DEPLOYMENT = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1, selector: {matchLabels: "
               "{a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]%s}}}\n")


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(_DEPLOYMENT % ", 1: x", None, id="a pod template with an integer key among string keys loads"),
    pytest.param(_DEPLOYMENT % (", x: " + "[" * 150 + "]" * 150), "document 0: spec.template.spec.x[0][0]",
                 id="a pod template nested 150 deep is refused naming the field"),
    pytest.param(_DEPLOYMENT % (", x: " + _DEEP), "nested deeper than 100 levels",
                 id="a manifest nested 5000 deep is refused naming the file"),
    pytest.param("apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {a: " + "[" * 200_000 + "]" * 200_000 + "}}\n",
                 "nested deeper than 100 levels", id="a manifest nested 200000 deep is refused, not a segfault"),
    pytest.param("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nx:\n  " + "- " * 200_000 + "x\n",
                 "nested deeper than 100 levels", id="a block sequence nested 200000 deep is refused"),
])
def test_manifest_regressions(text: str, expected: str | None, workdir: Path) -> None:
    f = workdir / "regression.yaml"
    f.write_text(text, encoding="utf-8")
    if expected is None:
        load_manifests([f])
    else:
        with pytest.raises(KubeschedError, match=r"regression\.yaml") as e:
            load_manifests([f])
        assert expected in str(e.value)


@pytest.mark.parametrize(("loader", "text"), [
    pytest.param(load_config, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                 f"profiles: {_DEEP}\n", id="a configuration nested 5000 deep is refused"),
    pytest.param(load_policy, f"kind: Policy\napiVersion: v1\npredicates: {_DEEP}\n",
                 id="a YAML policy nested 5000 deep is refused"),
    pytest.param(load_policy, f'{{"kind": "Policy", "apiVersion": "v1", "predicates": {_DEEP}}}',
                 id="a JSON policy nested 5000 deep is refused"),
])
def test_config_regressions(loader: Callable[[Path], Any], text: str, workdir: Path) -> None:
    f = workdir / "regression-config.yaml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(KubeschedError, match="nested too deeply") as e:
        loader(f)
    assert str(f) in str(e.value)


@pytest.mark.parametrize(("parse", "doc"), [
    pytest.param(parse_policy, {"kind": "Policy", "apiVersion": "v1", "\n": None},
                 id="a policy field named by a newline is reported on one line"),
    pytest.param(parse_config, {"kind": "KubeSchedulerConfiguration", "apiVersion": "kubescheduler.config.k8s.io/v1",
                                "a\nb": 1}, id="a configuration field with a newline is reported on one line"),
])
def test_unknown_field_errors_stay_on_one_line(parse: Callable[..., Any], doc: Any) -> None:
    with pytest.raises(KubeschedError) as e:
        parse(doc, file="f.yaml")
    assert "\n" not in str(e.value)
    assert 'unknown field "' in str(e.value)


# Found by scripts/fuzz.py (issue 13), each fixed in kubesched and kept here.
_NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
_CONFIG_HEAD = b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize(("data", "expected"), [
    pytest.param(_NODE.encode() + b"metadata: {name: n\xff}\n", "document 0: cannot read: not UTF-8: byte 0xff at line 4",
                 id="a manifest that is not UTF-8 is refused naming its document and line, not the codec's offset"),
    pytest.param(f"{_NODE}---\n{_NODE}".replace("name: n}\n---", "name: n}\n---\n# caf\udcff", 1)
                 .encode("utf-8", errors="surrogateescape"),
                 "document 1: cannot read: not UTF-8: byte 0xff at line 5, column 6",
                 id="the bad byte of a manifest is placed in its own document"),
    pytest.param((_NODE + alias_bomb(9) + "\n").encode(), "document 0: document contains excessive aliasing",
                 id="a manifest of nine levels of nine YAML aliases (billion laughs) is refused at once, not walked "
                    "for hours"),
    pytest.param((_NODE + alias_bomb(5) + "\n").encode(), None,
                 id="a manifest with a few YAML aliases (59049 values once expanded) still loads"),
    pytest.param((_NODE + "x: &x [*x, *x]\n").encode(), "nested deeper than 100 levels",
                 id="a manifest holding itself through a YAML alias is refused as nested too deep"),
    pytest.param(json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n\U0001f600"}}).encode(), None,
                 id="a JSON manifest with an escaped surrogate pair loads, not refused as invalid YAML"),
])
def test_manifest_regressions_found_by_fuzzing(data: bytes, expected: str | None, workdir: Path) -> None:
    f = workdir / "fuzzed.yaml"
    f.write_bytes(data)
    if expected is None:
        objs = load_manifests([f])
        assert [n.name for n in objs.nodes] in (["n"], ["n\U0001f600"])
    else:
        with pytest.raises(ManifestError) as e:
            load_manifests([f])
        assert str(e.value).startswith(f"{f}: "), e.value
        assert expected in str(e.value)
        assert "\n" not in str(e.value)


def _load_and_build_config(path: Path) -> Any:
    build_profiles(load_config(path))


def _load_and_build_policy(path: Path) -> Any:
    build_profiles(load_policy(path))


@pytest.mark.parametrize(("load", "data", "expected"), [
    pytest.param(load_config, _CONFIG_HEAD + b"profiles:\n- schedulerName: s\xff\n",
                 "cannot read configuration: not UTF-8: byte 0xff at line 4, column 19",
                 id="a configuration that is not UTF-8 is refused naming the line, not a UnicodeDecodeError traceback"),
    pytest.param(load_policy, b'{"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "\xff"}]}',
                 "cannot read policy: not UTF-8: byte 0xff at line 1, column 65",
                 id="a Policy that is not UTF-8 is refused naming the line, not a UnicodeDecodeError traceback"),
    pytest.param(load_config, b"just a string\n",
                 "the document must be a KubeSchedulerConfiguration object, got a string",
                 id="a configuration that is not an object says so for the whole document"),
    pytest.param(load_policy, b"- kind: Policy\n", "the document must be a Policy object, got a list",
                 id="a Policy that is not an object says so for the whole document"),
    pytest.param(load_config, _CONFIG_HEAD + alias_bomb(9, "clientConnection").encode(),
                 "document contains excessive aliasing",
                 id="a configuration of nine levels of nine YAML aliases is refused at once"),
    pytest.param(_load_and_build_config, _CONFIG_HEAD + b"profiles:\n- schedulerName: s\n  plugins:\n"
                 b"    filter: {enabled: [{name: Nope}]}\n", "profiles[0].plugins: plugin 'Nope' does not exist",
                 id="an unknown plugin, found when the profile is built, names the configuration file"),
    pytest.param(_load_and_build_config, _CONFIG_HEAD + b"profiles:\n- schedulerName: s\n  pluginConfig:\n"
                 b"  - {name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated, resources: []}}}\n"
                 b"  - {name: Gang, args: {}}\n  plugins:\n    permit: {enabled: [{name: NodeResourcesFit}]}\n",
                 "profiles[0].plugins.permit: plugin 'NodeResourcesFit' does not extend Permit plugin",
                 id="a plugin at an extension point it does not implement names the configuration file"),
    pytest.param(_load_and_build_config, _CONFIG_HEAD + b'extenders:\n- urlPrefix: https://127.0.0.1:1\n'
                 b'  filterVerb: filter\n  tlsConfig: {caFile: "ca\\0.pem"}\n',
                 "extenders[0].tlsConfig.caFile: extender caFile 'ca\\x00.pem': embedded null byte",
                 id="an extender caFile with a NUL byte is a ConfigError naming the file and field, not a ValueError"),
    pytest.param(_load_and_build_config, _CONFIG_HEAD + b"extenders:\n- urlPrefix: https://127.0.0.1:1\n"
                 b"  filterVerb: filter\n  tlsConfig: {certFile: /nonexistent/cert.pem, keyFile: k.pem}\n",
                 "extenders[0].tlsConfig.certFile: extender certFile '/nonexistent/cert.pem': No such file or "
                 "directory", id="an extender certFile that cannot be read names the configuration file and field"),
    pytest.param(_load_and_build_policy, b'{"kind": "Policy", "apiVersion": "v1", "extenders": [{"urlPrefix": '
                 b'"https://127.0.0.1:1", "filterVerb": "filter", "tlsConfig": {"caFile": "/nonexistent/ca.pem"}}]}',
                 "extenders[0].tlsConfig.caFile: extender caFile '/nonexistent/ca.pem': No such file or directory",
                 id="an extender caFile that cannot be read names the Policy file and field"),
])
def test_config_regressions_found_by_fuzzing(load: Callable[[Path], Any], data: bytes, expected: str,
                                             workdir: Path) -> None:
    f = workdir / "fuzzed-config.yaml"
    f.write_bytes(data)
    with pytest.raises(ConfigError) as e:
        load(f)
    assert str(e.value).startswith(f"{f}: "), e.value
    assert expected in str(e.value)
    assert "\n" not in str(e.value)
    assert not contract_violation(e.value, str(f), document=False)


_FILTER_OK = {"NodeNames": ["node-1"], "FailedNodes": {}, "Error": ""}


@pytest.mark.parametrize(("case", "expected"), [
    pytest.param(ReplyCase("filter", True, 200, b"[" * 20000), "exceeded max depth",
                 id="a reply nested 20000 deep is Go's decoder error, not a RecursionError traceback"),
    pytest.param(ReplyCase("prioritize", False, 200, b"[" * 1500 + b"]" * 1500), "exceeded max depth",
                 id="a well-formed reply nested 1500 deep is refused with the same error"),
    pytest.param(ReplyCase("filter", True, 200, json.dumps({**_FILTER_OK, "Error": "a\nb"}).encode()), "a\\nb",
                 id="a filter reply's multi-line Error becomes a one-line error"),
    pytest.param(ReplyCase("bind", False, 200, b'{"Error": "failed:\\r\\n\\tretry"}'), "failed:\\r\\n\\tretry",
                 id="a bind reply's Error with control characters becomes a one-line error"),
])
def test_extender_reply_regressions_found_by_fuzzing(case: ReplyCase, expected: str) -> None:
    out = run_reply_case(case)
    assert not out.accepted and not out.failure, out
    assert out.message == expected


def test_a_multi_line_api_error_is_printed_on_one_line() -> None:
    assert str(ApiError("line 1\nline 2")) == "line 1\\nline 2"
