"""Compiled inner loop of the flow-level simulator (see :mod:`topocoll.sim.flow`).

Everything here is numba ``njit`` code over flat arrays; the public API and the
description of the model are in :mod:`topocoll.sim.flow` and ``docs/design-sim.md``.

Event keys pushed on the heap of :mod:`topocoll.sim.events` are ``4 * transfer + kind``.
"""

from __future__ import annotations

import numba
import numpy as np

from .depends import finish_transfer, release_group
from .events import heap_pop, heap_push

__all__ = ["simulate", "waterfill"]

INJECT, ARRIVE, DONE = 0, 1, 2
#: Flows whose predicted drain time is within this relative distance of the current
#: instant drain together (merges floating-point near-ties; not a modelling choice).
DRAIN_RTOL = 1e-12
#: Route fractions below this are treated as zero when looking for a bottleneck.
FRAC_EPS = 1e-9


@numba.njit(cache=True)
def _grow_log(lt, lf, lr):
    n = len(lt)
    lt2, lf2, lr2 = np.empty(2 * n), np.empty(2 * n, np.int64), np.empty(2 * n)
    lt2[:n], lf2[:n], lr2[:n] = lt, lf, lr
    return lt2, lf2, lr2


@numba.njit(cache=True)
def waterfill(act, na, ptr, link, frac, cap, out, W, load, mark, stamp, lidx, links,
              lptr, lflow, frozen):
    """Max-min fair rates of flows ``act[:na]`` by progressive filling, into ``out``.

    A flow at rate ``r`` puts ``r * frac`` on each of its links; the common rate of the
    unfrozen flows rises until a link saturates, whose flows are then frozen. Ties between
    links saturating at the same level go to the link met first (deterministic).
    Scratch arrays are sized by the caller; ``mark``/``stamp`` avoid clearing per call.
    """
    nl = 0
    for i in range(na):
        f = act[i]
        frozen[f] = False
        for e in range(ptr[f], ptr[f + 1]):
            l = link[e]
            if mark[l] != stamp:
                mark[l] = stamp
                lidx[l] = nl
                links[nl] = l
                nl += 1
                W[l] = 0.0
                load[l] = 0.0
                lptr[nl] = 0
            W[l] += frac[e]
            lptr[lidx[l] + 1] += 1
    lptr[0] = 0
    for i in range(nl):
        lptr[i + 1] += lptr[i]
    fill = lptr[:nl].copy()
    for i in range(na):
        f = act[i]
        for e in range(ptr[f], ptr[f + 1]):
            j = lidx[link[e]]
            lflow[fill[j]] = f
            fill[j] += 1
    nfrozen = 0
    for i in range(na):  # flows that cross no link (cannot happen for active flows)
        f = act[i]
        if ptr[f] == ptr[f + 1]:
            out[f] = np.inf
            frozen[f] = True
            nfrozen += 1
    level = 0.0
    while nfrozen < na:
        best, bl = np.inf, -1
        for i in range(nl):
            l = links[i]
            if W[l] > FRAC_EPS:
                lev = (cap[l] - load[l]) / W[l]
                if lev < best:
                    best, bl = lev, i
        if bl < 0:
            break
        level = max(level, best)
        for j in range(lptr[bl], lptr[bl + 1]):
            f = lflow[j]
            if frozen[f]:
                continue
            frozen[f] = True
            nfrozen += 1
            out[f] = level
            for e in range(ptr[f], ptr[f + 1]):
                load[link[e]] += frac[e] * level
                W[link[e]] -= frac[e]
        W[links[bl]] = 0.0
    return nl


