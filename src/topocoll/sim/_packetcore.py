"""Compiled event loop of the packet-level simulator (see :mod:`topocoll.sim.packet`).

numba ``njit`` code over flat arrays; the model is described in
:mod:`topocoll.sim.packet` and ``docs/design-sim.md``. Heap keys are ``(id << 3) | kind``.
"""

from __future__ import annotations

import numba
import numpy as np

from .depends import finish_transfer
from .events import heap_pop, heap_push

__all__ = ["packet_simulate"]

INJECT, TXDONE, ARRIVE, ACK, RTO, DONE, ZERO, DELACK = 0, 1, 2, 3, 4, 5, 6, 7
SH = 3
# packet pool columns
PF, PS, PN, PB, PE, PX, PK, PC, PA = 0, 1, 2, 3, 4, 5, 6, 7, 8
# PK: packet kind, PC: class, PA: cumulative acknowledgement carried by an ack
NCOL = 9
# packet states at the sender
UNSENT, INFLIGHT, ACKED, LOST = 0, 1, 2, 3


@numba.njit(cache=True, inline="always")
def _u01(a, b, seed):
    """splitmix64 hash of (a, b, seed) mapped to [0, 1)."""
    x = np.uint64(a) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(b) * np.uint64(0xBF58476D1CE4E5B9)
    x ^= np.uint64(seed) + np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return float(x >> np.uint64(11)) / 9007199254740992.0


@numba.njit(cache=True)
def _next_link(f, v, ptr, link, frac, lsrc, spray, seed):
    """Out-link of node ``v`` for flow ``f``: the route's links leaving ``v``, chosen in
    proportion to their fraction, by a per-(flow, node) hash (ECMP) or per packet."""
    total, n, only = 0.0, 0, -1
    for e in range(ptr[f], ptr[f + 1]):
        if lsrc[link[e]] == v:
            total += frac[e]
            n += 1
            only = link[e]
    if n <= 1:
        return only
    u = (np.random.random() if spray else _u01(f, v, seed)) * total
    acc = 0.0
    for e in range(ptr[f], ptr[f + 1]):
        if lsrc[link[e]] == v:
            acc += frac[e]
            if u < acc:
                return link[e]
    return only


