"""Matching code shared by several plugins (plugins/helper upstream)."""
