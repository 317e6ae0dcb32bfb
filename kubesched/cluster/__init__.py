"""The seam between the scheduler and a cluster: in memory and live.

- :mod:`kubesched.cluster.memory` — MemoryObjects, the ObjectLister of a simulation.
- :mod:`kubesched.cluster.live` — the live cluster: kubeconfig / in-cluster configuration, the
  rate-limited API client (and :data:`~kubesched.cluster.live.API_CALLS`, every call it may
  make), informers on kubesched's own reflector, LiveObjects, the scheduler's API actions.
The local API server double for tests and the live bench lives in :mod:`kubesched.testing`.
- :mod:`kubesched.cluster.snapshot` — read-only snapshots of a live cluster, consistent at one
  resourceVersion, for the what-if commands' ``--kubeconfig`` and ``kubesched snapshot``.
- :mod:`kubesched.cluster.resources` — the resources' group/version/kind table and the wire
  helpers both sides share.
"""