@numba.njit(cache=True)
def packet_simulate(ptr, link, frac, bptr, blink, bfrac, ack_bytes, acls, nbytes, route_lat, cls,
                    fsrc, fdst, arrival, T,
                    reduce, reduce_bw, alpha, gsrc, gdst, gnode, count, nfirst, nend, rptr,
                    rel, lsrc, ldst, cap, llat, fwd, buf_cap, drop_b, ecn_b, mtu, header,
                    cwnd0, max_cwnd, rto, g, spray, seed, bin_w, num_classes, dupthresh,
                    handshake, ss_gain, del_ack, del_ack_timeout, rto_gran):
    np.random.seed(seed)
    F, L, N, C = len(nbytes), len(cap), len(fwd), num_classes
    npk = np.zeros(F, np.int64)
    off = np.zeros(F + 1, np.int64)
    for f in range(F):
        npk[f] = (int(nbytes[f]) + mtu - 1) // mtu if nbytes[f] > 0 else 0
        off[f + 1] = off[f] + npk[f]
    st = np.zeros(off[F], np.int8)
    sent_t = np.zeros(off[F])
    rcv = np.zeros(off[F], np.bool_)
    start = np.full(F, np.nan)
    finish = np.full(F, np.nan)
    for f in range(T, F):
        start[f] = arrival[f]
    cwnd = cwnd0.copy()
    ssthresh = np.full(F, np.inf)
    inflight = np.zeros(F, np.int64)
    next_new = np.zeros(F, np.int64)
    cum = np.zeros(F, np.int64)
    nacked = np.zeros(F, np.int64)
    nrcv = np.zeros(F, np.int64)
    pend = np.zeros(F, np.int64)
    dalpha = np.ones(F)
    wnd_end = np.zeros(F, np.int64)
    acked_w = np.zeros(F, np.int64)
    marked_w = np.zeros(F, np.int64)
    cut_end = np.zeros(F, np.int64)
    armed = np.zeros(F, np.bool_)
    # receiver: first missing packet, in-order packets not yet acknowledged, their timer
    rcum = np.zeros(F, np.int64)
    rhigh = np.zeros(F, np.int64)
    dpend = np.zeros(F, np.int64)
    dtime = np.full(F, -1.0)
    # sender: RFC 6298 round-trip estimate and timeout (fixed at rto if rto_gran < 0)
    srtt = np.zeros(F)
    rttvar = np.zeros(F)
    rto_f = np.full(F, rto)
    cnt = count.copy()
    nxt = nfirst.copy()
    nofifo = np.zeros(0, np.int64)  # every release goes through the heap here
    cfree = np.zeros(N)
    # heap and packet pool (grown on demand)
    hcap = 4 * F + 1024
    ht, hs, hk = np.empty(hcap), np.empty(hcap, np.int64), np.empty(hcap, np.int64)
    hsize, seq = 0, 0
    pcap = 4096
    P = np.zeros((pcap, NCOL), np.int64)
    free = np.arange(pcap - 1, -1, -1).astype(np.int64)
    nfree = pcap
    qh = np.full(L * C, -1, np.int64)
    qt = np.full(L * C, -1, np.int64)
    qb = np.zeros(L * C, np.int64)
    pb = np.zeros(L, np.int64)
    nodebuf = np.zeros(N, np.int64)
    busy = np.full(L, -1, np.int64)
    drops = np.zeros((L, C), np.int64)
    marks = np.zeros(L, np.int64)
    qmax = np.zeros(L, np.int64)
    nbins = 64
    txb = np.zeros((nbins, L))
    qbin = np.zeros((nbins, L))
    stats = np.zeros(6, np.int64)  # events, packets sent, retransmits, drops, marks, rtos
    for f in range(T, F):
        hsize = heap_push(ht, hs, hk, hsize, arrival[f], seq, (f << SH) | INJECT)
        seq += 1
    for u in range(N):
        if nfirst[u] < nend[u]:
            for j in range(rptr[nfirst[u]], rptr[nfirst[u] + 1]):
                t = rel[j]
                start[t] = 0.0
                hsize = heap_push(ht, hs, hk, hsize, alpha, seq, (t << SH) | INJECT)
                seq += 1
    now, tlast = 0.0, 0.0
    while hsize > 0:
        # outstanding events <= 3 per flow (start or timeout, done, delayed-ack timer) + 1
        # per link + 1 per live packet; one event adds at most F + L of them (releases,
        # and TXDONE on idle links)
        if len(ht) < hsize + 3 * F + 2 * L + len(P) + 64:
            hn = 2 * (hsize + 3 * F + 2 * L + len(P) + 64)
            ht2, hs2, hk2 = np.empty(hn), np.empty(hn, np.int64), np.empty(hn, np.int64)
            ht2[:hsize], hs2[:hsize], hk2[:hsize] = ht[:hsize], hs[:hsize], hk[:hsize]
            ht, hs, hk = ht2, hs2, hk2
        now, key, hsize = heap_pop(ht, hs, hk, hsize)
        stats[0] += 1
        i, kind = key >> SH, key & 7
        if kind != RTO:
            tlast = now
        b = int(now / bin_w)
        if b >= nbins:
            nb2 = max(2 * nbins, b + 1)
            t2, q2 = np.zeros((nb2, L)), np.zeros((nb2, L))
            t2[:nbins], q2[:nbins] = txb, qbin
            txb, qbin, nbins = t2, q2, nb2
        delivered = -1
        if kind == TXDONE:
            l = i
            p = busy[l]
            f = P[p, PF]
            c = P[p, PC]
            qb[l * C + c] -= P[p, PB]
            pb[l] -= P[p, PB]
            nodebuf[lsrc[l]] -= P[p, PB]
            txb[b, l] += P[p, PB]
            w = ldst[l]
            P[p, PN] = w
            end = fsrc[f] if P[p, PK] == 1 or P[p, PK] == 3 else fdst[f]
            d = llat[l] + (fwd[w] if w != end else 0.0)
            hsize = heap_push(ht, hs, hk, hsize, now + d, seq, (p << SH) | ARRIVE)
            seq += 1
            busy[l] = -1
            for c2 in range(C):
                if qh[l * C + c2] >= 0:
                    p2 = qh[l * C + c2]
                    qh[l * C + c2] = P[p2, PX]
                    if qh[l * C + c2] < 0:
                        qt[l * C + c2] = -1
                    busy[l] = p2
                    hsize = heap_push(ht, hs, hk, hsize, now + P[p2, PB] / cap[l], seq,
                                      (l << SH) | TXDONE)
                    seq += 1
                    break
            continue
        if kind == ARRIVE:
            # packet kinds: 0 data, 1 ack, 2 connection request, 3 its answer
            p = i
            f, w, pk = P[p, PF], P[p, PN], P[p, PK]
            back = pk == 1 or pk == 3
            if w == (fsrc[f] if back else fdst[f]):
                if pk == 1:
                    hsize = heap_push(ht, hs, hk, hsize, now, seq, (p << SH) | ACK)
                    seq += 1
                    continue
                if pk == 3:
                    free[nfree] = p
                    nfree += 1
                    if rto_gran >= 0.0:  # the connection set-up gives the first sample
                        _rtt_sample(f, now - start[f] - alpha, srtt, rttvar, rto_f, rto,
                                    rto_gran)
                    hsize, seq, nfree, P, free = _try_send(
                        f, now, ptr, link, frac, lsrc, spray, seed, fsrc, cls, npk, off, st,
                        sent_t, cwnd, inflight, next_new, cum, pend, armed, rto_f, mtu, header,
                        nbytes, P, free, nfree, qh, qt, qb, pb, nodebuf, busy, cap, qmax, qbin,
                        b, ht, hs, hk, hsize, seq, stats, C)
                    continue
                if pk == 0:
                    s = P[p, PS]
                    k = off[f] + s
                    gap = s != rcum[f] or rhigh[f] > rcum[f]
                    if not rcv[k]:
                        rcv[k] = True
                        nrcv[f] += 1
                        if nrcv[f] == npk[f]:
                            delivered = f
                    rhigh[f] = max(rhigh[f], s + 1)
                    while rcum[f] < npk[f] and rcv[off[f] + rcum[f]]:
                        rcum[f] += 1
                    # delayed acknowledgement (RFC 1122/5681): in-order data is acked every
                    # del_ack packets or at the timer; out-of-order data, data that fills a
                    # gap and the last packet are acked at once
                    dpend[f] += 1
                    if not gap and dpend[f] < del_ack and delivered != f \
                            and rcum[f] < npk[f]:
                        free[nfree] = p
                        nfree += 1
                        if dtime[f] < 0.0:
                            dtime[f] = now + del_ack_timeout
                            hsize = heap_push(ht, hs, hk, hsize, dtime[f], seq,
                                              (f << SH) | DELACK)
                            seq += 1
                        continue
                    dpend[f] = 0
                    dtime[f] = -1.0
                    P[p, PA] = rcum[f]
                # data turns into its selective acknowledgement (echoing its ECN mark and
                # carrying the cumulative ack), a request into its answer; both go back on
                # the reverse route, class acls[f]
                P[p, PK] = 1 if pk == 0 else 3
                P[p, PB] = ack_bytes
                P[p, PC] = acls[f]
                l = _next_link(f, w, bptr, blink, bfrac, lsrc, spray, seed)
                hsize, seq = _enqueue(p, l, l * C + acls[f], ack_bytes, now, P, qh, qt, qb, pb,
                                      nodebuf, lsrc, busy, cap, qmax, qbin, b, ht, hs, hk,
                                      hsize, seq)
            else:
                # forward: choose the out-link, admission (shared buffer, per-class drop
                # threshold; connection set-up packets are never dropped), ECN marking of
                # data above the class threshold, enqueue
                if back:
                    l = _next_link(f, w, bptr, blink, bfrac, lsrc, spray, seed)
                else:
                    l = _next_link(f, w, ptr, link, frac, lsrc, spray, seed)
                c = P[p, PC]
                q = l * C + c
                sz = P[p, PB]
                if pk < 2 and (nodebuf[w] + sz > buf_cap[w] or qb[q] + sz > drop_b[c]):
                    drops[l, c] += 1
                    stats[3] += 1
                    free[nfree] = p
                    nfree += 1
                else:
                    if qb[q] > ecn_b[c] and pk == 0:
                        P[p, PE] = 1
                        marks[l] += 1
                        stats[4] += 1
                    hsize, seq = _enqueue(p, l, q, sz, now, P, qh, qt, qb, pb, nodebuf, lsrc,
                                          busy, cap, qmax, qbin, b, ht, hs, hk, hsize, seq)
        elif kind == ACK:
            p = i
            f, s, ecn, ca = P[p, PF], P[p, PS], P[p, PE], P[p, PA]
            free[nfree] = p
            nfree += 1
            k = off[f] + s
            newly = 0
            for s2 in range(cum[f], ca):  # cumulative part
                newly += _mark_acked(off[f] + s2, f, st, inflight, pend)
            newly += _mark_acked(k, f, st, inflight, pend)  # selective part
            if newly > 0:
                nacked[f] += newly
                acked_w[f] += newly
                if ecn:
                    marked_w[f] += newly
                if rto_gran >= 0.0:
                    _rtt_sample(f, now - sent_t[k], srtt, rttvar, rto_f, rto, rto_gran)
                while cum[f] < npk[f] and st[off[f] + cum[f]] == ACKED:
                    cum[f] += 1
                # selective-ack loss detection: dupthresh later packets acked
                lost = False
                for s2 in range(cum[f], s - dupthresh + 1):
                    k2 = off[f] + s2
                    if st[k2] == INFLIGHT and sent_t[k2] <= sent_t[k]:
                        st[k2] = LOST
                        inflight[f] -= 1
                        pend[f] += 1
                        lost = True
                if (ecn or lost) and s >= cut_end[f]:  # DCTCP cut, once per window
                    factor = 0.5 if lost else 1.0 - dalpha[f] / 2.0
                    cwnd[f] = max(1.0, cwnd[f] * factor)
                    ssthresh[f] = cwnd[f]
                    cut_end[f] = next_new[f]
                elif not ecn:  # once per acknowledgement, however many packets it acks
                    cwnd[f] += ss_gain if cwnd[f] < ssthresh[f] else 1.0 / cwnd[f]
                    cwnd[f] = min(cwnd[f], max_cwnd[f])
                if cum[f] >= wnd_end[f]:
                    frac_m = marked_w[f] / max(1, acked_w[f])
                    dalpha[f] = (1.0 - g) * dalpha[f] + g * frac_m
                    acked_w[f], marked_w[f] = 0, 0
                    wnd_end[f] = next_new[f]
            if nacked[f] < npk[f]:
                hsize, seq, nfree, P, free = _try_send(
                    f, now, ptr, link, frac, lsrc, spray, seed, fsrc, cls, npk, off, st,
                    sent_t, cwnd, inflight, next_new, cum, pend, armed, rto_f, mtu, header,
                    nbytes, P, free, nfree, qh, qt, qb, pb, nodebuf, busy, cap, qmax, qbin, b,
                    ht, hs, hk, hsize, seq, stats, C)
        elif kind == RTO:
            f = i
            armed[f] = False
            if nacked[f] < npk[f]:
                oldest = np.inf
                timed = 0
                for s2 in range(cum[f], next_new[f]):
                    k2 = off[f] + s2
                    if st[k2] == INFLIGHT:
                        if sent_t[k2] <= now - rto_f[f] * (1 - 1e-9):
                            st[k2] = LOST
                            inflight[f] -= 1
                            pend[f] += 1
                            stats[5] += 1
                            timed += 1
                        else:
                            oldest = min(oldest, sent_t[k2])
                if timed > 0:
                    ssthresh[f] = max(2.0, cwnd[f] / 2.0)
                    cwnd[f] = 1.0
                hsize, seq, nfree, P, free = _try_send(
                    f, now, ptr, link, frac, lsrc, spray, seed, fsrc, cls, npk, off, st,
                    sent_t, cwnd, inflight, next_new, cum, pend, armed, rto_f, mtu, header,
                    nbytes, P, free, nfree, qh, qt, qb, pb, nodebuf, busy, cap, qmax, qbin, b,
                    ht, hs, hk, hsize, seq, stats, C)
                if not armed[f] and inflight[f] > 0:
                    armed[f] = True
                    at = oldest + rto_f[f] if oldest < np.inf else now + rto_f[f]
                    hsize = heap_push(ht, hs, hk, hsize, at, seq, (f << SH) | RTO)
                    seq += 1
        elif kind == INJECT:
            f = i
            if npk[f] == 0 or ptr[f] == ptr[f + 1]:
                hsize = heap_push(ht, hs, hk, hsize, now + route_lat[f], seq, (f << SH) | ZERO)
                seq += 1
            elif handshake:
                p, P, free, nfree = _alloc(P, free, nfree)
                P[p, PF], P[p, PS], P[p, PN], P[p, PB], P[p, PE] = f, 0, fsrc[f], ack_bytes, 0
                P[p, PK], P[p, PC] = 2, acls[f]
                l = _next_link(f, fsrc[f], ptr, link, frac, lsrc, spray, seed)
                hsize, seq = _enqueue(p, l, l * C + acls[f], ack_bytes, now, P, qh, qt, qb, pb,
                                      nodebuf, lsrc, busy, cap, qmax, qbin, b, ht, hs, hk,
                                      hsize, seq)
            else:
                hsize, seq, nfree, P, free = _try_send(
                    f, now, ptr, link, frac, lsrc, spray, seed, fsrc, cls, npk, off, st,
                    sent_t, cwnd, inflight, next_new, cum, pend, armed, rto_f, mtu, header,
                    nbytes, P, free, nfree, qh, qt, qb, pb, nodebuf, busy, cap, qmax, qbin, b,
                    ht, hs, hk, hsize, seq, stats, C)
        elif kind == ZERO:
            delivered = i
        elif kind == DELACK:
            f = i
            if dpend[f] > 0 and dtime[f] == now:
                # the delayed-ack timer expired: acknowledge the in-order data received
                p, P, free, nfree = _alloc(P, free, nfree)
                P[p, PF], P[p, PS], P[p, PN], P[p, PB], P[p, PE] = f, rcum[f] - 1, fdst[f], \
                    ack_bytes, 0
                P[p, PK], P[p, PC], P[p, PA] = 1, acls[f], rcum[f]
                dpend[f] = 0
                dtime[f] = -1.0
                l = _next_link(f, fdst[f], bptr, blink, bfrac, lsrc, spray, seed)
                hsize, seq = _enqueue(p, l, l * C + acls[f], ack_bytes, now, P, qh, qt, qb, pb,
                                      nodebuf, lsrc, busy, cap, qmax, qbin, b, ht, hs, hk,
                                      hsize, seq)
        elif kind == DONE:
            hsize, seq, _ = finish_transfer(i, now, alpha, gsrc, gdst, gnode, cnt, nxt, nend,
                                            rptr, rel, start, finish, ht, hs, hk, hsize, seq,
                                            SH, INJECT, nofifo, 0)
        if delivered >= 0:
            f = delivered
            if f >= T:
                finish[f] = now
            elif reduce[f] and reduce_bw > 0.0:
                c0 = max(now, cfree[fdst[f]])
                cfree[fdst[f]] = c0 + nbytes[f] / reduce_bw
                hsize = heap_push(ht, hs, hk, hsize, cfree[fdst[f]], seq, (f << SH) | DONE)
                seq += 1
            else:
                hsize, seq, _ = finish_transfer(f, now, alpha, gsrc, gdst, gnode, cnt, nxt,
                                                nend, rptr, rel, start, finish, ht, hs, hk,
                                                hsize, seq, SH, INJECT, nofifo, 0)
    last = int(tlast / bin_w) + 1  # timers left after the last delivery do not count
    return (start, finish, txb[:last], qbin[:last], drops, marks, qmax, stats)


