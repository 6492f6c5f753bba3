"""Compiled event loop of the gradient packet engine (:mod:`topocoll.sim.dlcp.engine`).

numba ``njit`` code over flat arrays. It is the same model as the engine's Python loop
(``engine="python"``, the reference), event for event: the same events are pushed in the
same order with the same times, so both give the same results bit for bit
(``tests/sim/test_dlcp_compiled.py`` checks every scheme and pattern). The policies reach
it as tables (:meth:`~topocoll.sim.dlcp.queue_policies.DropTail.port_tables`,
:meth:`~topocoll.sim.dlcp.transport_policies.FixedWindow.compiled`), never as branches on
their names.

Event keys are ``(payload << 3) | kind``; events are ordered by ``(time, sequence)``,
the sequence counting pushes as the Python loop's heap does. Where they wait differs,
the order does not:

- an event pushed at ``now + d`` for a delay ``d`` from a small fixed set (a link's
  latency for an arrival, a message's one-way latency for its acknowledgements and its
  resends, a full-size packet's serialization on a link for the port's next
  completion) goes to the FIFO of that delay: ``now`` never decreases, so each FIFO is
  already in ``(time, sequence)`` order and costs O(1);
- the events known before the run (releases of messages without dependencies,
  background flows) are one list sorted once;
- the rest (a port finishing a packet, a decision, a dependent's release) is a binary
  heap of at most a few events per port.

The next event is the least of the heap's top and the FIFOs' heads. A background flow
is one event that enqueues all its packets (the Python loop pushes one event per packet,
all at the flow's start with consecutive sequence numbers, so nothing can run between
them); ``events`` still counts one per packet.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ..events import heap_pop, heap_push

__all__ = ["dlcp_simulate"]

# event kinds (the Python loop's numbers)
TXDONE, RELEASE, DECIDE, RESEND, BGFLOW, ARRIVE, ACK = 0, 1, 2, 3, 4, 5, 6
SH = 3
# record columns: bytes on the wire, priority, path id, hop, message (-1: background),
# packet index, ECN mark, next record (queue link / free list)
RS, RP, RPATH, RHOP, RMSG, RPKT, RMARK, RNEXT = 0, 1, 2, 3, 4, 5, 6, 7
NCOL = 8
# scalar state between calls of the loop (one int64 array)
(S_HSIZE, S_SEQ, S_FREE, S_NFREE, S_SP, S_EVENTS, S_RETX, S_BGDROPS, S_REMAINING,
 S_NDONE) = range(10)
# what the loop returns: done, or which store needs room first
DONE, GROW_HEAP, GROW_FIFO, GROW_POOL = 0, 1, 2, 3
FIFO_MARGIN = 3
#: entries the heap, each FIFO and the record pool start with (a power of two; they
#: double when an event might not fit)
INITIAL_CAPACITY = 1024


class _Net(NamedTuple):
    """Links and paths (read only)."""

    n: int
    bw: np.ndarray
    lat: np.ndarray
    host_port: np.ndarray
    plinks: np.ndarray
    poff: np.ndarray
    pairoff: np.ndarray
    lat_fifo: np.ndarray
    tx_fifo: np.ndarray
    wire: int


class _Msgs(NamedTuple):
    """Messages, their packets, children and delays; background flows (read only)."""

    msrc: np.ndarray
    mdst: np.ndarray
    mid: np.ndarray
    meps: np.ndarray
    mstart: np.ndarray
    mweight: np.ndarray
    pkoff: np.ndarray
    plen: np.ndarray
    pprio: np.ndarray
    choff: np.ndarray
    child: np.ndarray
    fwd_lat: np.ndarray
    back_lat: np.ndarray
    ack_fifo: np.ndarray
    fwd_fifo: np.ndarray
    bgoff: np.ndarray
    bgsize: np.ndarray
    bgprio: np.ndarray
    bgpath: np.ndarray
    st: np.ndarray
    skey: np.ndarray
    sorder: np.ndarray


class _Cfg(NamedTuple):
    """Policies and timers (read only)."""

    order: np.ndarray
    limit: np.ndarray
    per_class: bool
    mark: int
    nclass: int
    spray: bool
    tail_timer: float
    rto: float
    header: int
    tkind: int
    wsize: int
    dg: float
    dmax: int
    nfifo: int
    hmargin: int
    rmargin: int


class _Ports(NamedTuple):
    """Port state and the record pool (the pool grows between calls)."""

    rec: np.ndarray
    qhead: np.ndarray
    qtail: np.ndarray
    occ: np.ndarray
    cocc: np.ndarray
    busy: np.ndarray


class _Events(NamedTuple):
    """The heap and the delay FIFOs (grown between calls)."""

    ht: np.ndarray
    hs: np.ndarray
    hk: np.ndarray
    qt: np.ndarray
    qs: np.ndarray
    qk: np.ndarray
    qh: np.ndarray
    ql: np.ndarray


class _State(NamedTuple):
    """Per-message state and the results."""

    finish: np.ndarray
    zero: np.ndarray
    drops: np.ndarray
    have: np.ndarray
    nhave: np.ndarray
    got: np.ndarray
    total: np.ndarray
    done: np.ndarray
    done_order: np.ndarray
    waiting: np.ndarray
    pending: np.ndarray
    rend_idx: np.ndarray
    rend_t: np.ndarray
    end_arr: np.ndarray
    end_set: np.ndarray
    last_res: np.ndarray
    inflight: np.ndarray
    todo: np.ndarray
    thead: np.ndarray
    tlen: np.ndarray
    miss: np.ndarray
    mlen: np.ndarray
    rr: np.ndarray
    cwnd: np.ndarray
    alpha: np.ndarray
    ssth: np.ndarray
    acked: np.ndarray
    marked: np.ndarray
    target: np.ndarray
    cut: np.ndarray


@numba.njit(cache=True, inline="always")
def _fput(qt, qs, qk, qh, ql, f, t, seq, key):
    """Append ``(t, seq, key)`` to ring FIFO ``f`` (the caller made room; the capacity
    is a power of two); True when the FIFO is now too full for another event's pushes."""
    mask = qt.shape[1] - 1
    j = (qh[f] + ql[f]) & mask
    qt[f, j], qs[f, j], qk[f, j] = t, seq, key
    ql[f] += 1
    return ql[f] + FIFO_MARGIN > mask


