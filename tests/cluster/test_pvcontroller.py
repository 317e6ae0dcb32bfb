"""After VolumeBinding's PreBind, the simulator completes bindings as the PV controller would,
so later pods see bound claims (and their PVs' node affinity)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.objects import load_manifests
from kubesched.simulation import Simulator
from kubesched.timeline import TimelineSimulator

NODES = """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1, topology.kubernetes.io/zone: a}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-2, labels: {kubernetes.io/hostname: node-2, topology.kubernetes.io/zone: b}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
"""

STATIC = NODES + """
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/disk}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-1]}]
status: {phase: Available}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-2}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/disk}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-2]}]
status: {phase: Available}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec: {accessModes: [ReadWriteOnce], storageClassName: local, resources: {requests: {storage: 5Gi}}}
"""

DYNAMIC = NODES + """
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zonal}
provisioner: disk.csi.example.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node-1}
spec: {drivers: [{name: disk.csi.example.com, nodeID: n1, topologyKeys: [topology.kubernetes.io/zone]}]}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node-2}
spec: {drivers: [{name: disk.csi.example.com, nodeID: n2, topologyKeys: [topology.kubernetes.io/zone]}]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default, uid: claim-uid}
spec: {accessModes: [ReadWriteOnce], storageClassName: zonal, resources: {requests: {storage: 5Gi}}}
"""


def pod(name: str, node_selector: str = "") -> str:
    lines = ["---", "apiVersion: v1", "kind: Pod", f"metadata: {{name: {name}, namespace: default}}", "spec:"]
    if node_selector:
        lines.append(f"  nodeSelector: {node_selector}")
    lines += ["  containers: [{name: c, image: busybox}]",
              "  volumes: [{name: v, persistentVolumeClaim: {claimName: data}}]"]
    return "\n" + "\n".join(lines) + "\n"


def simulate(tmp_path: Path, text: str, timeline: bool) -> dict[str, str | None]:
    f = tmp_path / "c.yaml"
    f.write_text(text)
    objs = load_manifests([f])
    sim = TimelineSimulator(objs, seed=1) if timeline else Simulator(objs, deterministic=True)
    return sim.run().final


@pytest.mark.parametrize("timeline", [False, True], ids=["conformance procedure", "timeline"])
def test_a_claim_bound_by_the_first_pod_pins_the_second_to_the_pvs_node(tmp_path: Path, timeline: bool) -> None:
    # Without the binding completed, the second pod would take pv-1 on node-1 (lowest name).
    final = simulate(tmp_path, STATIC + pod("first", "{kubernetes.io/hostname: node-2}") + pod("second"), timeline)
    assert final["default/first"] == "node-2"
    assert final["default/second"] == "node-2"


@pytest.mark.parametrize("timeline", [False, True], ids=["conformance procedure", "timeline"])
def test_a_provisioned_volume_follows_the_drivers_topology(tmp_path: Path, timeline: bool) -> None:
    # The first pod may only run in zone b; the PV provisioned for it is zonal, so the second
    # pod (no selector of its own; node-1 would win a tie) must follow it there.
    final = simulate(tmp_path, DYNAMIC + pod("first", "{topology.kubernetes.io/zone: b}") + pod("second"), timeline)
    assert final["default/first"] == "node-2"
    assert final["default/second"] == "node-2"


def test_the_claim_and_pv_are_bound_in_the_cluster_objects(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(DYNAMIC + pod("first", "{topology.kubernetes.io/zone: b}"))
    sim = Simulator(load_manifests([f]), deterministic=True)
    sim.run()
    pvc = sim.objects.pvc("default", "data")
    assert pvc is not None and pvc.is_bound and pvc.volume_name == "pvc-claim-uid"
    pv = sim.objects.pv("pvc-claim-uid")
    assert pv is not None and pv.claim_ref == ("default", "data")
    assert pv.node_affinity is not None
    assert sim.volume_changes == ["provisioned pvc-claim-uid for default/data on node-2"]
