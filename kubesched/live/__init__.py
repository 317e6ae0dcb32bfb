"""kubesched as a live scheduler against a Kubernetes API server (``kubesched run``).

- :mod:`kubesched.live.runner` — the scheduling loop against the live cluster.
- :mod:`kubesched.live.leader` — leader election on a coordination.k8s.io/v1 Lease (client-go's
  leaderelection with the leases lock).
- :mod:`kubesched.live.serving` — /healthz, /livez, /readyz and /metrics (kube-scheduler's metric names).
- :mod:`kubesched.live.flags` — the values of kube-scheduler's serving, leader-election and
  deprecated command-line flags (and decorators for a command of their own).
- :mod:`kubesched.live.kube_flags` — kube-scheduler's whole command line (1.30 and 1.36) as a
  table: pflag syntax, ``--help`` sections, what kubesched does with each flag.
- :mod:`kubesched.live.api_calls` — RBAC's view of :data:`kubesched.cluster.live.API_CALLS` (every
  API call the client may make, the one table), checked against the RBAC manifests in ``deploy/``.
- :mod:`kubesched.live.command` — ``kubesched run``: configuration, API client, serving, leader
  election and the scheduling loop wired together.

Its benchmark (``kubesched bench --workload live``) is :mod:`kubesched.bench_live`, and the
local API server double it and the tests run against is :mod:`kubesched.testing`: neither is
imported by the live path (import-linter contract).
"""
