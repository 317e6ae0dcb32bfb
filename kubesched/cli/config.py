"""``kubesched config``: print the default KubeSchedulerConfiguration, convert a legacy Policy,
validate a configuration file."""

from __future__ import annotations

import click

from kubesched.cli import _guard, features_option, main, path_type, version_options

PATH = path_type()


@main.group()
def config() -> None:
    """Inspect and validate KubeSchedulerConfiguration files."""


@config.command("print-defaults")
@version_options
@_guard
def print_defaults(kube_version: str | None = None, feature_gates: tuple[str, ...] = ()) -> None:
    """Print the release's default KubeSchedulerConfiguration (--kube-version, default 1.36)."""
    import yaml

    from kubesched.config import default_configuration, dump_config

    features = features_option(kube_version, feature_gates)
    click.echo(yaml.safe_dump(dump_config(default_configuration(features=features)), sort_keys=False), nl=False)


@config.command("convert-policy")
@click.argument("file", type=PATH)
@_guard
def convert_policy(file: str) -> None:
    """Print the KubeSchedulerConfiguration equivalent to the legacy scheduler Policy FILE."""
    import yaml

    from kubesched.config import dump_config
    from kubesched.config.policy import load_policy_translation

    translation = load_policy_translation(file)
    for note in translation.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(yaml.safe_dump(dump_config(translation.config), sort_keys=False), nl=False)


@config.command("validate")
@click.argument("file", type=PATH)
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE:FACTORY",
              help="An out-of-tree plugin the configuration uses (repeatable); entry points in group "
                   "kubesched.plugins are loaded too. Their args are validated as simulate does.")
@version_options
@_guard
def validate(file: str, plugins: tuple[str, ...] = (), kube_version: str | None = None,
             feature_gates: tuple[str, ...] = ()) -> None:
    """Validate FILE; exit 2 with the field path of the first error."""
    from kubesched._runtime.handle import FrameworkHandle
    from kubesched._runtime.profile import build_framework
    from kubesched._runtime.registry import full_registry
    from kubesched.config import load_config

    features = features_option(kube_version, feature_gates)
    registry = full_registry(plugins, features=features)
    cfg = load_config(file, features=features)
    for index, profile in enumerate(cfg.profiles):
        build_framework(profile, registry, FrameworkHandle.for_nodes([], features=features), index=index)
    click.echo(f"{file}: valid ({len(cfg.profiles)} profile(s))")
