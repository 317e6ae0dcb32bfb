"""helpers/codes.py: group_codes is np.unique with first indices and inverse, with or without
its shortcut for one code everywhere."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.plugins.helpers.codes import group_codes


@pytest.mark.parametrize("codes", [
    pytest.param([5, 5, 5, 5], id="one code everywhere takes the shortcut"),
    pytest.param([0], id="a single element"),
    pytest.param([3, 1, 3, 0, 1, 1], id="several codes are sorted with their first positions"),
    pytest.param([], id="no element gives empty groups"),
])
def test_group_codes_equals_np_unique(codes: list[int]) -> None:
    arr = np.asarray(codes, np.int64)
    uniq, first, inverse = group_codes(arr)
    want_uniq, want_first, want_inverse = np.unique(arr, return_index=True, return_inverse=True)
    assert uniq.tolist() == want_uniq.tolist()
    assert first.tolist() == want_first.tolist()
    assert inverse.tolist() == want_inverse.reshape(-1).tolist()
    assert (uniq[inverse] == arr).all()
