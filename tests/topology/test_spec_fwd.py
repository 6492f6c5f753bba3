"""The ``fwd`` spec option: per-node forwarding latency (per-hop processing on tori)."""

import numpy as np
import pytest

from topocoll.errors import TopologyError
from topocoll.topology.spec import parse_spec


def test_fwd_sets_every_node_and_is_charged_per_intermediate_hop():
    t = parse_spec("torus:8x8,bw=400Gbps,lat=100ns,fwd=300ns")
    assert np.all(t.forwarding_latency == 300e-9)
    r = t.routes(np.array([[0, 1], [0, 3], [0, 27]]))
    # h hops: h * 100 ns of links + (h - 1) * 300 ns of forwarding
    assert np.allclose(r.latency, [100e-9, 3 * 100e-9 + 2 * 300e-9, 6 * 100e-9 + 5 * 300e-9])
    assert np.all(parse_spec("torus:8x8").forwarding_latency == 0)


def test_fwd_errors_name_the_option():
    with pytest.raises(TopologyError, match="fwd"):
        parse_spec("ring:4,fwd=fast")
    with pytest.raises(TopologyError, match="fwd"):
        parse_spec("dgx-a100:2,fwd=1us")
