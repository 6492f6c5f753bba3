"""DLCP's message engine and its policies, in one room (Wang et al., "DLCP", 2021;
``docs/design-dlcp.md``).

``engine`` (messages of packets over a fabric, discrete events; the compiled loop in
``_core``), ``queue_policies`` (what a switch port admits and sends first: drop-tail,
strict priority, selective dropping, ECN marking), ``transport_policies`` (each message's
window: fixed, DCTCP), ``gradient_packets`` (gradients cut into packets with a priority by
magnitude), ``bounded_loss`` (the receiver that completes a message once the loss budget
allows). Paths come from :mod:`topocoll.topology.routing`
(:func:`~topocoll.topology.routing.shortest_path_sets`). The scenario that drives it (a
parameter server under background load, the seven schemes) is
:mod:`topocoll.studies.dlcp_scenario`.
"""

from ...lazy import lazy_exports

_WHERE = {
    "Message": "engine",
    "MessageTable": "engine",
    "Background": "engine",
    "EngineResult": "engine",
    "simulate_messages": "engine",
    "HEADER_BYTES": "engine",
    "shortest_paths": "engine",
    "ENGINES": "engine",
    "DropTail": "queue_policies",
    "StrictPriority": "queue_policies",
    "SelectiveDrop": "queue_policies",
    "BandLimits": "queue_policies",
    "ECNMarking": "queue_policies",
    "PortTables": "queue_policies",
    "FixedWindow": "transport_policies",
    "DCTCP": "transport_policies",
    "GradientPacket": "gradient_packets",
    "packet_priority": "gradient_packets",
    "magnitude_buckets": "gradient_packets",
    "packetize": "gradient_packets",
    "NUM_QUEUES": "gradient_packets",
    "BoundedLossReceiver": "bounded_loss",
    "loss_allowed": "bounded_loss",
    "PHASES": "bounded_loss",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
__all__ = sorted(_WHERE)