@numba.njit(cache=True)
def _run(net, msgs, cfg, ports, ev, state, sc):
    """The event loop, from the state in its arguments until every message completed
    (returns DONE) or until a store lacks room for the next event's pushes (returns
    GROW_HEAP, GROW_FIFO or GROW_POOL; the caller grows it and calls again). No array
    is reassigned in here, so the loop pays no reference counting.

    Enqueueing a packet at a port and starting an idle port are written out where they
    happen (an arrival, a background flow, a message's pump) instead of calling a
    helper: a numba helper taking the port arrays and returning the free list
    (``inline="always"`` or not) brought the atomic reference counts back, 1.63 s ->
    2.4 s on the benchmark iteration (``docs/design-dlcp.md``)."""
    n, bw, lat, host_port, plinks, poff, pairoff, lat_fifo, tx_fifo, wire = net
    (msrc, mdst, mid, meps, mstart, mweight, pkoff, plen, pprio, choff, child, fwd_lat,
     back_lat, ack_fifo, fwd_fifo, bgoff, bgsize, bgprio, bgpath, st, skey, sorder) = msgs
    (order, limit, per_class, mark, nclass, spray, tail_timer, rto, header, tkind, wsize,
     dg, dmax, nfifo, hmargin, rmargin) = cfg
    rec, qhead, qtail, occ, cocc, busy = ports
    ht, hs, hk, qt, qs, qk, qh, ql = ev
    (finish, zero, drops, have, nhave, got, total, done, done_order, waiting, pending,
     rend_idx, rend_t, end_arr, end_set, last_res, inflight, todo, thead, tlen, miss,
     mlen, rr, cwnd, alpha, ssth, acked, marked, target, cut) = state
    hsize, seq, free, nfree, sp = sc[S_HSIZE], sc[S_SEQ], sc[S_FREE], sc[S_NFREE], sc[S_SP]
    events, retx, bg_drops = sc[S_EVENTS], sc[S_RETX], sc[S_BGDROPS]
    remaining, ndone = sc[S_REMAINING], sc[S_NDONE]
    nst = len(st)
    hcap = len(ht)
    fmask = qt.shape[1] - 1
    full = False
    for f in range(nfifo):
        if ql[f] + FIFO_MARGIN > fmask:
            full = True
    code = DONE
    while remaining > 0:
        # room for everything one event may push or allocate
        if hsize + hmargin > hcap:
            code = GROW_HEAP
            break
        if nfree < rmargin:
            code = GROW_POOL
            break
        if full:
            code = GROW_FIFO
            break
        # the next event: the least (time, sequence) of the heap, the list and the FIFOs
        src = -9
        t = 0.0
        bs = 0
        if hsize > 0:
            src, t, bs = -1, ht[0], hs[0]
        if sp < nst:
            x = sorder[sp]
            if src == -9 or st[x] < t or (st[x] == t and x < bs):
                src, t, bs = -2, st[x], x
        for f in range(nfifo):
            if ql[f] > 0:
                j = qh[f]
                if src == -9 or qt[f, j] < t or (qt[f, j] == t and qs[f, j] < bs):
                    src, t, bs = f, qt[f, j], qs[f, j]
        if src == -9:
            break
        if src == -1:
            t, key, hsize = heap_pop(ht, hs, hk, hsize)
        elif src == -2:
            key = skey[sorder[sp]]
            sp += 1
        else:
            key = qk[src, qh[src]]
            qh[src] = (qh[src] + 1) & fmask
            ql[src] -= 1
        kind = key & 7
        x = key >> SH
        events += 1
        if kind == TXDONE or kind == ARRIVE:
            r = x
            if kind == TXDONE:
                link = plinks[poff[rec[r, RPATH]] + rec[r, RHOP]]
                occ[link] -= rec[r, RS]
                if per_class:
                    cocc[link, order[rec[r, RP]]] -= rec[r, RS]
                # start the port's next packet
                c = -1
                for cc in range(nclass):
                    if qhead[link, cc] >= 0:
                        c = cc
                        break
                if c < 0:
                    busy[link] = False
                else:
                    q = qhead[link, c]
                    qhead[link, c] = rec[q, RNEXT]
                    if qhead[link, c] < 0:
                        qtail[link, c] = -1
                    busy[link] = True
                    f = tx_fifo[link] if rec[q, RS] == wire else -1
                    if f >= 0:
                        full |= _fput(qt, qs, qk, qh, ql, f, t + rec[q, RS] / bw[link], seq,
                                      (q << SH) | TXDONE)
                    else:
                        hsize = heap_push(ht, hs, hk, hsize, t + rec[q, RS] / bw[link], seq,
                                          (q << SH) | TXDONE)
                    seq += 1
                f = lat_fifo[link]
                if f >= 0:
                    full |= _fput(qt, qs, qk, qh, ql, f, t + lat[link], seq, (r << SH) | ARRIVE)
                else:
                    hsize = heap_push(ht, hs, hk, hsize, t + lat[link], seq, (r << SH) | ARRIVE)
                seq += 1
                continue
            # ARRIVE at the next node
            hop = rec[r, RHOP] + 1
            rec[r, RHOP] = hop
            p = rec[r, RPATH]
            k = rec[r, RMSG]
            if hop == poff[p + 1] - poff[p]:
                if k >= 0:
                    delivered = True
                    was_marked = rec[r, RMARK] != 0
                    i = rec[r, RPKT]
                else:
                    rec[r, RNEXT] = free
                    free = r
                    nfree += 1
                    continue
            else:
                link = plinks[poff[p] + hop]
                size = rec[r, RS]
                pr = rec[r, RP]
                c = order[pr]
                admitted = True
                if not host_port[link]:
                    o = cocc[link, c] if per_class else occ[link]
                    if o + size > limit[pr]:
                        admitted = False
                    elif mark >= 0 and occ[link] + size > mark:
                        rec[r, RMARK] = 1
                if admitted:
                    if per_class:
                        cocc[link, c] += size
                    rec[r, RNEXT] = -1
                    if qtail[link, c] < 0:
                        qhead[link, c] = r
                    else:
                        rec[qtail[link, c], RNEXT] = r
                    qtail[link, c] = r
                    occ[link] += size
                    if not busy[link]:
                        # the queue was empty: r itself starts
                        cq = -1
                        for cc in range(nclass):
                            if qhead[link, cc] >= 0:
                                cq = cc
                                break
                        q = qhead[link, cq]
                        qhead[link, cq] = rec[q, RNEXT]
                        if qhead[link, cq] < 0:
                            qtail[link, cq] = -1
                        busy[link] = True
                        f = tx_fifo[link] if rec[q, RS] == wire else -1
                        if f >= 0:
                            full |= _fput(qt, qs, qk, qh, ql, f, t + rec[q, RS] / bw[link], seq,
                                          (q << SH) | TXDONE)
                        else:
                            hsize = heap_push(ht, hs, hk, hsize, t + rec[q, RS] / bw[link], seq,
                                              (q << SH) | TXDONE)
                        seq += 1
                    continue
                if k < 0:
                    bg_drops += 1
                    rec[r, RNEXT] = free
                    free = r
                    nfree += 1
                    continue
                drops[min(pr, 7)] += 1
                delivered = False
                was_marked = False
                i = rec[r, RPKT]
            rec[r, RNEXT] = free
            free = r
            nfree += 1
            # resolve packet i of message k
            akey = (((k << 2) | (2 if was_marked else 0) | (1 if delivered else 0)) << SH) | ACK
            f = ack_fifo[k]
            if f >= 0:
                full |= _fput(qt, qs, qk, qh, ql, f, t + back_lat[k], seq, akey)
            else:
                hsize = heap_push(ht, hs, hk, hsize, t + back_lat[k], seq, akey)
            seq += 1
            pending[k] -= 1
            if t > last_res[k]:
                last_res[k] = t
            if delivered:
                if not have[i]:
                    have[i] = True
                    nhave[k] += 1
                    got[k] += plen[i]
                    if nhave[k] == pkoff[k + 1] - pkoff[k]:
                        done[k] = True
                if i - pkoff[k] == rend_idx[k]:
                    end_arr[k] = t
                    end_set[k] = True
            if pending[k] == 0:
                if end_set[k]:
                    tdec = max(end_arr[k], last_res[k])
                else:
                    timer = tail_timer if meps[k] > 0 else rto
                    tdec = max(last_res[k], rend_t[k] + timer)
                hsize = heap_push(ht, hs, hk, hsize, tdec, seq, (k << SH) | DECIDE)
                seq += 1
            continue
        if kind == ACK:
            k = x >> 2
            mk = (x >> 1) & 1
            dv = x & 1
            inflight[k] -= 1
            if tkind == 1:
                acked[k] += 1
                marked[k] += mk
                if dv == 0 and not cut[k]:
                    cwnd[k] = max(1.0, cwnd[k] / 2)
                    ssth[k] = cwnd[k]
                    cut[k] = True
                elif dv == 1 and mk == 0 and not cut[k]:
                    if cwnd[k] < ssth[k]:
                        cwnd[k] += 1.0
                    else:
                        cwnd[k] += 1.0 / cwnd[k]
                if acked[k] >= target[k]:
                    frac = marked[k] / acked[k]
                    alpha[k] = (1 - dg) * alpha[k] + dg * frac
                    if marked[k] and not cut[k]:
                        cwnd[k] = max(1.0, cwnd[k] * (1 - alpha[k] / 2))
                        ssth[k] = cwnd[k]
                    acked[k] = 0
                    marked[k] = 0
                    cut[k] = False
                    target[k] = max(1, int(cwnd[k]))
                cwnd[k] = min(cwnd[k], float(dmax))
        elif kind == RELEASE or kind == RESEND:
            k = x
            base = pkoff[k]
            if kind == RELEASE:
                cnt = pkoff[k + 1] - base
                for j in range(cnt):
                    todo[base + j] = j
            else:
                cnt = mlen[k]
                for j in range(cnt):
                    todo[base + j] = miss[base + j]
            pending[k] = cnt
            end_set[k] = False
            thead[k] = 0
            tlen[k] = cnt
        elif kind == DECIDE:
            k = x
            base = pkoff[k]
            np_k = pkoff[k + 1] - base
            complete = done[k]
            missing = total[k] - got[k]
            if not complete and missing * mweight[k] <= meps[k] * total[k]:
                done[k] = True
                zero[k] = missing
                complete = True
            if complete:
                finish[k] = t
                done_order[k] = ndone
                ndone += 1
                remaining -= 1
                for e in range(choff[k], choff[k + 1]):
                    c = child[e]
                    waiting[c] -= 1
                    if waiting[c] == 0:
                        hsize = heap_push(ht, hs, hk, hsize, max(t, mstart[c]), seq,
                                          (c << SH) | RELEASE)
                        seq += 1
                continue
            # NACK: the missing packets, most important (lowest class) first, then index
            cnt = 0
            maxp = 0
            for j in range(np_k):
                if not have[base + j] and pprio[base + j] > maxp:
                    maxp = pprio[base + j]
            for pv in range(maxp + 1):
                for j in range(np_k):
                    if not have[base + j] and pprio[base + j] == pv:
                        miss[base + cnt] = j
                        cnt += 1
                        retx += plen[base + j]
            mlen[k] = cnt
            f = fwd_fifo[k]
            if f >= 0:
                full |= _fput(qt, qs, qk, qh, ql, f, t + fwd_lat[k], seq, (k << SH) | RESEND)
            else:
                hsize = heap_push(ht, hs, hk, hsize, t + fwd_lat[k], seq, (k << SH) | RESEND)
            seq += 1
            continue
        elif kind == BGFLOW:
            f = x
            events += bgoff[f + 1] - bgoff[f] - 1
            for j in range(bgoff[f], bgoff[f + 1]):
                r = free
                free = rec[r, RNEXT]
                nfree -= 1
                rec[r, RS], rec[r, RP], rec[r, RPATH] = bgsize[j], bgprio[j], bgpath[j]
                rec[r, RHOP], rec[r, RMSG], rec[r, RPKT], rec[r, RMARK] = 0, -1, j, 0
                link = plinks[poff[bgpath[j]]]
                c = order[bgprio[j]]
                if per_class:
                    cocc[link, c] += bgsize[j]
                rec[r, RNEXT] = -1
                if qtail[link, c] < 0:
                    qhead[link, c] = r
                else:
                    rec[qtail[link, c], RNEXT] = r
                qtail[link, c] = r
                occ[link] += bgsize[j]
                if not busy[link]:
                    q = qhead[link, c]
                    qhead[link, c] = rec[q, RNEXT]
                    if qhead[link, c] < 0:
                        qtail[link, c] = -1
                    busy[link] = True
                    f = tx_fifo[link] if rec[q, RS] == wire else -1
                    if f >= 0:
                        full |= _fput(qt, qs, qk, qh, ql, f, t + rec[q, RS] / bw[link], seq,
                                      (q << SH) | TXDONE)
                    else:
                        hsize = heap_push(ht, hs, hk, hsize, t + rec[q, RS] / bw[link], seq,
                                          (q << SH) | TXDONE)
                    seq += 1
            continue
        # pump message k (after an ACK, a release or a resend)
        base = pkoff[k]
        while tlen[k] > 0:
            if tkind == 1:
                w = max(1, min(dmax, int(cwnd[k])))
            else:
                w = wsize
            if inflight[k] >= w:
                break
            j = todo[base + thead[k]]
            thead[k] += 1
            tlen[k] -= 1
            pair = msrc[k] * n + mdst[k]
            npaths = pairoff[pair + 1] - pairoff[pair]
            if spray:
                p = pairoff[pair] + rr[pair] % npaths
                rr[pair] += 1
            else:
                p = pairoff[pair] + mid[k] % npaths
            r = free
            free = rec[r, RNEXT]
            nfree -= 1
            rec[r, RS] = plen[base + j] + header
            rec[r, RP] = pprio[base + j]
            rec[r, RPATH] = p
            rec[r, RHOP] = 0
            rec[r, RMSG] = k
            rec[r, RPKT] = base + j
            rec[r, RMARK] = 0
            if tlen[k] == 0:
                rend_idx[k] = j
                rend_t[k] = t
            inflight[k] += 1
            link = plinks[poff[p]]
            c = order[pprio[base + j]]
            size = rec[r, RS]
            if not host_port[link]:
                o = cocc[link, c] if per_class else occ[link]
                if o + size > limit[pprio[base + j]]:
                    # the Python loop ignores a refusal at the first hop (a host port
                    # never refuses); keep the record unqueued as it does
                    continue
                if mark >= 0 and occ[link] + size > mark:
                    rec[r, RMARK] = 1
            if per_class:
                cocc[link, c] += size
            rec[r, RNEXT] = -1
            if qtail[link, c] < 0:
                qhead[link, c] = r
            else:
                rec[qtail[link, c], RNEXT] = r
            qtail[link, c] = r
            occ[link] += size
            if not busy[link]:
                q = qhead[link, c]
                qhead[link, c] = rec[q, RNEXT]
                if qhead[link, c] < 0:
                    qtail[link, c] = -1
                busy[link] = True
                f = tx_fifo[link] if rec[q, RS] == wire else -1
                if f >= 0:
                    full |= _fput(qt, qs, qk, qh, ql, f, t + rec[q, RS] / bw[link], seq,
                                  (q << SH) | TXDONE)
                else:
                    hsize = heap_push(ht, hs, hk, hsize, t + rec[q, RS] / bw[link], seq,
                                      (q << SH) | TXDONE)
                seq += 1
    sc[S_HSIZE], sc[S_SEQ], sc[S_FREE], sc[S_NFREE], sc[S_SP] = hsize, seq, free, nfree, sp
    sc[S_EVENTS], sc[S_RETX], sc[S_BGDROPS] = events, retx, bg_drops
    sc[S_REMAINING], sc[S_NDONE] = remaining, ndone
    return code


