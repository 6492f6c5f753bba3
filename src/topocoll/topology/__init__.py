"""Layer 1: what the network is. Topology model, generators, routing and I/O."""

from .boxes import BOXES, Box, box_of, find_box
from .core import DIM_KINDS, ROUTINGS, Dim, Link, Topology
from .explicit import from_edges, from_matrix
from .fabrics import box_cluster, dgx, dgx_a100, dgx_h100, fat_tree, leaf_spine
from .generators import (
                         DEFAULT_BANDWIDTH,
                         DEFAULT_LATENCY,
                         circulant,
                         fully_connected,
                         hammingmesh,
                         hypercube,
                         line,
                         mesh,
                         random_regular,
                         ring,
                         star,
                         torus,
)
from .hierarchical import multi_dim
from .io import (
                         load_topology_file,
                         read_astra_network,
                         save_topology,
                         topology_from_dict,
                         topology_to_dict,
                         write_astra_network,
)
from .scaleout import SCALEOUTS, ClosPlan, clos_plan, cluster, cluster_plans, leaf_ports
from .spec import GENERATOR_NAMES, load_topology, parse_spec
from .totient import totient, totient_jumps

__all__ = ["Link", "Dim", "Topology", "ROUTINGS", "DIM_KINDS",
           "ring", "line", "fully_connected", "star", "torus", "mesh", "hypercube",
           "hammingmesh", "circulant", "random_regular", "fat_tree", "leaf_spine", "dgx",
           "dgx_a100",
           "dgx_h100", "box_cluster", "Box", "BOXES", "find_box", "box_of", "from_matrix",
           "from_edges", "multi_dim",
           "DEFAULT_BANDWIDTH", "DEFAULT_LATENCY",
           "parse_spec", "load_topology", "GENERATOR_NAMES",
           "topology_to_dict", "topology_from_dict", "save_topology", "load_topology_file",
           "read_astra_network", "write_astra_network", "totient", "totient_jumps",
           "cluster", "cluster_plans", "clos_plan", "ClosPlan", "leaf_ports", "SCALEOUTS"]
