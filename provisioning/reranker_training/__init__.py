"""Train Hindsight's own cross-encoder from documentation that ships in Debian packages.

1. ``packages``: the training packages (none that any evaluation set is built from), fetched as .deb
   files and unpacked: their Info manuals, manual pages and plain-text FAQs.
2. ``pairs``: every section whose heading can stand as a question (an FAQ question, a manual's
   heading, a manual page's one-line summary) paired with the start of its own text; every window of
   every section is a passage negatives are mined from.
3. ``train``: hard negatives mined by the product's two legs (the embedder's MiniLM and BM25), then
   the packaged all-MiniLM-L6-v2 fine-tuned as a cross-encoder (listwise and pointwise loss), on a GPU
   when there is one; the encoder's weights are written for ``provisioning.trained_reranker``.

Run (docs/decisions/reranker-training.md has the figures)::

    python -m provisioning.reranker_training pairs --debs CACHE --out pairs/
    python -m provisioning.reranker_training.train --pairs pairs/ --out weights/
"""