@numba.njit(cache=True)
def _enqueue(p, l, q, sz, now, P, qh, qt, qb, pb, nodebuf, lsrc, busy, cap, qmax, qbin, b,
             ht, hs, hk, hsize, seq):
    P[p, PX] = -1
    qb[q] += sz
    pb[l] += sz
    nodebuf[lsrc[l]] += sz
    if pb[l] > qmax[l]:
        qmax[l] = pb[l]
    if pb[l] > qbin[b, l]:
        qbin[b, l] = pb[l]
    if busy[l] < 0:
        busy[l] = p
        hsize = heap_push(ht, hs, hk, hsize, now + sz / cap[l], seq, (l << SH) | TXDONE)
        seq += 1
    elif qt[q] < 0:
        qh[q] = p
        qt[q] = p
    else:
        P[qt[q], PX] = p
        qt[q] = p
    return hsize, seq


@numba.njit(cache=True)
def _alloc(P, free, nfree):
    """Take a packet slot from the free list, doubling the pool when it is empty."""
    if nfree == 0:
        n = len(P)
        P2 = np.zeros((2 * n, NCOL), np.int64)
        P2[:n] = P
        P = P2
        free2 = np.empty(2 * n, np.int64)
        free2[:n] = np.arange(2 * n - 1, n - 1, -1)
        free = free2
        nfree = n
    nfree -= 1
    return free[nfree], P, free, nfree


