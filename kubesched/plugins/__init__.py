"""The default plugins, one package per plugin, named as upstream."""
