"""Compiled loops of the alpha-beta model's step lines (:mod:`.alphabeta`).

A transfer ``t`` of a step finishes at ``latency_t + chunk_bytes * slope_t``; a step's time
at a size is the largest of its transfers' lines there. :func:`step_envelope` evaluates
that maximum for a few sizes in one pass over the lines (no sort, nothing materialized),
and :func:`one_link_lines` computes the lines of a batch of steps whose routes are one
link each (loads per step and link, then each transfer's slope).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["step_envelope", "one_link_lines", "one_link_lines_table", "one_link_step_times",
           "repeated_steps",
           "distinct_pairs"]


@njit(cache=True)
def step_envelope(lat, slope, ptr, cbs):
    """``out[k, i] = max(0, max over lines j of segment k of lat[j] + cbs[i] * slope[j])``
    (0 for an empty segment)."""
    nseg = len(ptr) - 1
    out = np.zeros((nseg, len(cbs)))
    for k in range(nseg):
        a = ptr[k]
        b = ptr[k + 1]
        if a == b:
            continue
        for i in range(len(cbs)):
            c = cbs[i]
            m = lat[a] + slope[a] * c
            for j in range(a + 1, b):
                v = lat[j] + slope[j] * c
                if v > m:
                    m = v
            out[k, i] = m if m > 0.0 else 0.0
    return out


@njit(cache=True)
def one_link_lines(step_ptr, s0, s1, link, nbytes, scale, inv_bw, num_links):
    """``(slope, batch_load)`` of steps ``s0:s1`` whose transfers use one link each
    (``link`` and ``nbytes`` per transfer of the batch): a transfer's slope is the bytes
    on its link in its step, times ``scale``, over the link's bandwidth; ``batch_load`` is
    each link's bytes summed over the batch's steps, step by step."""
    base = step_ptr[s0]
    load = np.zeros(num_links)
    total = np.zeros(num_links)
    slope = np.empty(step_ptr[s1] - base)
    for s in range(s0, s1):
        a = step_ptr[s] - base
        b = step_ptr[s + 1] - base
        for t in range(a, b):
            load[link[t]] += nbytes[t]
        for t in range(a, b):
            slope[t] = (load[link[t]] * scale) * inv_bw[link[t]]
        for t in range(a, b):
            x = load[link[t]]
            if x != 0.0:
                total[link[t]] += x * scale
                load[link[t]] = 0.0
    return slope, total


@njit(cache=True)
def _pair_row(pair_ptr, pair_dst, u, v):
    """The row of pair ``(u, v)`` among source ``u``'s rows ``pair_ptr[u]:pair_ptr[u+1]``
    (destinations ``pair_dst`` in increasing order): a binary search."""
    lo, hi = pair_ptr[u], pair_ptr[u + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        if pair_dst[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def one_link_lines_table(step_ptr, s0, s1, src, dst, pair_ptr, pair_dst, pair_link, pair_lat,
                         chunk_ptr, unit, chunk_bytes, inv_bw, num_links):
    """:func:`one_link_lines` from the schedule's columns: each transfer's pair row found
    among its source's pairs (rows ``pair_ptr[u]:pair_ptr[u+1]``, destinations
    ``pair_dst`` in increasing order), its link and latency from the pair's; ``(lat,
    slope, batch_load)``. With ``unit`` (one chunk per transfer) chunks are counted and
    the loads scaled by ``chunk_bytes``; otherwise each transfer weighs its chunks x
    ``chunk_bytes``."""
    base = step_ptr[s0]
    T = step_ptr[s1] - base
    link = np.empty(T, np.int64)
    lat = np.empty(T)
    nbytes = np.empty(T)
    for i in range(T):
        t = base + i
        row = _pair_row(pair_ptr, pair_dst, src[t], dst[t])
        link[i] = pair_link[row]
        lat[i] = pair_lat[row]
        nbytes[i] = 1.0 if unit else (chunk_ptr[t + 1] - chunk_ptr[t]) * chunk_bytes
    slope, total = one_link_lines(step_ptr, s0, s1, link, nbytes,
                                  chunk_bytes if unit else 1.0, inv_bw, num_links)
    return lat, slope, total


@njit(cache=True)
def _same_transfers(src, dst, pa, a, n):
    """Whether transfers ``a:a+n`` have the sources and destinations of transfers
    ``pa:pa+n``, in order."""
    for i in range(n):
        if src[a + i] != src[pa + i] or dst[a + i] != dst[pa + i]:
            return False
    return True


@njit(cache=True)
def _same_counts(chunk_ptr, pa, a, n):
    """Whether transfers ``a:a+n`` carry as many chunks as transfers ``pa:pa+n``."""
    for i in range(n):
        if chunk_ptr[a + i + 1] - chunk_ptr[a + i] != chunk_ptr[pa + i + 1] - chunk_ptr[pa + i]:
            return False
    return True


@njit(cache=True)
def repeated_steps(step_ptr, src, dst):
    """Per step: whether its transfers have the sources and destinations of the last
    nonempty step before it, in order (every step of a ring after the first)."""
    S = len(step_ptr) - 1
    out = np.zeros(S, np.bool_)
    pa = pb = -1
    for s in range(S):
        a, b = step_ptr[s], step_ptr[s + 1]
        if a == b:
            continue
        if pb - pa == b - a and _same_transfers(src, dst, pa, a, b - a):
            out[s] = True
        else:
            pa, pb = a, b
    return out


@njit(cache=True)
def one_link_step_times(step_ptr, s0, s1, src, dst, pair_ptr, pair_dst, pair_link, pair_lat,
                        chunk_ptr, unit, chunk_bytes, inv_bw, num_links, cbs, repeats):
    """:func:`one_link_lines_table` and :func:`step_envelope` in one pass per step:
    ``(times, batch_load)`` with ``times[k, i]`` step ``s0 + k``'s time at chunk size
    ``cbs[i]``. The same floating-point operations in the same order as the two kernels
    one after the other (so the same bits), without the batch-long arrays of links,
    latencies and slopes between them (a 64x64 torus's Hamiltonian allreduce: 134
    million transfers).

    A step whose transfers are those of the step before it (the same sources,
    destinations and chunk counts in the same order: every step of a ring) has the
    same links, loads and times: its links are not looked up again, its times are
    copied, and the loads of the step before it are added to ``batch_load`` again (each
    link's sum is the same sequence of additions, step by step). ``repeats``: the
    schedule's :func:`repeated_steps` (sources and destinations; the chunk counts are
    compared here)."""
    nseg = s1 - s0
    nc = len(cbs)
    out = np.zeros((nseg, nc))
    load = np.zeros(num_links)
    total = np.zeros(num_links)
    most = 0
    for s in range(s0, s1):
        most = max(most, step_ptr[s + 1] - step_ptr[s])
    link = np.empty(most, np.int64)
    lat = np.empty(most)
    used = np.empty(most, np.int64)       # the links of the last step and their loads
    used_load = np.empty(most)
    nused = 0
    m = np.empty(nc)
    scale = chunk_bytes if unit else 1.0
    pa = pb = -1                      # the last nonempty step whose links are in ``link``
    for s in range(s0, s1):
        a = step_ptr[s]
        b = step_ptr[s + 1]
        if a == b:
            continue
        if pb >= 0 and repeats[s] and (unit or _same_counts(chunk_ptr, pa, a, b - a)):
            for i in range(nc):
                out[s - s0, i] = m[i] if m[i] > 0.0 else 0.0
            for j in range(nused):
                total[used[j]] += used_load[j]
            continue
        for t in range(a, b):
            row = _pair_row(pair_ptr, pair_dst, src[t], dst[t])
            k = pair_link[row]
            link[t - a] = k
            lat[t - a] = pair_lat[row]
            load[k] += 1.0 if unit else (chunk_ptr[t + 1] - chunk_ptr[t]) * chunk_bytes
        for t in range(b - a):
            k = link[t]
            slope = (load[k] * scale) * inv_bw[k]
            for i in range(nc):
                x = lat[t] + slope * cbs[i]
                if t == 0 or x > m[i]:
                    m[i] = x
        for i in range(nc):
            out[s - s0, i] = m[i] if m[i] > 0.0 else 0.0
        pa, pb = a, b
        nused = 0
        for t in range(b - a):
            k = link[t]
            x = load[k]
            if x != 0.0:
                used[nused] = k
                used_load[nused] = x * scale
                nused += 1
                total[k] += x * scale
                load[k] = 0.0
    return out, total


@njit(cache=True)
def _bitmap_pairs(src, dst, n, skip, t0, keys):
    """:func:`distinct_pairs` from transfer ``t0`` on, the keys found so far in ``keys``
    (-1: empty), with one bit per key of the ``n x n`` table."""
    words = np.zeros((np.int64(n) * n + 63) // 64, np.uint64)
    one = np.uint64(1)
    for x in keys:
        if x != -1:
            words[x >> 6] |= one << np.uint64(x & 63)
    use_skip = len(skip) > 0
    for t in range(t0, len(src)):
        if use_skip and skip[t]:
            continue
        k = np.int64(src[t]) * n + dst[t]
        words[k >> 6] |= one << np.uint64(k & 63)
    count = 0
    for w in words:
        while w:
            w &= w - one
            count += 1
    out = np.empty(count, np.int64)
    j = 0
    for i in range(len(words)):
        w = words[i]
        b = 0
        while w:
            if w & one:
                out[j] = i * 64 + b
                j += 1
            w >>= one
            b += 1
    return out


@njit(cache=True)
def distinct_pairs(src, dst, n, skip):
    """The sorted distinct keys ``src * n + dst`` of the transfers not in ``skip`` (a
    mask, or empty for none): an open-addressing set that doubles when half full, so no
    sort of every key (a 16,384-rank ring: 537 million transfers, 16,384 pairs); once the
    set would outgrow one bit per key of the ``n x n`` table, that bitmap instead (a
    direct allreduce on 4,096 ranks: 16.8 million pairs, a 2 MiB bitmap, no 256 MiB set).

    >>> import numpy as np
    >>> u, v = np.array([1, 0, 1], np.int32), np.array([2, 1, 2], np.int32)
    >>> distinct_pairs(u, v, 3, np.zeros(0, dtype=bool)).tolist()
    [1, 5]
    """
    cap = 1 << 12
    keys = np.full(cap, -1, np.int64)
    size = 0
    bits = np.int64(n) * n
    use_skip = len(skip) > 0
    for t in range(len(src)):
        if use_skip and skip[t]:
            continue
        k = np.int64(src[t]) * n + dst[t]
        h = (k * np.int64(-7046029254386353131)) >> 40    # Fibonacci hashing
        i = h & (cap - 1)
        while keys[i] != -1 and keys[i] != k:
            i = (i + 1) & (cap - 1)
        if keys[i] == k:
            continue
        keys[i] = k
        size += 1
        if 2 * size > cap:
            if 128 * np.int64(cap) >= bits:               # the doubled set > the bitmap
                return _bitmap_pairs(src, dst, n, skip, t + 1, keys)
            old = keys                                    # grow and re-insert
            cap *= 2
            keys = np.full(cap, -1, np.int64)
            for x in old:
                if x != -1:
                    j = ((x * np.int64(-7046029254386353131)) >> 40) & (cap - 1)
                    while keys[j] != -1:
                        j = (j + 1) & (cap - 1)
                    keys[j] = x
    out = keys[keys != -1]
    out.sort()
    return out
