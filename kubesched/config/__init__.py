"""KubeSchedulerConfiguration v1, plugin args, defaults and validation."""

from kubesched.config.defaults import (
    DEFAULT_ARGS,
    DEFAULT_MULTI_POINT,
    DEFAULT_PLUGINS,
    default_configuration,
    default_plugin_config,
    default_plugins,
    default_profile,
    merge_plugin_set,
    merge_plugins,
)
from kubesched.config.loader import (
    decode_configuration,
    load_config,
    parse_config,
    parse_plugin_args,
    plugin_names_used,
)
from kubesched.config.printer import dump_config, dump_plugin_args
from kubesched.config.types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    KIND,
    ClientConnection,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    KubeSchedulerConfiguration,
    LeaderElection,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
)
from kubesched.config.validation import validate_configuration, validate_plugin_args

__all__ = [
    "API_VERSION", "DEFAULT_ARGS", "DEFAULT_MULTI_POINT", "DEFAULT_PLUGINS", "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS", "KIND", "ClientConnection", "Extender", "ExtenderManagedResource", "ExtenderTLSConfig",
    "KubeSchedulerConfiguration", "LeaderElection", "PluginRef", "PluginSet", "Plugins", "Profile",
    "decode_configuration", "default_configuration", "default_plugin_config", "default_plugins", "default_profile",
    "dump_config", "dump_plugin_args", "load_config", "merge_plugin_set", "merge_plugins", "parse_config",
    "parse_plugin_args", "plugin_names_used", "validate_configuration", "validate_plugin_args",
]  # fmt: skip
