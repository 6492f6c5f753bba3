"""What the best possible is, with proofs: exact optima and certified lower bounds.

Between the network model (:mod:`topocoll.topology`) and the producers of schedules
(:mod:`topocoll.synth`): facts about a collective on a fabric that hold for *every*
schedule. Everything that reports "how far from optimal" asks :func:`lower_bound`.

- :mod:`~.bounds`: :func:`lower_bound`, the one entry every consumer uses: the best of
  the latency (:mod:`~.latency`), injection (:mod:`~.injection`) and cut
  (:mod:`~.cuts`) bounds valid under the alpha-beta model (their shared view of the
  collective's sets: :mod:`~.bound_sets`).
- :mod:`~.maxflow`: exact cut optima by max-flow (allgather / reduce-scatter ratio,
  broadcast rate, separating cuts).
- :mod:`~.packing`: spanning-tree packings that attain the allgather optimum.
- :mod:`~.treelp`: the overlapped tree allreduce LP (column generation).
- :mod:`~.timedlp`, :mod:`~.timedprice`: the step-indexed (timed) tree LP and its pricing.
- :mod:`~.timedbound`, :mod:`~.stockbound`, :mod:`~.groupbound`, :mod:`~.barrier`:
  certified floors for schedules whose steps are barriers.
- :mod:`~.highs`: a HiGHS instance that prints nothing, single-threaded.
"""

from .barrier import BARRIER_KINDS, BarrierFloor, barrier_floor
from .bounds import Bound, lower_bound
from .cuts import (
    CUT_METHODS,
    EXACT_KINDS,
    CutBound,
    candidate_cuts,
    concurrent_cut_bound,
    cut_bound,
)
from .injection import injection_bound
from .latency import latency_bound
from .maxflow import CutOptimum, allgather_optimum, broadcast_optimum, separating_cut

__all__ = ["Bound", "CutBound", "lower_bound", "latency_bound", "injection_bound",
           "cut_bound", "concurrent_cut_bound", "candidate_cuts", "CUT_METHODS", "CutOptimum",
           "allgather_optimum",
           "broadcast_optimum", "separating_cut", "BarrierFloor", "barrier_floor", "EXACT_KINDS",
           "BARRIER_KINDS"]
