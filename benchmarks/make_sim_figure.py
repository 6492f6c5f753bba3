"""Regenerate docs/figures/sim-heatmap-*.png (flow and packet level, same scenario).

    .venv/bin/python benchmarks/make_sim_figure.py

Scenario: ring allreduce of 64 MB with a shuffled ring order on a k=4 fat-tree
(100 Gb/s, 1 us, ECMP), so that transfers cross the core and collide.
"""

from topocoll.sim import FlowSim, PacketSim
from topocoll.sim.outputs import plot_utilization
from topocoll.synth.ring import ring_allreduce
from topocoll.topology.spec import parse_spec

t = parse_spec("fattree:k=4,bw=100Gbps,lat=1us,routing=ecmp")
s = ring_allreduce(t, ranks=(0, 5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12, 1, 6, 11))
s = s.replace(name="shuffled ring allreduce")
plot_utilization(FlowSim().run(s, t, 64e6), "docs/figures/sim-heatmap-flow.png", max_links=64)
plot_utilization(PacketSim(ecmp="spray", dupthresh=64).run(s, t, 64e6),
                 "docs/figures/sim-heatmap-packet.png", max_links=64)
