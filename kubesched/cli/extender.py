"""``kubesched extender serve``: serve an HTTP scheduler extender written with
:mod:`kubesched.extender.server`."""

from __future__ import annotations

import click

from kubesched.cli import _guard, main, path_type

FILE = path_type(dir_okay=False)
EXISTING_FILE = path_type(exists=True, dir_okay=False)


@main.group()
def extender() -> None:
    """Run HTTP scheduler extenders written with kubesched.extender.server."""


@extender.command("serve")
@click.argument("target", metavar="MODULE:APP")
@click.option("--port", type=int, required=True, help="Port to listen on.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--certfile", type=EXISTING_FILE, help="Serve HTTPS with this certificate.")
@click.option("--keyfile", type=EXISTING_FILE, help="Private key of --certfile.")
@click.option("--client-ca", type=EXISTING_FILE,
              help="Require client certificates signed by this CA.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info",
              show_default=True)
@click.option("--kubeconfig", type=FILE, default="",
              help="Feed the ExtenderApp's node cache from this cluster: a list+watch of its nodes, before serving "
                   "(what a nodeCacheCapable extender needs).")
@click.option("--master", default="", help="The API server's URL (overrides --kubeconfig's server; alone, a cluster "
                                           "without authentication). Implies the node watch.")
@_guard
def extender_serve(target: str, port: int, host: str, certfile: str | None, keyfile: str | None,
                   client_ca: str | None, log_level: str, kubeconfig: str, master: str) -> None:
    """Serve the extender app MODULE:APP (or path/to/file.py:APP) with uvicorn."""
    from kubesched.extender.server import load_app, serve

    app = load_app(target)
    if kubeconfig or master:
        from kubesched.extender.watch import serve_with_node_watch

        serve_with_node_watch(app, kubeconfig=kubeconfig, master=master, host=host, port=port, certfile=certfile,
                              keyfile=keyfile, client_ca=client_ca, log_level=log_level)
        return
    serve(app, host=host, port=port, certfile=certfile, keyfile=keyfile, client_ca=client_ca, log_level=log_level)
