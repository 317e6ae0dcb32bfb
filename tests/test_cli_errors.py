"""Bad input through the CLI (`kubesched simulate FILE`, in-process): every problem exits 2
with ONE line on stderr naming the file, the document index and the field path, and never a
traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kubesched.cli import main

QUANTITY_RE = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def pod(spec: str = "containers: [{name: c}]", metadata: str = "{name: p}") -> str:
    """A Pod document; ``spec`` is a flow mapping or the body of a block mapping."""
    body = spec if spec.startswith("{") else "\n  " + spec
    return f"apiVersion: v1\nkind: Pod\nmetadata: {metadata}\nspec: {body}\n"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_one_line_error(result: Result, expected: str) -> None:
    """Exit 2, nothing on stdout, exactly one stderr line starting with ``error: expected``."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stderr.endswith("\n")
    assert lines[0].startswith("error: " + expected), lines[0]


# (id, file content, expected error line after "error: <file>: ")
MANIFEST_CASES = [
    (
        "unparseable YAML names the document and line",
        NODE + "---\n" + "apiVersion: v1\nkind: Pod\nmetadata: {name: [\n",
        "document 1: invalid YAML (line 9, column 1): ",
    ),
    (
        "unparseable YAML after the scenario comment header is in document 0",
        "# scenario 0001 theme=x\n---\n" + NODE.replace("{name: n1}", "{name: [n1}"),
        "document 0: invalid YAML (line 5, column 21): ",
    ),
    (
        "a tab in the indentation is invalid YAML",
        "apiVersion: v1\nkind: Node\nmetadata:\n\tname: n\n",
        "document 0: invalid YAML (line 4, column 1): ",
    ),
    (
        "an unknown kind names the kind field",
        NODE + "---\napiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: d}\n",
        "document 1: kind: unsupported kind 'Deploymnet' (supported: CSIDriver, ",
    ),
    (
        "a missing kind names the kind field",
        "apiVersion: v1\nmetadata: {name: d}\n",
        "document 0: kind: Required value: kind is missing",
    ),
    (
        "an unsupported apiVersion names the apiVersion field",
        "apiVersion: v1beta1\nkind: Node\nmetadata: {name: n}\n",
        "document 0: apiVersion: unsupported apiVersion 'v1beta1' for kind Node (expected v1)",
    ),
    (
        "an invalid quantity names the resource",
        NODE + "---\n" + pod("containers: [{name: c, resources: {requests: {cpu: 1x}}}]"),
        f'document 1: spec.containers[0].resources.requests.cpu: Invalid value: "1x": quantities must match the '
        f"regular expression {QUANTITY_RE}",
    ),
    (
        "an invalid limit names the limit",
        pod("containers: [{name: c}, {name: d, resources: {limits: {memory: 1Gb}}}]"),
        'document 0: spec.containers[1].resources.limits.memory: Invalid value: "1Gb": ',
    ),
    (
        "a quantity with an absurd exponent is rejected at once",
        pod("containers: [{name: c, resources: {requests: {memory: 1e99999999999}}}]"),
        'document 0: spec.containers[0].resources.requests.memory: Invalid value: "1e99999999999": '
        "unable to parse quantity's suffix",
    ),
    (
        "a negative node capacity is rejected",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {capacity: {cpu: '-1'}}\n",
        "document 0: status.capacity.cpu: must be greater than or equal to 0",
    ),
    (
        "a missing metadata.name is required",
        pod(metadata="{namespace: x}"),
        "document 0: metadata.name: Required value: name is required",
    ),
    (
        "missing metadata is a missing name",
        "apiVersion: v1\nkind: Node\n",
        "document 0: metadata.name: Required value: name is required",
    ),
    ("missing containers are required", pod("{}"), "document 0: spec.containers: Required value"),
    (
        "a missing spec means missing containers",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
        "document 0: spec.containers: Required value",
    ),
    (
        "a container without a name is rejected",
        pod("containers: [{name: a}, {image: nginx}]"),
        "document 0: spec.containers[1].name: Required value",
    ),
    (
        "containers of the wrong type are rejected",
        pod("containers: 3"),
        "document 0: spec.containers: must be a list, got int",
    ),
    (
        "a container of the wrong type is rejected",
        pod("containers: [nginx]"),
        "document 0: spec.containers[0]: must be an object, got str",
    ),
    (
        "metadata of the wrong type is rejected",
        "apiVersion: v1\nkind: Pod\nmetadata: p\nspec: {containers: [{name: c}]}\n",
        "document 0: metadata: must be an object, got str",
    ),
    ("a numeric name is rejected", pod(metadata="{name: 5}"), "document 0: metadata.name: must be a string, got int"),
    (
        "labels of the wrong type are rejected",
        pod(metadata="{name: p, labels: [a, b]}"),
        "document 0: metadata.labels: must be a map of strings, got list",
    ),
    (
        "a non-integer priority is rejected",
        pod("{priority: high, containers: [{name: c}]}"),
        "document 0: spec.priority: must be an integer, got 'high'",
    ),
    (
        "a boolean quantity is rejected",
        pod("containers: [{name: c, resources: {requests: {cpu: true}}}]"),
        "document 0: spec.containers[0].resources.requests.cpu: Invalid value: true: ",
    ),
    (
        "a request above its limit is rejected",
        pod("containers: [{name: c, resources: {requests: {cpu: 2}, limits: {cpu: 1}}}]"),
        "document 0: spec.containers[0].resources.requests.cpu: Invalid value: must be less than or equal to cpu limit",
    ),
    (
        "an unknown priority class is rejected",
        NODE + "---\n" + pod("{priorityClassName: gold, containers: [{name: c}]}"),
        "document 1: spec.priorityClassName: no PriorityClass with name gold was found",
    ),
    (
        "a priority contradicting the class is rejected",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: gold}\nvalue: 10\n---\n"
        + pod("{priorityClassName: gold, priority: 11, containers: [{name: c}]}"),
        "document 1: spec.priority: the integer value of priority (11) must not be provided in pod spec; ",
    ),
    (
        "an invalid node selector operator names its path",
        pod(
            "{containers: [{name: c}], affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
            "{nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Has}]}]}}}}"
        ),
        "document 0: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator: Unsupported value: 'Has'",
    ),
    (
        "a bad timestamp names its field",
        pod(metadata="{name: p, creationTimestamp: yesterday}"),
        "document 0: metadata.creationTimestamp: must be an RFC 3339 timestamp, got 'yesterday'",
    ),
    (
        "a duplicate object names the first definition",
        NODE + "---\n" + NODE,
        "document 1: metadata.name: duplicate Node n1 (first defined in ",
    ),
    (
        "an error inside a List names the item",
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n}\n"
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n"
        "  spec: {containers: [{name: c, resources: {limits: {cpu: zz}}}]}\n",
        'document 0: items[1].spec.containers[0].resources.limits.cpu: Invalid value: "zz": ',
    ),
    (
        "an item of a typed list without apiVersion is read with the list's",
        "apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: n}\n"
        "- metadata: {name: m}\n  status: {capacity: {cpu: x}}\n",
        'document 0: items[1].status.capacity.cpu: Invalid value: "x": ',
    ),
    ("a non-object document is rejected", "- a\n- b\n", "document 0: a document must be an object, got list"),
    ("a scalar document is rejected", NODE + "---\nhello\n", "document 1: a document must be an object, got str"),
    (
        "a kind of the wrong type is rejected",
        "apiVersion: v1\nkind: [Pod]\nmetadata: {name: p}\n",
        "document 0: kind: unsupported kind ['Pod']",
    ),
    (
        "a null condition does not crash and a list condition is rejected",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {conditions: [null, [Ready]]}\n",
        "document 0: status.conditions[1]: must be an object, got list",
    ),
]


