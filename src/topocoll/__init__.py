"""topocoll: the network side of distributed deep-learning training.

Describe a fabric (:mod:`topocoll.topology`), state a collective
(:mod:`topocoll.collective`), synthesize schedules (:mod:`topocoll.synth`), verify them
(:mod:`topocoll.verification`) and cost them (:mod:`topocoll.cost`).
"""

__version__ = "0.1.0"
