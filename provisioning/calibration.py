"""Fixed inputs that provisioning checks quantised models on and measures smoothing factors with.

The check set and the fit set are disjoint, so a check measures what the quantiser did not see.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from shared.onnx_runtime import load_tokenizer

# A fixed, varied set on which the quantised model must agree with fp32 (the check set).
CALIBRATION_TEXTS = [
    "How do I read a file line by line in Python?",
    "The GIL prevents more than one thread from executing Python bytecode at once.",
    "Use a virtual environment to isolate project dependencies.",
    "Retrieval augmented generation cites the passages it rests on.",
    "Dynamic int8 quantisation keeps one scale per output channel.",
    "Perplexity threads are exported to Markdown with front matter.",
    "The reranker reads the raw logit of a single-output classification head.",
    "def fibonacci(n): return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "Celery routes each task to a queue by its name.",
    "Le chat est sur le tapis.",
    "Redis Streams keep an append-only log of events per question.",
    "PDF pages keep their numbers so a citation can point at a page.",
]


# Long passages (about 256 tokens, the embedder's window, as the indexer's chunks are) for the check
# set: per-row int8 drifts most on long inputs, so the embedder is checked on them as well as on the
# short sentences above.
LONG_CHECK_PASSAGES = [
    "Indexing a library\nHow the first index runs\nThe indexer walks every root folder, hashes each "
    "file and compares the digest with the manifest the store keeps. Files that are new or changed are "
    "grouped into batches; each batch is loaded, split into overlapping windows of model tokens, "
    "embedded and written to the store in a single commit, so that a search never sees half of a "
    "document. A file that cannot be read, because it is corrupt, encrypted or not valid UTF-8, is "
    "reported with its reason and loses whatever chunks it had before, while the rest of its batch is "
    "indexed as usual. When the last batch is written the full-text index is refreshed, and the job "
    "reports how many files were indexed, skipped and failed, together with the elapsed time and the "
    "number of chunks. A second run over an unchanged tree only hashes the files and finds nothing to "
    "do, which is why re-syncing a large library costs a small fraction of the first index.",
    "Sourdough starter maintenance\nFeeding schedules\nA starter kept at room temperature needs to "
    "be fed once or twice a day: discard most of it, then add equal weights of flour and water. Rye "
    "flour ferments faster than white wheat flour because it carries more enzymes and wild yeasts, so "
    "a rye starter peaks sooner and collapses sooner. If the starter smells of acetone it is hungry; "
    "feed it more often or at a higher ratio, for example one part starter to five parts flour and "
    "five parts water. A starter kept in the refrigerator can go a week or two between feedings, but "
    "it should be refreshed two or three times at room temperature before baking, until it doubles "
    "reliably within four to six hours. Bakers who want a milder bread build the levain with a small "
    "amount of starter and let it ripen overnight at a cool temperature, which favours the yeasts over "
    "the bacteria that produce acetic acid, and gives a more open crumb.",
    'def merge_intervals(intervals):\n    """Merge overlapping [start, end] intervals; the result is '
    'sorted."""\n    merged = []\n    for start, end in sorted(intervals):\n        if merged and '
    "start <= merged[-1][1]:\n            merged[-1][1] = max(merged[-1][1], end)\n        else:\n    "
    "        merged.append([start, end])\n    return merged\n\n\nclass LRUCache:\n    def __init__(self, "
    "capacity: int) -> None:\n        self.capacity = capacity\n        self.items = OrderedDict()\n\n  "
    "  def get(self, key):\n        if key not in self.items:\n            return None\n        "
    "self.items.move_to_end(key)\n        return self.items[key]\n\n    def put(self, key, value) -> "
    "None:\n        self.items[key] = value\n        self.items.move_to_end(key)\n        if "
    "len(self.items) > self.capacity:\n            self.items.popitem(last=False)\n",
    "The history of the printing press\nGutenberg's workshop\nAround 1440, Johannes Gutenberg "
    "combined several existing technologies into a system for printing books: movable metal type cast "
    "from a hand mould, an oil-based ink that adhered to metal, and a screw press adapted from those "
    "used to make wine and paper. The alloy of lead, tin and antimony melted at a low temperature, "
    "cooled quickly and was durable enough to print thousands of sheets. His Bible, completed around "
    "1455, was printed in two columns of forty-two lines and set with nearly three hundred distinct "
    "characters, including ligatures and abbreviations that imitated the hands of scribes. Within fifty "
    "years presses were working in more than two hundred European towns, and the price of books fell "
    "so far that pamphlets, calendars and grammars reached readers who had never owned a manuscript. "
    "Historians still debate how quickly literacy followed, but the flow of printed text changed "
    "scholarship, religion and commerce across the continent.",
    "Configuring the worker pool\nThreads, processes and queues\nEach Celery worker consumes from "
    "the queues named on its command line and acknowledges a task only after it finished, so a task "
    "whose worker died is delivered again to another one. CPU-bound services such as the embedder and "
    "the cross-encoder run one process per machine and spread their work across the cores with "
    "threads inside ONNX Runtime, since every process would otherwise load its own copy of the model "
    "and compete for the same caches. I/O-bound services, like the gateway that streams answers, use "
    "many concurrent connections instead. The broker is a Redis instance; its append-only file keeps "
    "the queues across restarts, and a visibility timeout decides when an unacknowledged task is handed "
    "to another worker. Set the timeout longer than the slowest task, or a long index job will run "
    "twice; set it short for questions, so a crashed worker delays an answer by seconds, not minutes.",
    "Ocean currents and climate\nThe Atlantic overturning circulation\nWarm, salty water flows "
    "north along the surface of the Atlantic, releases heat to the atmosphere near Greenland and "
    "Norway, becomes dense as it cools and sinks to the deep ocean, then returns south at depth. This "
    "overturning circulation carries about a petawatt of heat northward and is one reason why western "
    "Europe is milder than places at the same latitude in North America. Fresh water from melting ice "
    "and increased rainfall makes the surface water lighter, which can slow the sinking and weaken the "
    "whole circulation. Measurements from moored instruments across the Atlantic since 2004 show large "
    "variability from year to year, and models disagree about how much the circulation will weaken "
    "this century. Sediment cores record abrupt changes during the last ice age, when the circulation "
    "appears to have switched between strong and weak states within decades, with large effects on "
    "temperatures around the North Atlantic.",
]


