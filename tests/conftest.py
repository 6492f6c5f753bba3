"""Shared test set-up: the helper modules (``tests/helpers``) on the path, and a schedule
cache of the session's own, so that tests never read or fill the user's cache."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "helpers"))

# one cache directory per test session (xdist workers share it: the cache is safe for
# concurrent processes); tests that need an empty cache set TOPOCOLL_CACHE themselves
os.environ.setdefault("TOPOCOLL_CACHE", tempfile.mkdtemp(prefix="topocoll-test-cache-"))
