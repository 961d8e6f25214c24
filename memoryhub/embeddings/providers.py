"""The encoders behind EMBEDDINGS_PROVIDER: `local` (all-MiniLM-L6-v2 in numpy, loaded lazily
once per process) and `openai` (an OpenAI-compatible /embeddings endpoint through the LLM
layer's client, destination and key). Both return L2-normalised float32 rows, so a dot product
is the cosine.

numpy is imported only here and only when a provider is configured: the default install has
no numpy at all.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings

from memoryhub.llm.errors import LlmTimeout, LlmUnavailable

if TYPE_CHECKING:
    from memoryhub.embeddings.minilm import MiniLM
    from projects.models import Project

# One BLAS thread per process unless the operator sets it: web and worker processes already run
# side by side, and OpenBLAS threads that spin for a busy core made a query's encoding 20×
# slower on a loaded 2-core machine (bench/embeddings_cost.py: 1,330 → 65 ms p50). Set before
# numpy is first imported, which happens only through this package.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

NONE = "none"
OPENAI_BATCH = 64  # texts per /embeddings call


class EmbeddingError(Exception):
    """An embedding could not be computed (message says why, for the row and the log)."""


class EmbeddingUnavailable(EmbeddingError):
    """Transient: the endpoint was unreachable, timed out or refused for now; worth retrying."""


class Encoder(Protocol):
    key: str  # "<provider>:<model>": rows of another key are never compared with these

    # (n, dims) float32, L2-normalised. `project` and `purpose` go to the LLM call log and
    # budget when the encoder calls a paid endpoint; a local model ignores them.
    def encode(
        self, texts: list[str], *, project: Project | None = None, purpose: str = "embed"
    ) -> Any: ...


def _normalised(rows: Any) -> Any:
    import numpy as np

    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


class LocalEncoder:
    def __init__(self) -> None:
        from memoryhub.embeddings.minilm import MODEL_NAME

        self.key = f"local:{MODEL_NAME}"
        self._model: MiniLM | None = None
        self._lock = threading.Lock()

    def model(self) -> MiniLM:
        # Loaded on first use (≈2 s, ≈90 MB): web processes that never search with vectors,
        # and every process of a bank without them, never pay for it.
        with self._lock:
            if self._model is None:
                from memoryhub.embeddings.minilm import MiniLM

                try:
                    self._model = MiniLM()
                except (RuntimeError, OSError, KeyError) as exc:
                    raise EmbeddingError(f"cannot load the local model: {exc}") from exc
            return self._model

    def encode(
        self, texts: list[str], *, project: Project | None = None, purpose: str = "embed"
    ) -> Any:
        return self.model().encode(texts)


class OpenAIEncoder:
    def __init__(self, model: str) -> None:
        self.key = f"openai:{model}"
        self.model = model

    def encode(
        self, texts: list[str], *, project: Project | None = None, purpose: str = "embed"
    ) -> Any:
        from memoryhub.llm import client
        from memoryhub.llm.errors import LlmError

        # Through the LLM client: the server's destination and key (settings.py requires
        # LLM_PROVIDER=openai), one call-log row per batch, the project's token budget.
        rows: list[list[float]] = []
        try:
            for start in range(0, len(texts), OPENAI_BATCH):
                batch = texts[start : start + OPENAI_BATCH]
                rows += client.embed(
                    purpose=purpose, model=self.model, texts=batch, project=project
                )
        except (LlmUnavailable, LlmTimeout) as exc:
            raise EmbeddingUnavailable(str(exc)) from exc
        except LlmError as exc:
            raise EmbeddingError(str(exc)) from exc
        if len({len(row) for row in rows}) > 1:
            raise EmbeddingError(f"{self.key} returned vectors of different sizes.")
        return _normalised(rows)


def encoder() -> Encoder | None:
    """The configured encoder (one per process and configuration), or None when off."""
    provider = settings.EMBEDDINGS_PROVIDER
    if provider == NONE:
        return None
    return _encoder(provider, settings.EMBEDDINGS_MODEL)


@lru_cache(maxsize=4)
def _encoder(provider: str, model: str) -> Encoder:
    if provider == "local":
        return LocalEncoder()
    if provider == "openai":
        return OpenAIEncoder(model)
    raise EmbeddingError(f"Unknown EMBEDDINGS_PROVIDER {provider!r}.")