def _chain(rec: np.ndarray, first: int, last: int, tail: int) -> None:
    """Rows ``first..last - 1`` of the pool as a free list ending in ``tail``."""
    rec[first:last - 1, RNEXT] = np.arange(first + 1, last)
    rec[last - 1, RNEXT] = tail


def _grow(code: int, ev: _Events, ports: _Ports, sc: np.ndarray) -> tuple[_Events, _Ports]:
    """The store that ``_run`` found short (``code``) at twice its size, its content in
    place: the heap's first ``hsize`` entries, each FIFO unrolled to start at 0, the pool's
    new rows chained in front of its free list."""
    i64 = np.int64
    if code == GROW_HEAP:
        return ev._replace(**{a: np.concatenate([getattr(ev, a), np.empty_like(
            getattr(ev, a))]) for a in ("ht", "hs", "hk")}), ports
    if code == GROW_FIFO:
        nf, old = ev.qt.shape
        idx = (ev.qh[:, None] + np.arange(old)[None, :]) & (old - 1)
        grown = {}
        for a in ("qt", "qs", "qk"):
            g = np.empty((nf, 2 * old), getattr(ev, a).dtype)
            g[:, :old] = np.take_along_axis(getattr(ev, a), idx, axis=1)
            grown[a] = g
        return ev._replace(qh=np.zeros(nf, i64), **grown), ports
    old = ports.rec.shape[0]
    new = np.empty((2 * old, NCOL), i64)
    new[:old] = ports.rec
    _chain(new, old, 2 * old, int(sc[S_FREE]))
    sc[S_FREE] = old
    sc[S_NFREE] += old
    return ev, ports._replace(rec=new)