@numba.njit(cache=True)
def simulate(ptr, link, frac, lat, nbytes, reduce, dst, cap, alpha, reduce_bw,
             gsrc, gdst, gnode, count, nfirst, nend, rptr, rel, num_nodes, record):
    """Run the flow-level simulation; return ``(start, finish, log_t, log_f, log_r,
    stats)`` where the log holds every rate change ``(time, flow, new rate)`` and
    ``stats = [instants, full recomputations, local updates]``. With ``record`` False
    the log stays empty (saves memory when only the times are wanted)."""
    T, L = len(nbytes), len(cap)
    start = np.full(T, np.nan)
    finish = np.full(T, np.nan)
    cnt = count.copy()
    nxt = nfirst.copy()
    ht = np.empty(3 * T + 4)
    hs = np.empty(3 * T + 4, np.int64)
    hk = np.empty(3 * T + 4, np.int64)
    hsize, seq = 0, 0
    # transfers released with zero delay skip the heap: they are injected at the same
    # instant, after the heap events of that instant (ids in release order)
    fifo = np.empty(max(T, 1), np.int64)
    fhead, ftail = 0, 0
    act = np.empty(T, np.int64)
    pos = np.full(T, -1, np.int64)
    na = 0
    rem = np.zeros(T)
    rate = np.zeros(T)
    newrate = np.zeros(T)
    dpred = np.zeros(T)
    nusers = np.zeros(L, np.int64)
    tmp = np.zeros(L, np.int64)
    cfree = np.zeros(num_nodes)
    W, load, lidx = np.zeros(L), np.zeros(L), np.zeros(L, np.int64)
    mark = np.full(L, -1, np.int64)
    links, lptr = np.zeros(L, np.int64), np.zeros(L + 1, np.int64)
    lflow = np.zeros(len(link), np.int64)
    frozen = np.zeros(T, np.bool_)
    changed = np.empty(T, np.int64)
    isnew = np.zeros(T, np.bool_)
    lt, lf, lr = np.empty(1024), np.empty(1024, np.int64), np.empty(1024)
    nlog = 0
    stats = np.zeros(3, np.int64)
    stamp = 0
    for u in range(num_nodes):
        if nfirst[u] < nend[u]:
            hsize, seq, ftail = release_group(nfirst[u], 0.0, alpha, rptr, rel, start, ht, hs,
                                              hk, hsize, seq, 2, INJECT, fifo, ftail)
    now = 0.0
    while True:
        t_heap = ht[0] if hsize > 0 else np.inf
        if fhead < ftail:
            t_heap = now
        t_drain, arg = np.inf, -1
        for i in range(na):
            f = act[i]
            d = now + rem[f] / rate[f]
            dpred[f] = d
            if d < t_drain:
                t_drain, arg = d, f
        tau = min(t_heap, t_drain)
        if tau == np.inf:
            break
        stats[0] += 1
        nch = 0
        if t_drain <= t_heap:
            lim = tau + DRAIN_RTOL * abs(tau)
            i = 0
            while i < na:
                f = act[i]
                if f == arg or dpred[f] <= lim:
                    na -= 1
                    act[i] = act[na]
                    pos[act[i]] = i
                    pos[f] = -1
                    rem[f] = 0.0
                    rate[f] = 0.0
                    if record:
                        if nlog == len(lt):
                            lt, lf, lr = _grow_log(lt, lf, lr)
                        lt[nlog], lf[nlog], lr[nlog] = tau, f, 0.0
                        nlog += 1
                    for e in range(ptr[f], ptr[f + 1]):
                        nusers[link[e]] -= 1
                    changed[nch] = f
                    nch += 1
                    hsize = heap_push(ht, hs, hk, hsize, tau + lat[f], seq, 4 * f + ARRIVE)
                    seq += 1
                else:
                    i += 1
        dt = tau - now
        if dt > 0:
            for i in range(na):
                f = act[i]
                rem[f] -= rate[f] * dt
        now = tau
        while (hsize > 0 and ht[0] <= tau) or fhead < ftail:
            if hsize > 0 and ht[0] <= tau:
                _, key, hsize = heap_pop(ht, hs, hk, hsize)
                t, kind = key >> 2, key & 3
            else:
                t, kind = fifo[fhead], INJECT
                fhead += 1
            if kind == INJECT:
                if ptr[t] == ptr[t + 1] or nbytes[t] <= 0.0:
                    hsize = heap_push(ht, hs, hk, hsize, tau + lat[t], seq, 4 * t + ARRIVE)
                    seq += 1
                else:
                    act[na] = t
                    pos[t] = na
                    na += 1
                    rem[t] = nbytes[t]
                    rate[t] = 0.0
                    for e in range(ptr[t], ptr[t + 1]):
                        nusers[link[e]] += 1
                    changed[nch] = t
                    isnew[t] = True
                    nch += 1
            elif kind == ARRIVE and reduce[t] and reduce_bw > 0.0:
                c0 = max(tau, cfree[dst[t]])
                cfree[dst[t]] = c0 + nbytes[t] / reduce_bw
                hsize = heap_push(ht, hs, hk, hsize, cfree[dst[t]], seq, 4 * t + DONE)
                seq += 1
            else:
                hsize, seq, ftail = finish_transfer(t, tau, alpha, gsrc, gdst, gnode, cnt, nxt,
                                                    nend, rptr, rel, start, finish, ht, hs,
                                                    hk, hsize, seq, 2, INJECT, fifo, ftail)
        if nch == 0:
            continue
        # incremental rule: if every link of a changed flow now carries at most one flow
        # and that flow is new, no unchanged flow shares a link with a changed one: the
        # unchanged rates stay valid and each new flow runs at its own bottleneck
        for j in range(nch):
            f = changed[j]
            if isnew[f]:
                for e in range(ptr[f], ptr[f + 1]):
                    tmp[link[e]] += 1
        local = True
        for j in range(nch):
            f = changed[j]
            for e in range(ptr[f], ptr[f + 1]):
                if nusers[link[e]] != tmp[link[e]] or nusers[link[e]] > 1:
                    local = False
        for j in range(nch):
            f = changed[j]
            for e in range(ptr[f], ptr[f + 1]):
                tmp[link[e]] = 0
        if local:
            stats[2] += 1
            for j in range(nch):
                f = changed[j]
                if isnew[f]:
                    r = np.inf
                    for e in range(ptr[f], ptr[f + 1]):
                        if frac[e] > FRAC_EPS:
                            r = min(r, cap[link[e]] / frac[e])
                    newrate[f] = r
        else:
            stats[1] += 1
            stamp += 1
            waterfill(act, na, ptr, link, frac, cap, newrate, W, load, mark, stamp, lidx,
                      links, lptr, lflow, frozen)
        for j in range(nch if local else na):
            f = changed[j] if local else act[j]
            if pos[f] < 0:
                continue
            if newrate[f] != rate[f]:
                rate[f] = newrate[f]
                if record:
                    if nlog == len(lt):
                        lt, lf, lr = _grow_log(lt, lf, lr)
                    lt[nlog], lf[nlog], lr[nlog] = tau, f, rate[f]
                    nlog += 1
        for j in range(nch):
            isnew[changed[j]] = False
    return start, finish, lt[:nlog], lf[:nlog], lr[:nlog], stats
