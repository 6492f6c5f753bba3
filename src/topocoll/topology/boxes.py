"""The real boxes behind the DGX-style presets: what each GPU's NVLink and NIC are.

A :class:`Box` is the data sheet of one scale-up domain (a DGX/HGX chassis, an NVL rack,
an MI300X platform): GPUs per domain, the scale-up links and line rate per GPU (through
switches, or a full mesh), whether the switches reduce in the network (NVLink SHARP), and
the NIC per GPU. The topology
presets (:func:`~topocoll.topology.fabrics.box_cluster`) build their links from it and
record its name in ``meta["box"]``, so models that need more than link rates (the NCCL
model in :mod:`topocoll.cost.nccl`) can look it up with :func:`box_of`.

Every figure is the vendor's published one (sources in :attr:`Box.source`); what NCCL
reaches on them (its effective per-link rate, protocol overheads) is the NCCL model's
business, not the box's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TopologyError

__all__ = ["Box", "BOXES", "find_box", "box_of", "NIC_TRANSPORTS", "TPU_SLICES"]

#: NIC link protocols a box may run: InfiniBand or RDMA over Converged Ethernet.
NIC_TRANSPORTS = ("ib", "roce")


@dataclass(frozen=True)
class Box:
    """One scale-up domain as its vendor describes it.

    Attributes
    ----------
    name : str
        The preset's spec name (``dgx-h100``).
    gpu : str
        The GPU (a :mod:`topocoll.workload.devices` preset name where one exists).
    arch : str
        ``ampere``, ``hopper`` or ``blackwell`` (selects NCCL's per-generation constants),
        or ``cdna3`` (AMD; RCCL, which the NCCL model does not cover).
    gpus : int
        GPUs in one NVLink domain.
    nvlink_links : int
        NVLink links per GPU.
    nvlink_link_Bps : float
        Line rate of one link, bytes/s per direction.
    nvls : bool
        NVSwitches with NVLink SHARP (in-switch reduction and multicast).
    nic_Bps : float
        Line rate of the NIC of each GPU, bytes/s per direction.
    nic_transport : str
        ``ib`` or ``roce`` as shipped.
    source : str
        Where the figures come from.
    scale_up : str
        ``switch``: every GPU's links go to the box's switches (NVSwitch); ``mesh``: each
        GPU has one link to every other GPU of the box (``nvlink_links = gpus - 1``; AMD
        Infinity Fabric).
    """

    name: str
    gpu: str
    arch: str
    gpus: int
    nvlink_links: int
    nvlink_link_Bps: float
    nvls: bool
    nic_Bps: float
    nic_transport: str
    source: str
    scale_up: str = "switch"

    @property
    def nvlink_Bps(self) -> float:
        """Each GPU's NVLink line rate, bytes/s per direction (links x link rate)."""
        return self.nvlink_links * self.nvlink_link_Bps


#: The boxes with presets, by name.
BOXES: dict[str, Box] = {b.name: b for b in (
    Box("dgx-a100", "a100-80g", "ampere", 8, 12, 25e9, False, 25e9, "ib",
        "NVIDIA DGX A100 data sheet and system architecture white paper: 8x A100 SXM4, "
        "12 third-generation NVLinks per GPU (600 GB/s both directions), six NVSwitches, "
        "8x ConnectX-6 HDR 200 Gb/s InfiniBand for compute"),
    Box("dgx-h100", "h100", "hopper", 8, 18, 25e9, True, 50e9, "ib",
        "NVIDIA DGX H100 data sheet: 8x H100 SXM5, 18 fourth-generation NVLinks per GPU "
        "(900 GB/s both directions), four third-generation NVSwitches with NVLink SHARP, "
        "8x ConnectX-7 400 Gb/s (NDR InfiniBand) for compute"),
    Box("hgx-h200", "h200", "hopper", 8, 18, 25e9, True, 50e9, "ib",
        "NVIDIA H200 data sheet (HGX H200: NVLink 900 GB/s per GPU through NVSwitch, as "
        "HGX H100) with one 400 Gb/s ConnectX-7 per GPU, as NVIDIA's reference designs"),
    Box("dgx-b200", "b200", "blackwell", 8, 18, 50e9, True, 50e9, "ib",
        "NVIDIA DGX B200 data sheet: 8x B200, fifth-generation NVLink 1.8 TB/s per GPU "
        "(18 links), two NVSwitch chips with NVLink SHARP, 8x ConnectX-7 400 Gb/s"),
    Box("gb200-nvl72", "b200", "blackwell", 72, 18, 50e9, True, 50e9, "ib",
        "NVIDIA GB200 NVL72 product page: 72 Blackwell GPUs in one NVLink domain, 1.8 TB/s "
        "per GPU through nine NVLink switch trays; one 400 Gb/s ConnectX-7 per GPU for "
        "the scale-out fabric"),
    Box("mi300x", "mi300x", "cdna3", 8, 7, 64e9, False, 50e9, "roce",
        "AMD Instinct MI300X platform data sheet: 8 GPUs fully connected by seven Infinity "
        "Fabric links each (128 GB/s both directions per link, 896 GB/s per GPU), one "
        "400 Gb/s NIC per GPU", scale_up="mesh"),
)}


#: TPU slices (3-D tori of chips): per-link ICI rate, bytes/s per direction, and source.
TPU_SLICES: dict[str, tuple[float, str]] = {
    "tpu-v4": (50e9, "Google Cloud TPU v4 documentation (275 TFLOP/s bf16, 32 GiB HBM2 at "
                     "1,200 GB/s, 3-D torus slices of 4x4x4 cubes joined by optical circuit "
                     "switches, 24 TB/s bisection per 4,096-chip pod) and Jouppi et al., "
                     "ISCA 2023: six ICI links per chip at 400 Gb/s (50 GB/s) per direction; "
                     "16x16x16 has 512 links across its bisection, 25.6 TB/s one way"),
    "tpu-v5p": (100e9, "Google Cloud TPU v5p documentation: 1,200 GB/s bidirectional ICI "
                       "bandwidth per chip over six links of a 3-D torus (100 GB/s per "
                       "link and direction); 459 TFLOP/s bf16, 95 GiB HBM at 2,765 GB/s"),
}


def find_box(name: str) -> Box:
    """The box called ``name``.

    Raises
    ------
    TopologyError
        Naming the known boxes.

    Examples
    --------
    >>> find_box("dgx-h100").nvlink_Bps / 1e9
    450.0
    """
    try:
        return BOXES[name]
    except KeyError:
        raise TopologyError(f"unknown box {name!r}; known: {', '.join(BOXES)}",
                            item=f"box {name!r}") from None


def box_of(topology) -> Box | None:
    """The box a topology was built from (its ``meta["box"]``), or None."""
    name = (topology.meta or {}).get("box")
    return BOXES.get(name) if isinstance(name, str) else None