def dlcp_simulate(n, bw, lat, host_port, plinks, poff, pairoff,
                  msrc, mdst, mid, meps, mstart, mweight, pkoff, plen, pprio,
                  choff, child, nwait, fwd_lat, back_lat,
                  bgstart, bgoff, bgsize, bgprio, bgpath,
                  order, limit, per_class, mark, nclass,
                  spray, tail_timer, rto, header,
                  tkind, wsize, dinit, dg, dmax, lat_fifo, ack_fifo, fwd_fifo, nfifo,
                  tx_fifo, wire):
    """Run the messages and background to completion; returns ``(finish, zero_filled,
    retransmitted, drops, background_drops, events, have, done_order)``. Arguments: the
    links (``bw``, ``lat``, ``host_port``), paths (``plinks`` of path ``p`` at
    ``poff[p]:poff[p+1]``, the paths of pair ``s * n + d`` at ``pairoff[pair]:
    pairoff[pair+1]``), messages (columns, packets at ``pkoff[k]:pkoff[k+1]``, children
    CSR ``choff``/``child``, dependency counts ``nwait``, one-way latencies), background
    flows (start, packets at ``bgoff[f]:bgoff[f+1]`` with their size, class and path), the
    port tables (``order``/``limit`` by priority, ``per_class``, ``mark`` threshold or -1,
    ``nclass``), recovery timers, and the transport (``tkind`` 0: fixed window ``wsize``;
    1: DCTCP with ``dinit``, ``dg``, ``dmax``), and the FIFO of each delay
    (``lat_fifo`` per link, ``ack_fifo`` and ``fwd_fifo`` per message, ``tx_fifo`` per
    link for a packet of ``wire`` bytes; -1: the heap)."""
    i64 = np.int64
    nl, nm, npk = len(bw), len(msrc), len(plen)
    # the events known before the run, in push order (releases, then background flows),
    # sorted by (time, sequence)
    ready = np.flatnonzero(nwait == 0)
    st = np.concatenate([mstart[ready], bgstart]).astype(float)
    skey = np.concatenate([(ready << SH) | RELEASE,
                           (np.arange(len(bgstart), dtype=i64) << SH) | BGFLOW]).astype(i64)
    sorder = np.argsort(st, kind="stable").astype(i64)
    npk_msg = np.diff(pkoff)
    npk_bg = np.diff(bgoff)
    # records one event may take: a pump's packets or a background flow's
    rmargin = int(max(npk_msg.max(initial=0), npk_bg.max(initial=0))) + 4
    hmargin = int(np.diff(choff).max(initial=0)) + 4
    net = _Net(int(n), bw, lat, host_port, plinks, poff, pairoff, lat_fifo, tx_fifo, int(wire))
    msgs = _Msgs(msrc, mdst, mid, meps, mstart, mweight, pkoff, plen, pprio, choff, child,
                fwd_lat, back_lat, ack_fifo, fwd_fifo, bgoff, bgsize, bgprio, bgpath, st,
                skey, sorder)
    cfg = _Cfg(order, limit, bool(per_class), int(mark), int(nclass), bool(spray),
              float(tail_timer), float(rto), int(header), int(tkind), int(wsize), float(dg),
              int(dmax), int(nfifo), hmargin, rmargin)
    cap = max(INITIAL_CAPACITY, 2 * rmargin)
    rec = np.empty((cap, NCOL), i64)
    _chain(rec, 0, cap, -1)
    ports = _Ports(rec, np.full((nl, nclass), -1, i64), np.full((nl, nclass), -1, i64),
                  np.zeros(nl, i64), np.zeros((nl, nclass), i64), np.zeros(nl, np.bool_))
    nf = max(int(nfifo), 1)
    hcap = max(INITIAL_CAPACITY, 2 * hmargin)
    ev = _Events(np.empty(hcap), np.empty(hcap, i64), np.empty(hcap, i64),
                np.empty((nf, INITIAL_CAPACITY)), np.empty((nf, INITIAL_CAPACITY), i64),
                np.empty((nf, INITIAL_CAPACITY), i64),
                np.zeros(nf, i64), np.zeros(nf, i64))
    total = np.add.reduceat(plen, pkoff[:-1]) if npk else np.zeros(nm, i64)
    total = np.where(npk_msg > 0, total, 0).astype(i64)
    state = _State(
        np.full(nm, np.nan), np.zeros(nm, i64), np.zeros(8, i64), np.zeros(npk, np.bool_),
        np.zeros(nm, i64), np.zeros(nm, i64), total, np.zeros(nm, np.bool_),
        np.full(nm, -1, i64), nwait.astype(i64), np.zeros(nm, i64), np.full(nm, -1, i64),
        np.zeros(nm), np.zeros(nm), np.zeros(nm, np.bool_), np.zeros(nm),
        np.zeros(nm, i64), np.empty(npk, i64), np.zeros(nm, i64), np.zeros(nm, i64),
        np.empty(npk, i64), np.zeros(nm, i64), np.zeros(n * n, i64),
        np.full(nm, float(dinit)), np.zeros(nm), np.full(nm, np.inf), np.zeros(nm, i64),
        np.zeros(nm, i64), np.full(nm, dinit, i64), np.zeros(nm, np.bool_))
    sc = np.zeros(10, i64)
    sc[S_SEQ] = len(st)
    sc[S_NFREE] = cap
    sc[S_REMAINING] = nm
    while True:
        code = _run(net, msgs, cfg, ports, ev, state, sc)
        if code == DONE:
            break
        ev, ports = _grow(code, ev, ports, sc)
    return (state.finish, state.zero, int(sc[S_RETX]), state.drops, int(sc[S_BGDROPS]),
            int(sc[S_EVENTS]), state.have, state.done_order)
