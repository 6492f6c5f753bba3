"""cost.kernel: the one alpha-beta step kernel, against closed forms and AlphaBeta."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.cost import AlphaBeta
from topocoll.cost.kernel import barrier_time, model_time, step_charges, step_loads
from topocoll.synth import direct_allgather, ring_allreduce, swing_allreduce
from topocoll.synth.pipeline import pipeline_time
from topocoll.topology import fat_tree, ring, torus


def test_barrier_time_closed_form():
    busy = np.array([[1.0, 3.0], [0.0, 0.0], [2.0, 1.0]])
    assert barrier_time(busy, 0.5, 0.25) == pytest.approx(3 * 0.75 + 3.0 + 0.0 + 2.0)
    used = np.array([True, False, True])
    assert barrier_time(busy, 0.5, 0.25, used=used) == pytest.approx(2 * 0.75 + 5.0)
    assert barrier_time(np.array([2.0]), 0.0, 1.0, repeat=np.array([4])) == 12.0
    assert step_charges(busy, np.array([0.1, 0.2, 0.3]), 0.0, used=used).tolist() == \
        pytest.approx([3.1, 0.0, 2.3])
    assert barrier_time(np.zeros((0, 3))) == 0.0


@pytest.mark.parametrize("p", [4, 8])
def test_model_time_equals_alphabeta_where_every_step_is_uniform(p):
    t = ring(p, latency=1e-6)
    for s in (ring_allreduce(t), direct_allgather(ring(2))):
        tt = t if s.collective.num_ranks == p else ring(2)
        for n in (1e3, 1e9):
            assert model_time(s, tt, n, 1e-6) == pytest.approx(
                AlphaBeta(alpha=1e-6, bound=False).evaluate(s, tt, n).time, rel=1e-12)


def test_model_time_is_an_upper_bound():
    for t in (torus((4, 4), latency=1e-6), fat_tree(4, latency=1e-6)):
        s = swing_allreduce(t) if t.dims else ring_allreduce(t)
        for n in (1e3, 1e8):
            assert model_time(s, t, n, 1e-6) >= AlphaBeta(alpha=1e-6, bound=False).evaluate(
                s, t, n).time * (1 - 1e-12)


def test_step_loads_sum_to_the_link_loads():
    t = torus((4, 4))
    s = ring_allreduce(t)
    load, lat = step_loads(s, t, 1e6)
    ab = AlphaBeta(bound=False).evaluate(s, t, 1e6)
    assert np.allclose(load.sum(axis=0), ab.link_load)
    assert load.shape == (s.num_steps, len(t.links)) and (lat > 0).all()


def test_pipeline_time_through_the_kernel():
    L = np.array([[1.0, 0.0], [0.0, 1.0]])
    # P = 2 equal batches over 2 levels: 3 steps of half a level each
    assert pipeline_time(L, np.array([1, 1]), 0.1) == pytest.approx(3 * 0.1 + 1.5)
    # an empty batch's steps cost nothing
    assert pipeline_time(L, np.array([1, 0]), 0.1) == pytest.approx(2 * 0.1 + 2.0)
