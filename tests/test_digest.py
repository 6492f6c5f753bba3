"""digest.content_digest: by value, order-independent for mappings, stable across runs."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.digest import content_digest


def test_by_value_not_by_text():
    assert content_digest(0.1) == content_digest(float("1e-1"))
    assert content_digest({"b": 1, "a": [2, 3]}) == content_digest({"a": [2, 3], "b": 1})
    assert content_digest(np.array([1, 2], np.int32)) == content_digest(np.array([1, 2]))
    assert content_digest(np.array([1.5], np.float32)) == content_digest(np.array([1.5]))


def test_structure_matters():
    assert content_digest([1, 2]) != content_digest([[1, 2]])
    assert content_digest("ab", "c") != content_digest("a", "bc")
    assert content_digest(1) != content_digest(1.0) != content_digest("1")
    assert content_digest(np.zeros((2, 3))) != content_digest(np.zeros((3, 2)))
    assert content_digest(None) != content_digest(False) != content_digest(0)


def test_pinned_value():
    # a fixed input hashes to a fixed value on every machine, numpy and Python version
    assert content_digest({"x": [1, 2.5, "s", None, True]}, np.arange(3)) == (
        "2e3f1c670c33313c1123ac20ef67e1373c87271b56107d716052b4f4defe3a57")


def test_rejects_what_it_cannot_hash():
    with pytest.raises(TypeError, match="set"):
        content_digest({1, 2})
    with pytest.raises(TypeError, match="dtype"):
        content_digest(np.array(["a"]))


def test_integer_arrays_are_hashed_at_the_width_their_values_need():
    # the same values agree in any integer dtype; the width is part of what is hashed,
    # so widening a column's values past a width changes the digest
    for values in ([0, 1, 5], [-3, 200], [2**40, -1]):
        digests = {content_digest(np.array(values, dt)) for dt in
                   (np.int64, np.int32, np.int16, np.uint64)
                   if np.iinfo(dt).min <= min(values) and max(values) <= np.iinfo(dt).max}
        assert len(digests) == 1, values
    assert content_digest(np.array([True, False])) == content_digest(np.array([1, 0], np.int8))
    assert content_digest(np.array([127])) != content_digest(np.array([128]))
    assert content_digest(np.zeros(0, np.int64)) == content_digest(np.zeros(0, np.int8))


@pytest.mark.parametrize("r", [range(0), range(1), range(128), range(129), range(-129, 5, 3),
                               range(2**31 - 3, 2**31 + 2), range(10, -10, -1),
                               range(0, 2 * (1 << 22) + 5)])
def test_a_range_hashes_as_its_array(r):
    """At every integer width (int8, int32, int64 boundaries), empty, descending, and over
    several hashing blocks."""
    assert content_digest(r) == content_digest(np.arange(r.start, r.stop, r.step,
                                                         dtype=np.int64))
    if len(r) < 1000:                   # a list is another structure
        assert content_digest(r) != content_digest(list(r))