# (question, answer) pairs that int8 smoothing is measured on (and the reranker stand-in's head is
# fitted on); disjoint from the check set, so the check measures what it did not see.
FIT_PAIRS = [
    ("What is the capital of France?", "Paris is the capital and largest city of France."),
    ("How do vaccines train the immune system?", "Vaccines expose the immune system to a harmless antigen."),
    ("Why is the sky blue?", "Rayleigh scattering makes short blue wavelengths scatter more in the air."),
    ("How does a hash map handle collisions?", "Open addressing probes for the next free slot."),
    ("What causes inflation?", "Prices rise when money supply grows faster than the output of goods."),
    ("How do I sort a list in Python?", "Call sorted(items) or items.sort() to order a list in Python."),
    ("When did the Roman Empire fall?", "The Western Roman Empire fell in 476 AD when Odoacer took Rome."),
    ("How do transformers use attention?", "Self-attention weighs every token against every other token."),
    ("What is photosynthesis?", "Plants turn light, water and carbon dioxide into glucose and oxygen."),
    ("How does TCP guarantee delivery?", "TCP numbers each segment and retransmits those not acknowledged."),
    ("What is a good sourdough hydration?", "Most sourdough breads use between 70 and 80 percent hydration."),
    ("How are black holes formed?", "A massive star collapses under its own gravity at the end of its life."),
]
FIT_TEXTS = [text for pair in FIT_PAIRS for text in pair]


def encoder_feeds(
    tokenizer_path: Path, inputs: list[str] | list[tuple[str, str]], max_length: int
) -> list[dict[str, np.ndarray]]:
    """One unpadded feed (input name -> [1, tokens] array) per text or pair: what per-row int8's
    smoothing factors are measured on (``provisioning.row_int8``)."""
    tokenizer = load_tokenizer(tokenizer_path, max_length)
    tokenizer.no_padding()
    return [
        {
            "input_ids": np.array([encoding.ids], dtype=np.int64),
            "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
        }
        for encoding in tokenizer.encode_batch(inputs)
    ]


# Every fit question against every fit text: what the stand-in's head is fitted on and per-row
# int8's smoothing is measured on for the cross-encoder.
FIT_QUESTION_TEXT_PAIRS = [(question, text) for question, _ in FIT_PAIRS for text in FIT_TEXTS]