@pytest.mark.parametrize("content, expected", [c[1:] for c in MANIFEST_CASES], ids=[c[0] for c in MANIFEST_CASES])
def test_bad_manifest(tmp_path: Path, content: str, expected: str) -> None:
    f = tmp_path / "x.yaml"
    f.write_text(content)
    assert_one_line_error(run("simulate", str(f)), f"{f}: {expected}")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    f = tmp_path / "missing.yaml"
    result = run("simulate", str(f), "--deterministic")
    assert_one_line_error(result, f"{f}: no such file or directory")


def test_an_undecodable_file_is_named(tmp_path: Path) -> None:
    f = tmp_path / "bin.yaml"
    f.write_bytes(b"\xff\xfe\x00")
    assert_one_line_error(run("simulate", str(f)), f"{f}: document 0: cannot read: not UTF-8: byte 0xff at line 1")


def test_the_error_names_the_file_within_a_directory(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(NODE)
    bad = tmp_path / "sub" / "b.yaml"
    bad.parent.mkdir()
    bad.write_text(pod("{}"))
    assert_one_line_error(run("simulate", str(tmp_path)), f"{bad}: document 0: spec.containers: Required value")


def test_the_error_names_the_second_of_two_files(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(NODE)
    bad.write_text(NODE.replace("n1", "n2") + "---\n" + pod("{containers: [{}]}"))
    assert_one_line_error(run("simulate", str(good), str(bad)), f"{bad}: document 1: spec.containers[0].name: ")


# (id, config content, expected error after "error: <config>: ")
CONFIG_CASES = [
    (
        "an unknown top-level field is rejected",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nfoo: 1\n",
        'foo: unknown field "foo"',
    ),
    (
        "an unknown field in a profile is rejected",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerNam: x\n",
        'profiles[0].schedulerNam: unknown field "schedulerNam"',
    ),
    (
        "a bad scoringStrategy type names its path",
        textwrap.dedent("""\
         apiVersion: kubescheduler.config.k8s.io/v1
         kind: KubeSchedulerConfiguration
         profiles:
         - pluginConfig:
           - name: NodeResourcesFit
             args:
               scoringStrategy:
                 type: Foo
         """),
        'profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Foo": supported values: '
        '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
    ),
    (
        "an unsupported config apiVersion is rejected",
        "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
        'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3"',
    ),
    (
        "unparseable config YAML is one line",
        "apiVersion: kubescheduler.config.k8s.io/v1\nprofiles: [\n",
        "invalid YAML (line 3, column 1): ",
    ),
    (
        "a duplicated config field is rejected",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "kind: KubeSchedulerConfiguration\n",
        'line 3: duplicate field "kind"',
    ),
]


@pytest.mark.parametrize("content, expected", [c[1:] for c in CONFIG_CASES], ids=[c[0] for c in CONFIG_CASES])
def test_bad_config(tmp_path: Path, content: str, expected: str) -> None:
    manifests = tmp_path / "x.yaml"
    manifests.write_text(NODE)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(content)
    assert_one_line_error(run("simulate", "--config", str(cfg), str(manifests)), f"{cfg}: {expected}")
    assert_one_line_error(run("config", "validate", str(cfg)), f"{cfg}: {expected}")


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    manifests = tmp_path / "x.yaml"
    manifests.write_text(NODE)
    cfg = tmp_path / "nope.yaml"
    assert_one_line_error(
        run("simulate", "--config", str(cfg), str(manifests)),
        f"{cfg}: cannot read configuration: No such file or directory",
    )


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(
            NODE.replace('cpu: "4"', "cpu: 1e30")
            + "---\n"
            + pod("containers: [{name: c, resources: {requests: {cpu: 1}}}]"),
            id="a node capacity beyond int64 is capped instead of crashing",
        ),
        pytest.param(
            NODE
            + "---\n"
            + pod(
                "containers: [{name: c, resources: {requests: {memory: 9Ei}}}, "
                "{name: d, resources: {requests: {memory: 9Ei}}}]"
            ),
            id="requests summing beyond int64 do not crash",
        ),
        pytest.param(
            NODE + "---\n" + pod("containers: [{name: c, resources: {requests: {cpu: '.'}}}]"),
            id="a quantity with no digits reads as zero as in Go",
        ),
    ],
)
def test_extreme_but_valid_input_runs(tmp_path: Path, content: str) -> None:
    f = tmp_path / "x.yaml"
    f.write_text(content)
    result = run("simulate", str(f), "--deterministic", "-o", "json")
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert "default/p" in result.stdout


def test_a_good_manifest_exits_0(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text(NODE + "---\n" + pod())
    result = run("simulate", str(f), "--deterministic", "-o", "json")
    assert result.exit_code == 0
    assert result.stderr == ""
