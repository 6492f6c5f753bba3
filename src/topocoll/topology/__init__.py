"""Layer 1: what the network is. Topology model, generators, routing and I/O."""

from .core import DIM_KINDS, ROUTINGS, Dim, Link, Topology
from .generators import fully_connected, hypercube, line, mesh, ring, star, torus

__all__ = ["Link", "Dim", "Topology", "ROUTINGS", "DIM_KINDS",
           "ring", "line", "fully_connected", "star", "torus", "mesh", "hypercube"]
