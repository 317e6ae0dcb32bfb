"""kubesched as a live scheduler against a Kubernetes API server (``kubesched run``).

- :mod:`kubesched.live.runner` — the scheduling loop against the live cluster.
- :mod:`kubesched.live.leader` — leader election on a coordination.k8s.io/v1 Lease (client-go's
  leaderelection with the leases lock).
- :mod:`kubesched.live.serving` — /healthz, /livez, /readyz and /metrics (kube-scheduler's metric names).
- :mod:`kubesched.live.flags` — kube-scheduler's serving and leader-election command-line flags.
- :mod:`kubesched.live.api_calls` — every API call kubesched makes: the single source of truth for
  the client, the fake API server and the RBAC manifests in ``deploy/``.
"""
