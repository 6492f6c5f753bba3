"""The model zoo: transformers layer by layer, by name or by spec string.

A :class:`Transformer` knows, for one sequence of ``seq`` tokens, every quantity a
training-step model needs: parameters per layer, forward FLOPs (matrix multiplies and
attention), the activation bytes that the backward pass keeps (Korthikanti et al.,
"Reducing Activation Recomputation in Large Transformer Models", MLSys 2023, section 4),
and the tensors that tensor, sequence, pipeline and expert parallelism move.

Three block styles cover the published models:

``gpt``
    LayerNorm with bias, GeLU MLP of two matrices with biases, learned position
    embeddings, input and output embeddings tied (GPT-3, Megatron-LM's GPT, MT-NLG).
``llama``
    RMSNorm, SwiGLU MLP of three matrices, no biases, rotary positions, untied output
    head, grouped-query attention with ``kv_heads`` key/value heads (Llama-2/3, Mixtral).
``bert``
    ``gpt`` blocks with token-type embeddings, a pooler and the masked-LM head (BERT).

Mixture-of-experts layers (``experts > 1``) replace the MLP by ``experts`` copies and a
router; each token runs through ``top_k`` of them.

Examples
--------
>>> m = parse_model("llama3-405b")
>>> round(m.parameters / 1e9, 2)
405.85
>>> parse_model("transformer:hidden=1024,ffn=4096,heads=16,layers=2,seq=128,vocab=1000").name
'transformer:hidden=1024,ffn=4096,heads=16,layers=2,seq=128,vocab=1000'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, InputTypeError
from ..kv import kv_pairs

__all__ = ["Transformer", "MODELS", "MODEL_NAMES", "parse_model", "load_model"]

_STYLES = ("gpt", "llama", "bert")


@dataclass(frozen=True)
class Transformer:
    """A decoder (or encoder) transformer's shape.

    Parameters
    ----------
    name : str
    hidden, ffn, heads, layers, seq, vocab : int
        Hidden size, MLP inner size (per expert), attention heads, blocks, sequence length
        in tokens, vocabulary size.
    kv_heads : int, optional
        Key/value heads (grouped-query attention); default ``heads``.
    experts, top_k : int
        Mixture of experts: experts per MLP and experts per token (1, 1: dense).
    style : {"gpt", "llama", "bert"}
    """

    name: str
    hidden: int
    ffn: int
    heads: int
    layers: int
    seq: int
    vocab: int
    kv_heads: int | None = None
    experts: int = 1
    top_k: int = 1
    style: str = "gpt"

    def __post_init__(self) -> None:
        for f in ("hidden", "ffn", "heads", "layers", "seq", "vocab", "experts", "top_k"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int):
                raise InputTypeError(f"model field {f!r} must be an integer, got {v!r}",
                                     item=f"field '{f}'")
            if v < 1:
                raise InputError(f"model field {f!r} must be at least 1, got {v}",
                                 item=f"field '{f}'")
        kv = self.kv_heads if self.kv_heads is not None else self.heads
        if isinstance(kv, bool) or not isinstance(kv, int) or not 1 <= kv <= self.heads \
                or self.heads % kv:
            raise InputError(f"kv_heads must divide heads={self.heads}, got {kv!r}",
                             item="field 'kv_heads'")
        object.__setattr__(self, "kv_heads", kv)
        if self.hidden % self.heads:
            raise InputError(f"heads={self.heads} must divide hidden={self.hidden}",
                             item="field 'heads'")
        if self.top_k > self.experts:
            raise InputError(f"top_k={self.top_k} exceeds experts={self.experts}",
                             item="field 'top_k'")
        if self.style not in _STYLES:
            raise InputError(f"style must be one of {', '.join(_STYLES)}, got {self.style!r}",
                             item="field 'style'")

    # -- shape ---------------------------------------------------------------------------
    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        """Width of the key (and of the value) projection."""
        return self.kv_heads * self.head_dim

    @property
    def gated(self) -> bool:
        """Whether the MLP has a gate matrix (SwiGLU)."""
        return self.style == "llama"

    @property
    def moe(self) -> bool:
        return self.experts > 1

    # -- parameters ----------------------------------------------------------------------
    @property
    def attention_parameters(self) -> int:
        """Q, K, V and output projections of one block (with biases in gpt/bert)."""
        h, kv = self.hidden, self.kv_dim
        w = 2 * h * h + 2 * h * kv
        return w if self.style == "llama" else w + 2 * h + 2 * kv

    @property
    def expert_parameters(self) -> int:
        """One MLP (one expert)."""
        h, f = self.hidden, self.ffn
        return 3 * h * f if self.gated else 2 * h * f + f + h

    @property
    def norm_parameters(self) -> int:
        """The two norms of one block."""
        return 2 * self.hidden if self.style == "llama" else 4 * self.hidden

    @property
    def layer_parameters(self) -> int:
        """Parameters of one block: attention, every expert, the router, norms."""
        router = self.hidden * self.experts if self.moe else 0
        return (self.attention_parameters + self.experts * self.expert_parameters + router
                + self.norm_parameters)

    @property
    def embedding_parameters(self) -> int:
        """Input embeddings (with learned positions and token types where the style has
        them), the output head where untied, the final norm, BERT's pooler and LM head."""
        h, v = self.hidden, self.vocab
        if self.style == "llama":
            return 2 * v * h + h
        e = v * h + self.seq * h + 2 * h            # tokens, positions, final LayerNorm
        if self.style == "bert":
            e += 2 * h + 2 * h                      # token types, embedding LayerNorm
            e += h * h + h                          # pooler
            e += h * h + h + 2 * h + v              # LM head transform, its norm, bias
        return e

    @property
    def parameters(self) -> int:
        """Every parameter of the model."""
        return self.layers * self.layer_parameters + self.embedding_parameters

    @property
    def active_parameters(self) -> int:
        """Parameters one token uses (``top_k`` experts of each MoE layer)."""
        inactive = (self.experts - self.top_k) * self.expert_parameters
        return self.parameters - self.layers * inactive

    # -- FLOPs per sequence --------------------------------------------------------------
    def layer_gemm_flops(self) -> float:
        """Forward matrix-multiply FLOPs of one block for one sequence (2 per MAC)."""
        h, f, s = self.hidden, self.ffn, self.seq
        attn = 2 * s * (2 * h * h + 2 * h * self.kv_dim)
        mlp = 2 * s * (3 if self.gated else 2) * h * f * self.top_k
        router = 2 * s * h * self.experts if self.moe else 0
        return float(attn + mlp + router)

    def layer_attention_flops(self) -> float:
        """Forward FLOPs of the attention scores and their product with V, one sequence
        (no causal saving, as in Narayanan et al. SC'21 equation 3)."""
        return float(4 * self.seq * self.seq * self.hidden)

    def layer_flops(self) -> float:
        """Forward FLOPs of one block for one sequence."""
        return self.layer_gemm_flops() + self.layer_attention_flops()

    def logit_flops(self) -> float:
        """Forward FLOPs of the output projection onto the vocabulary, one sequence."""
        return float(2 * self.seq * self.hidden * self.vocab)

    def forward_flops(self) -> float:
        """Forward FLOPs of the whole model for one sequence."""
        return self.layers * self.layer_flops() + self.logit_flops()

    def training_flops(self, recompute: str = "none") -> float:
        """FLOPs of forward and backward (twice the forward) for one sequence, plus the
        recomputed forward: all blocks for ``"full"``, the attention core for
        ``"selective"`` (Korthikanti et al., section 5)."""
        f = 3 * self.forward_flops()
        if recompute == "full":
            f += self.layers * self.layer_flops()
        elif recompute == "selective":
            f += self.layers * self.layer_attention_flops()
        return f

    # -- activations (bytes, 16-bit, per sequence, per block) ----------------------------
    def layer_activation_terms(self) -> tuple[float, float, float]:
        """The bytes one block keeps for its backward pass for one sequence, split as
        (parts that tensor parallelism divides only with sequence parallelism, parts it
        always divides, the attention scores).

        Counted tensor by tensor as in Korthikanti et al. (section 4.1): the inputs of the
        two norms, of the QKV and of the MLP input projections and the dropout masks are
        the first part; Q, K, V, the output projection's input and the MLP's inner
        activations (times ``top_k`` for experts) the second; softmax output, its dropout
        mask and output (``5 a s^2``; ``2 a s^2`` without dropout in llama) the third. For
        a gpt block with ``ffn = 4 hidden`` this is their ``s h (10 + 24) + 5 a s^2``.

        A gated MLP (SwiGLU) keeps ``6 s f`` bytes, as Megatron-Core's fused SwiGLU does:
        the activation saves only its input, the first projection's ``2 f`` outputs, and
        recomputes SiLU and the product in the backward; the second projection saves its
        ``f`` inputs (``megatron/core/fusions/fused_bias_swiglu.py``). Counting the gate,
        the up projection, SiLU's output and the product separately (``8 s f``) put Meta's
        Llama-3 405B configuration 10 GiB over an 80 GB H100 (issue 31).
        """
        s, h, f, kv = self.seq, self.hidden, self.ffn, self.kv_dim
        dropout = self.style != "llama"
        replicated = 4 * s * h + 2 * s * h + 2 * s * h + (2 * s * h if dropout else 0)
        inner = (6 if self.gated else 4) * s * f * self.top_k
        split = 2 * s * (h + kv) + 2 * s * kv + 2 * s * h + inner
        scores = (5 if dropout else 2) * self.heads * s * s
        return float(replicated), float(split), float(scores)

    def layer_activation_bytes(self) -> float:
        """Bytes one block keeps for one sequence with no parallelism or recomputation."""
        return sum(self.layer_activation_terms())

    def spec(self) -> str:
        """The ``transformer:...`` spec string that rebuilds this shape."""
        s = (f"transformer:hidden={self.hidden},ffn={self.ffn},heads={self.heads},"
             f"layers={self.layers},seq={self.seq},vocab={self.vocab}")
        if self.kv_heads != self.heads:
            s += f",kv_heads={self.kv_heads}"
        if self.moe:
            s += f",experts={self.experts},top_k={self.top_k}"
        if self.style != "gpt":
            s += f",style={self.style}"
        return s


