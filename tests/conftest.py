"""Shared test set-up: the helper modules (``tests/helpers``) on the path, and a schedule
cache of the session's own, so that tests never read or fill the user's cache."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "helpers"))

# one cache directory per test session (xdist workers share it: the cache is safe for
# concurrent processes); tests that need an empty cache set TOPOCOLL_CACHE themselves
if "TOPOCOLL_TEST_CACHE" not in os.environ:       # the first process of the session
    os.environ["TOPOCOLL_TEST_CACHE"] = tempfile.mkdtemp(prefix="topocoll-test-cache-")
    atexit.register(shutil.rmtree, os.environ["TOPOCOLL_TEST_CACHE"], True)
os.environ["TOPOCOLL_CACHE"] = os.environ["TOPOCOLL_TEST_CACHE"]