@numba.njit(cache=True)
def _try_send(f, now, ptr, link, frac, lsrc, spray, seed, fsrc, cls, npk, off, st, sent_t,
              cwnd, inflight, next_new, cum, pend, armed, rto_f, mtu, header, nbytes, P, free,
              nfree, qh, qt, qb, pb, nodebuf, busy, cap, qmax, qbin, b, ht, hs, hk, hsize, seq,
              stats, C):
    """Send while the window allows: lost packets first (lowest sequence), then new."""
    while inflight[f] < max(1, int(cwnd[f])):
        s = -1
        if pend[f] > 0:
            for s2 in range(cum[f], next_new[f]):
                if st[off[f] + s2] == LOST:
                    s = s2
                    pend[f] -= 1
                    stats[2] += 1
                    break
        if s < 0 and next_new[f] < npk[f]:
            s = next_new[f]
            next_new[f] += 1
        if s < 0:
            break
        k = off[f] + s
        st[k] = INFLIGHT
        sent_t[k] = now
        inflight[f] += 1
        p, P, free, nfree = _alloc(P, free, nfree)
        payload = min(mtu, int(nbytes[f]) - s * mtu)
        P[p, PF], P[p, PS], P[p, PN], P[p, PB], P[p, PE] = f, s, fsrc[f], payload + header, 0
        P[p, PK], P[p, PA] = 0, 0
        P[p, PC] = cls[f]
        stats[1] += 1
        l = _next_link(f, fsrc[f], ptr, link, frac, lsrc, spray, seed)
        hsize, seq = _enqueue(p, l, l * C + cls[f], P[p, PB], now, P, qh, qt,
                              qb, pb, nodebuf, lsrc, busy, cap, qmax, qbin, b, ht, hs, hk,
                              hsize, seq)
    if not armed[f] and inflight[f] > 0:
        armed[f] = True
        hsize = heap_push(ht, hs, hk, hsize, now + rto_f[f], seq, (f << SH) | RTO)
        seq += 1
    return hsize, seq, nfree, P, free


@numba.njit(cache=True, inline="always")
def _mark_acked(k, f, st, inflight, pend):
    """Mark packet ``k`` of flow ``f`` acknowledged; 1 if it was not before, else 0."""
    if st[k] == ACKED:
        return 0
    if st[k] == INFLIGHT:
        inflight[f] -= 1
    elif st[k] == LOST:
        pend[f] -= 1
    st[k] = ACKED
    return 1


@numba.njit(cache=True, inline="always")
def _rtt_sample(f, r, srtt, rttvar, rto_f, rto_min, gran):
    """RFC 6298 estimator: ``srtt``, ``rttvar`` and ``RTO = max(rto_min, srtt +
    max(G, 4 rttvar))`` after a round-trip sample ``r``."""
    if srtt[f] == 0.0:
        srtt[f] = r
        rttvar[f] = r / 2.0
    else:
        rttvar[f] = 0.75 * rttvar[f] + 0.25 * abs(srtt[f] - r)
        srtt[f] = 0.875 * srtt[f] + 0.125 * r
    rto_f[f] = max(rto_min, srtt[f] + max(gran, 4.0 * rttvar[f]))