def _t(name, hidden, ffn, heads, layers, seq, vocab, kv=None, experts=1, top_k=1,
       style="gpt") -> Transformer:
    return Transformer(name, hidden, ffn, heads, layers, seq, vocab, kv, experts, top_k,
                       style)


#: Named models (shapes: ../shared/reference/landscape.md section 6 and the papers).
MODELS: dict[str, Transformer] = {m.name: m for m in (
    _t("gpt3-175b", 12288, 49152, 96, 96, 2048, 51200),
    _t("megatron-22b", 6144, 24576, 64, 48, 2048, 51200),
    _t("mt-nlg-530b", 20480, 81920, 128, 105, 2048, 51200),
    _t("megatron-1t", 25600, 102400, 160, 128, 2048, 51200),
    _t("llama2-7b", 4096, 11008, 32, 32, 4096, 32000, style="llama"),
    _t("llama2-13b", 5120, 13824, 40, 40, 4096, 32000, style="llama"),
    _t("llama2-70b", 8192, 28672, 64, 80, 4096, 32000, kv=8, style="llama"),
    _t("llama3-8b", 4096, 14336, 32, 32, 8192, 128256, kv=8, style="llama"),
    _t("llama3-70b", 8192, 28672, 64, 80, 8192, 128256, kv=8, style="llama"),
    _t("llama3-405b", 16384, 53248, 128, 126, 8192, 128256, kv=8, style="llama"),
    _t("mixtral-8x7b", 4096, 14336, 32, 32, 4096, 32000, kv=8, experts=8, top_k=2,
       style="llama"),
    _t("bert-large", 1024, 4096, 16, 24, 512, 30522, style="bert"),
)}

