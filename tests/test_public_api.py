from __future__ import annotations

import kubesched


def test_all_names_exist_and_are_sorted_uniquely() -> None:
    assert len(set(kubesched.__all__)) == len(kubesched.__all__)
    for name in kubesched.__all__:
        assert hasattr(kubesched, name), name


def test_public_api_is_the_curated_list() -> None:
    public = {n for n in dir(kubesched) if not n.startswith("_")}
    modules = {"bench", "cli", "cluster", "config", "errors", "extender", "framework", "objects", "plugins", "scheduler",
               "simulation", "timeline"}
    assert public - modules - {"annotations"} == set(kubesched.__all__)
