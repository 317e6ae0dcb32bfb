"""Framework runtime: profile building, the plugin runner and the Handle."""