MODEL_NAMES = tuple(MODELS)

_INT_FIELDS = ("hidden", "ffn", "heads", "layers", "seq", "vocab", "kv_heads", "experts",
               "top_k")


def parse_model(text: str) -> Transformer:
    """A model from a name (``gpt3-175b``) or ``transformer:hidden=H,ffn=F,heads=A,
    layers=L,seq=S,vocab=V[,kv_heads=K][,experts=E,top_k=k][,style=gpt|llama|bert]``.

    A name may take overrides: ``gpt3-175b:seq=4096``.

    Raises
    ------
    InputError
        Naming the unknown model or the bad field.
    """
    if not isinstance(text, str):
        raise InputTypeError(f"a model must be a name or spec string, got {text!r}",
                             item="model")
    head, _, rest = text.strip().partition(":")
    head = head.strip().lower()
    fields: dict[str, object] = {}
    for k, v in kv_pairs(rest, what="model field", keys=(*_INT_FIELDS, "style"),
                         item=lambda k: f"field '{k}'").items():
        if k == "style":
            fields[k] = v.lower()
        else:
            try:
                fields[k] = int(v)
            except ValueError:
                raise InputError(f"model field {k!r} must be an integer, got {v!r}",
                                 item=f"field '{k}'") from None
    if head == "transformer":
        missing = [f for f in ("hidden", "ffn", "heads", "layers", "seq", "vocab")
                   if f not in fields]
        if missing:
            raise InputError(f"transformer spec needs {', '.join(missing)}",
                             item=f"field '{missing[0]}'")
        base = dict(fields)
        m = Transformer(name="", **base)            # type: ignore[arg-type]
        return _renamed(m, m.spec())
    if head not in MODELS:
        raise InputError(f"unknown model {head!r} (valid: {', '.join(MODEL_NAMES)}, or "
                         f"transformer:hidden=...)", item=f"model '{head}'")
    m = MODELS[head]
    if not fields:
        return m
    d = {f: getattr(m, f) for f in (*_INT_FIELDS, "style")}
    d.update(fields)
    over = ",".join(f"{k}={v}" for k, v in fields.items())
    return Transformer(name=f"{head}:{over}", **d)   # type: ignore[arg-type]


def _renamed(m: Transformer, name: str) -> Transformer:
    return Transformer(name, m.hidden, m.ffn, m.heads, m.layers, m.seq, m.vocab, m.kv_heads,
                       m.experts, m.top_k, m.style)


def load_model(path: str | Path) -> Transformer:
    """A model from a YAML or JSON file with the spec string's fields (and ``name``).

    Raises
    ------
    InputError
        For a missing or unknown field (an unreadable file: TopologyError naming it).
    """
    from ..topology.io import read_mapping

    p = Path(path)
    d = read_mapping(p)
    if not isinstance(d, dict):
        raise InputError(f"{p}: a model file is a mapping of fields", item=str(p))
    unknown = sorted(set(d) - {*_INT_FIELDS, "style", "name"})
    if unknown:
        raise InputError(f"{p}: unknown model field {unknown[0]!r}",
                         item=f"field '{unknown[0]}'")
    name = str(d.pop("name", p.stem))
    spec = "transformer:" + ",".join(f"{k}={v}" for k, v in d.items())
    return _renamed(parse_model(spec), name)
