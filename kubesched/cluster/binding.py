"""What the API server does to a pod when it is bound (pkg/registry/core/pod/storage:
BindingREST.setPodNodeAndMetadata, and the podtopologylabels admission plugin on the Binding),
as data keyed by the release's feature gates, for the simulators' in-memory API and the local
API server double alike.

- ClearingNominatedNodeNameAfterBinding (1.35 beta): status.nominatedNodeName is cleared (in
  v1.30 a bound preemptor keeps it).
- PodTopologyLabelsAdmission (1.35 beta): the node's ``topology.kubernetes.io/zone`` and
  ``/region`` labels are copied onto the pod, overwriting its own (copyLabelsWithOverwriting) —
  later pods' topology-spread and affinity selectors, and matchLabelKeys, can see them.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.features import Features

# podtopologylabels.defaultConfig
TOPOLOGY_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")


def clears_nomination(features: Features) -> bool:
    return features.enabled("ClearingNominatedNodeNameAfterBinding")


def binding_labels(features: Features, node_labels: Mapping[str, str]) -> dict[str, str]:
    """The labels the admission plugin puts on the Binding (then copied onto the pod)."""
    if not features.enabled("PodTopologyLabelsAdmission"):
        return {}
    return {k: node_labels[k] for k in TOPOLOGY_LABELS if k in node_labels}
