"""An extender's node cache fed by the API server: a list+watch of nodes.

A ``nodeCacheCapable`` extender gets node *names* from the scheduler and must know the nodes
themselves — every node, with its latest labels, taints and allocatable, and no node that is
gone — before the first request names them. :class:`NodeWatch` keeps an
:class:`~kubesched.extender.server.NodeCache` (``app.node_cache``) so, with kubesched's own
reflector (:class:`kubesched.cluster.live.Informer`: LIST, then WATCH with bookmarks,
re-watching and relisting as client-go does, relists diffed against the store so that
deletions missed meanwhile are applied) and its rate-limited :class:`~kubesched.cluster.live.ApiClient`::

    from kubesched.extender.watch import NodeWatch

    with NodeWatch.connect(app.node_cache, kubeconfig="~/.kube/config") as watch:
        watch.wait_for_sync()
        serve(app, port=8888)

``kubesched extender serve MODULE:APP --kubeconfig F [--master URL]`` does exactly this.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Self

from kubesched.cluster.live import (
    ADD,
    DELETE,
    UPDATE,
    ApiClient,
    Backoff,
    Informer,
    load_cluster_config,
)
from kubesched.cluster.resources import RESOURCES
from kubesched.extender.server import NodeCache
from kubesched.objects import Node

log = logging.getLogger("kubesched.extender")

USER_AGENT = "kubesched-extender"


class NodeWatch:
    """A reflector on the API server's nodes that keeps ``cache`` equal to them: an added or
    updated node is put in the cache, a deleted one removed (a relist after the watch broke
    applies what was missed the same way)."""

    def __init__(self, cache: NodeCache, client: ApiClient, *, owns_client: bool = False,
                 backoff: Backoff | None = None, watch_timeout: float = 300.0) -> None:
        self.cache = cache
        self.client = client
        self._owns_client = owns_client
        self.informer = Informer(client, RESOURCES["nodes"], on_change=self._on_change, lock=threading.Lock(),
                                 backoff=backoff or Backoff(), watch_timeout=watch_timeout)
        self._started = False

    @classmethod
    def connect(cls, cache: NodeCache, *, kubeconfig: str = "", master: str = "", context: str | None = None,
                qps: float = 50.0, burst: int = 100, watch_timeout: float = 300.0) -> NodeWatch:
        """Watch the cluster that ``kubeconfig`` (else $KUBECONFIG, the in-cluster service
        account, ~/.kube/config) points to; ``master`` overrides its server URL, or is the
        whole configuration when there is none (as kube-scheduler's flags)."""
        config = load_cluster_config(kubeconfig, context=context, master=master)
        client = ApiClient(config, qps=qps, burst=burst, user_agent=USER_AGENT)
        return cls(cache, client, owns_client=True, watch_timeout=watch_timeout)

    def _on_change(self, action: str, old: Any, new: Any) -> None:
        if action in (ADD, UPDATE) and isinstance(new, Node):
            self.cache.update((new,))
        elif action == DELETE and isinstance(old, Node):
            self.cache.remove(old.meta.name)

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> Self:
        if not self._started:
            self._started = True
            self.informer.start()
        return self

    @property
    def synced(self) -> bool:
        """Whether the first LIST is in the cache."""
        return self.informer.synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """WaitForCacheSync: True once the first LIST is in the cache (False on timeout)."""
        return self.informer.synced.wait(timeout)

    def stop(self) -> None:
        self.informer.stop()
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_with_node_watch(app: Any, *, kubeconfig: str = "", master: str = "", context: str | None = None,
                          host: str = "127.0.0.1", port: int = 8888, certfile: str | None = None,
                          keyfile: str | None = None, client_ca: str | None = None, log_level: str = "info") -> None:
    """:func:`~kubesched.extender.server.serve` an :class:`ExtenderApp` whose node cache a
    :class:`NodeWatch` keeps (``kubesched extender serve --kubeconfig``). The app answers once
    the first LIST is in the cache: a nodeCacheCapable request before it would find no node."""
    from kubesched.errors import ConfigError
    from kubesched.extender.server import ExtenderApp, configure_logging, serve

    if not isinstance(app, ExtenderApp):
        raise ConfigError(f"--kubeconfig / --master feed an ExtenderApp's node cache; the app is a "
                          f"{type(app).__name__}")
    configure_logging(log_level)
    with NodeWatch.connect(app.node_cache, kubeconfig=kubeconfig, master=master, context=context) as watch:
        log.info("watching the nodes of %s", watch.client.config.server)
        while not watch.wait_for_sync(10.0):
            log.info("waiting for the first list of nodes from %s", watch.client.config.server)
        log.info("node cache synced: %d nodes", len(app.node_cache))
        serve(app, host=host, port=port, certfile=certfile, keyfile=keyfile, client_ca=client_ca,
              log_level=log_level)
