"""Models that are not transformers: CNNs and recommendation models, layer by layer.

A :class:`LayeredModel` is a list of :class:`Layer` (parameters, forward FLOPs and output
activation bytes per sample). ``embedding`` layers (DLRM's tables) are model-parallel: each
rank holds ``1/N`` of the tables and the pooled lookups are exchanged by an all-to-all in
the forward and the backward pass; every other layer is data-parallel, its gradients
all-reduced and overlapped with the backward pass in buckets.

Shapes:

- ``resnet50``: He et al. (CVPR 2016), 224x224 input, bottleneck stages of 3, 4, 6, 3
  blocks, batch-norm scale and shift counted as parameters: 25,557,032 parameters (the
  torchvision count), about 4.1 G multiply-accumulates per image.
- ``vgg16``: Simonyan and Zisserman (configuration D), 224x224: 138,357,544 parameters.
- ``dlrm``: the TopoOpt configuration (../shared/reference/landscape.md section 6): 64
  tables of 10 M rows of dimension 128; bottom MLP of 8 layers of 2048 on 13 dense
  features (projecting to 128); dot-product interaction; top MLP of 16 layers of 4096 and
  one output.
- ``bert-topoopt``: the BERT-like transformer of TopoOpt's evaluation: 12 encoder layers,
  hidden 1024, 16 heads, feed-forward 4096, sequence 64, WordPiece vocabulary 30522; each
  block as its Q/K/V, attention, output-projection and two feed-forward layers.
- ``candle-uno``: CANDLE Uno as configured in TopoOpt's evaluation (16 feature layers of
  16384 per feature tower, 8 dense layers of 16384, one output). The input features follow
  our reading of FlexFlow's ``candle_uno`` example (not reviewed against it): dose (1, two
  inputs, no tower), cell RNA-seq (942), and for each of two drugs descriptors (5270) and
  fingerprints (2048), each of the five non-dose inputs through its own tower.
- ``ncf``: NCF as configured in TopoOpt's evaluation: 32 embedding tables of 1 M users and
  1 M items (2 M rows) of dimension 128, an MLP of 8 layers of 4096 and one output.

Examples
--------
>>> LAYERED["resnet50"].parameters, LAYERED["vgg16"].parameters
(25557032, 138357544)
>>> round(LAYERED["resnet50"].forward_flops / 2e9, 2)   # G multiply-accumulates
4.09
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Layer", "LayeredModel", "LAYERED", "resnet50", "vgg16", "dlrm", "bert_topoopt",
           "candle_uno", "ncf"]


@dataclass(frozen=True)
class Layer:
    """One layer: ``params``, ``flops`` (forward, per sample), ``activation_bytes``
    (16-bit output per sample) and ``kind`` (``dense`` or ``embedding``)."""

    name: str
    params: int
    flops: float
    activation_bytes: float
    kind: str = "dense"


@dataclass(frozen=True)
class LayeredModel:
    """A model as a list of layers (see the module docstring)."""

    name: str
    layers: tuple[Layer, ...]

    @property
    def parameters(self) -> int:
        return sum(ly.params for ly in self.layers)

    @property
    def dense_parameters(self) -> int:
        return sum(ly.params for ly in self.layers if ly.kind == "dense")

    @property
    def forward_flops(self) -> float:
        return sum(ly.flops for ly in self.layers)


def _conv(name, cin, cout, k, hw_out, bias=False, bn=True) -> Layer:
    p = k * k * cin * cout + (cout if bias else 0) + (2 * cout if bn else 0)
    return Layer(name, p, 2.0 * k * k * cin * cout * hw_out * hw_out,
                 2.0 * cout * hw_out * hw_out)


def resnet50() -> LayeredModel:
    """ResNet-50 (see the module docstring)."""
    layers = [_conv("conv1", 3, 64, 7, 112)]
    cin, hw = 64, 56
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for b in range(blocks):
            stride = 2 if b == 0 and stage > 0 else 1
            out_hw = hw // stride
            pre = f"layer{stage + 1}.{b}"
            layers += [_conv(pre + ".conv1", cin, width, 1, hw),
                       _conv(pre + ".conv2", width, width, 3, out_hw),
                       _conv(pre + ".conv3", width, 4 * width, 1, out_hw)]
            if b == 0:
                layers.append(_conv(pre + ".downsample", cin, 4 * width, 1, out_hw))
            cin, hw = 4 * width, out_hw
    layers.append(Layer("fc", 2048 * 1000 + 1000, 2.0 * 2048 * 1000, 2.0 * 1000))
    return LayeredModel("resnet50", tuple(layers))


def vgg16() -> LayeredModel:
    """VGG-16 (see the module docstring)."""
    cfg = [(64, 224), (64, 224), (128, 112), (128, 112), (256, 56), (256, 56), (256, 56),
           (512, 28), (512, 28), (512, 28), (512, 14), (512, 14), (512, 14)]
    layers, cin = [], 3
    for i, (c, hw) in enumerate(cfg):
        layers.append(_conv(f"conv{i + 1}", cin, c, 3, hw, bias=True, bn=False))
        cin = c
    for i, (a, b) in enumerate(((25088, 4096), (4096, 4096), (4096, 1000))):
        layers.append(Layer(f"fc{i + 1}", a * b + b, 2.0 * a * b, 2.0 * b))
    return LayeredModel("vgg16", tuple(layers))


def dlrm(tables: int = 64, rows: int = 10_000_000, dim: int = 128) -> LayeredModel:
    """DLRM in the TopoOpt configuration (see the module docstring)."""
    layers = [Layer(f"table{t}", rows * dim, 0.0, 2.0 * dim, "embedding")
              for t in range(tables)]
    widths = [13] + [2048] * 7 + [dim]
    for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False)):
        layers.append(Layer(f"bottom{i}", a * b + b, 2.0 * a * b, 2.0 * b))
    f = tables + 1
    inter = f * (f - 1) // 2 + dim
    layers.append(Layer("interaction", 0, 2.0 * f * f * dim, 2.0 * inter))
    widths = [inter] + [4096] * 15 + [1]
    for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False)):
        layers.append(Layer(f"top{i}", a * b + b, 2.0 * a * b, 2.0 * b))
    return LayeredModel("dlrm", tuple(layers))


def _mlp(prefix: str, widths: list[int]) -> list[Layer]:
    return [Layer(f"{prefix}{i}", a * b + b, 2.0 * a * b, 2.0 * b)
            for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False))]


def bert_topoopt(layers: int = 12, hidden: int = 1024, heads: int = 16, seq: int = 64,
                 vocab: int = 30522) -> LayeredModel:
    """TopoOpt's BERT-like transformer (see the module docstring); per sample = one
    sequence."""
    h, s = hidden, seq
    out = [Layer("embedding", vocab * h + s * h + 2 * h, 0.0, 2.0 * s * h)]
    for i in range(layers):
        p = f"block{i}."
        out += [Layer(p + "qkv", 3 * (h * h + h), 2.0 * 3 * h * h * s, 2.0 * 3 * s * h),
                Layer(p + "attention", 0, 2.0 * 2 * s * s * h, 2.0 * s * h),
                Layer(p + "proj", h * h + h + 2 * h, 2.0 * h * h * s, 2.0 * s * h),
                Layer(p + "ffn1", h * 4 * h + 4 * h, 2.0 * 4 * h * h * s, 2.0 * 4 * s * h),
                Layer(p + "ffn2", 4 * h * h + h + 2 * h, 2.0 * 4 * h * h * s, 2.0 * s * h)]
    out.append(Layer("pooler", h * h + h, 2.0 * h * h, 2.0 * h))
    return LayeredModel("bert-topoopt", tuple(out))


def candle_uno(feature_layers: int = 16, dense_layers: int = 8, width: int = 16384) \
        -> LayeredModel:
    """CANDLE Uno in TopoOpt's configuration (see the module docstring)."""
    towers = {"cell.rnaseq": 942, "drug1.descriptors": 5270, "drug1.fingerprints": 2048,
              "drug2.descriptors": 5270, "drug2.fingerprints": 2048}
    out: list[Layer] = []
    for name, dim in towers.items():
        out += _mlp(f"{name}.", [dim] + [width] * feature_layers)
    concat = width * len(towers) + 2                 # the towers' outputs and two doses
    out += _mlp("dense", [concat] + [width] * dense_layers + [1])
    return LayeredModel("candle-uno", tuple(out))


def ncf(tables: int = 32, rows: int = 2_000_000, dim: int = 128, mlp: int = 8,
        width: int = 4096) -> LayeredModel:
    """NCF in TopoOpt's configuration (see the module docstring)."""
    out = [Layer(f"table{t}", rows * dim, 0.0, 2.0 * dim, "embedding") for t in range(tables)]
    out += _mlp("mlp", [tables * dim] + [width] * mlp + [1])
    return LayeredModel("ncf", tuple(out))


#: Non-transformer models by name.
LAYERED: dict[str, LayeredModel] = {m.name: m for m in (resnet50(), vgg16(), dlrm(),
                                                         bert_topoopt(), candle_uno(), ncf())}
