"""Runtimes that execute schedules (torch.distributed). torch is imported lazily."""

from .torch_dist import (
    DEFAULT_TIMEOUT,
    CommunicationError,
    DuplexGroups,
    all_gather_into_tensor,
    all_reduce,
    all_to_all_single,
    broadcast,
    chunk_bounds,
    ddp_comm_hook,
    duplex_groups,
    reduce,
    reduce_scatter_tensor,
    run_schedule,
)

__all__ = ["DEFAULT_TIMEOUT", "CommunicationError", "all_gather_into_tensor", "all_reduce",
           "all_to_all_single", "broadcast", "chunk_bounds", "ddp_comm_hook", "reduce",
           "reduce_scatter_tensor", "run_schedule", "DuplexGroups", "duplex_groups"]
