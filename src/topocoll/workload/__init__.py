"""Training workloads: the model zoo, devices, parallelism, memory and the iteration model
(``docs/design-workload.md``)."""

from .dataparallel import simulate_dp_iteration
from .devices import DEVICE_NAMES, DEVICES, Device, find_device
from .iteration import (
    CollectiveCoster,
    IterationResult,
    Task,
    block_compute_time,
    pipeline_1f1b,
    simulate_iteration,
)
from .layered import (
    LAYERED,
    Layer,
    LayeredModel,
    bert_topoopt,
    candle_uno,
    dlrm,
    ncf,
    resnet50,
    vgg16,
)
from .memory import (
    MemoryReport,
    StageMemory,
    activation_bytes_per_layer,
    check_fits,
    memory_per_gpu,
    stage_layers,
    stage_parameters,
)
from .models import MODEL_NAMES, MODELS, Transformer, load_model, parse_model
from .parallel import ORDERS, RECOMPUTE, Parallelism, groups, parse_parallel
from .search import SearchPoint, SearchResult, candidate_parallelisms, search_parallelism
from .textio import (
    COLLECTIVE_TYPES,
    DIALECTS,
    TextLayer,
    TextWorkload,
    format_text_workload,
    model_layers,
    parse_text_workload,
)
from .trace import timeline_events, write_timeline

__all__ = ["block_compute_time", "DEVICE_NAMES", "DEVICES", "Device", "find_device",
           "CollectiveCoster", "IterationResult", "Task", "pipeline_1f1b", "simulate_iteration",
           "MemoryReport", "StageMemory", "activation_bytes_per_layer", "check_fits",
           "memory_per_gpu", "stage_layers", "stage_parameters", "MODEL_NAMES", "MODELS",
           "Transformer", "load_model", "parse_model", "ORDERS", "RECOMPUTE", "Parallelism",
           "groups", "parse_parallel", "timeline_events", "write_timeline", "SearchPoint",
           "SearchResult", "candidate_parallelisms", "search_parallelism", "COLLECTIVE_TYPES",
           "DIALECTS", "TextLayer", "TextWorkload", "format_text_workload", "model_layers",
           "parse_text_workload", "simulate_dp_iteration", "LAYERED", "Layer", "bert_topoopt",
           "candle_uno", "ncf",
           "LayeredModel", "dlrm", "resnet50", "vgg16"]
