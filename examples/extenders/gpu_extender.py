"""A GPU- and label-aware scheduler extender, written with kubesched's extender SDK.

Filter (for pods that request ``example.com/gpu``):
- the node must have at least as many GPUs allocatable as the pod requests;
- if the pod asks for a GPU model (annotation ``example.com/gpu-model``), the node's label
  ``example.com/gpu-model`` must match;
- a node labelled ``example.com/gpu-maintenance=true`` is rejected as *unresolvable*:
  evicting pods there would not help.

Prioritize: GPU pods prefer the node whose GPUs they fill best (fewest GPUs left idle);
pods without GPUs prefer nodes without GPUs, keeping GPU nodes free for GPU work.

Serve it::

    kubesched extender serve examples/extenders/gpu_extender.py:app --port 8888

and point kube-scheduler (or ``kubesched simulate --config``) at it::

    extenders:
    - urlPrefix: http://127.0.0.1:8888/scheduler
      filterVerb: filter
      prioritizeVerb: prioritize
      weight: 2
      managedResources: [{name: example.com/gpu}]
"""

from __future__ import annotations

from kubesched.extender.server import ExtenderApp, Unresolvable
from kubesched.objects import Node, Pod

GPU = "example.com/gpu"
MODEL = "example.com/gpu-model"
MAINTENANCE = "example.com/gpu-maintenance"

app = ExtenderApp(prefix="/scheduler", title="GPU extender")


def gpus_requested(pod: Pod) -> int:
    return pod.requests.get(GPU, 0)


@app.filter_node
def gpu_fits(pod: Pod, node: Node) -> str | Unresolvable | None:
    wanted = gpus_requested(pod)
    if wanted == 0:
        return None
    if node.labels.get(MAINTENANCE) == "true":
        return Unresolvable("GPUs under maintenance")
    have = node.allocatable.get(GPU, 0)
    if have < wanted:
        return f"node has {have} GPU(s), pod needs {wanted}"
    model = pod.meta.annotations.get(MODEL)
    if model and node.labels.get(MODEL) != model:
        return f"node's GPU model is not {model}"
    return None


@app.score_node
def gpu_packing(pod: Pod, node: Node) -> int:
    have = node.allocatable.get(GPU, 0)
    wanted = gpus_requested(pod)
    if wanted == 0:
        return 10 if have == 0 else 0
    return max(0, 10 - (have - wanted))


if __name__ == "__main__":
    from kubesched.extender.server import serve

    serve(app, port=8888)
