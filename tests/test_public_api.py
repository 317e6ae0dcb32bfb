from __future__ import annotations

import kubesched


def test_all_names_exist_and_are_sorted_uniquely() -> None:
    assert len(set(kubesched.__all__)) == len(kubesched.__all__)
    for name in kubesched.__all__:
        assert hasattr(kubesched, name), name


def test_public_api_is_the_curated_list() -> None:
    import types

    # Submodules appear as attributes once something imported them; they are not API names.
    public = {n for n in dir(kubesched) if not n.startswith("_")
              and not isinstance(getattr(kubesched, n), types.ModuleType)}
    assert public - {"annotations"} == set(kubesched.__all__)
