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
        "7c9cb511768df08bfe4b4e42a49d770db5a4ed91fe63eaa6fd567d196a24d672")


def test_rejects_what_it_cannot_hash():
    with pytest.raises(TypeError, match="set"):
        content_digest({1, 2})
    with pytest.raises(TypeError, match="dtype"):
        content_digest(np.array(["a"]))
