"""The demo: capture and evaluate a small question-answering app, offline.

Run it with ``python -m evaltrace.demo`` (or ``python3 dev.py demo``). It needs no server
and no API key: the bundled app answers from a small in-memory corpus.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

from evaltrace.capture import wrap
from evaltrace.engine import evaluate_inputs, results_table
from evaltrace.evals import Evaluable, Evaluation, ScoreThreshold
from evaltrace.metrics import reciprocal_rank, token_f1
from evaltrace.trace import capture_traces

CORPUS = [
    {"id": "fr", "content": "Paris is the capital and largest city of France."},
    {"id": "jp", "content": "Tokyo is the capital of Japan."},
    {"id": "au", "content": "Canberra is the capital of Australia; Sydney is its largest city."},
    {"id": "ca", "content": "Ottawa is the capital city of Canada."},
]

QUESTIONS: list[dict[str, Any]] = [
    {"question": "What is the capital of France?", "answer": "Paris", "relevant": ["fr"]},
    {"question": "What is the capital of Japan?", "answer": "Tokyo", "relevant": ["jp"]},
    {"question": "What is the capital of Australia?", "answer": "Canberra", "relevant": ["au"]},
    {"question": "Which city is the capital of Canada?", "answer": "Ottawa", "relevant": ["ca"]},
    {"question": "What is the largest city of Australia?", "answer": "Sydney", "relevant": ["au"]},
]


def _words(text: str) -> set[str]:
    return {word.strip("?.,;").lower() for word in text.split()}


@wrap(kind="retriever")
def retrieve(question: str, k: int = 2) -> list[dict[str, str]]:
    """Rank the corpus by words shared with the question."""
    wanted = _words(question) - {"what", "is", "the", "of", "which", "city", "capital"}
    ranked = sorted(CORPUS, key=lambda doc: -len(wanted & _words(doc["content"])))
    return ranked[:k]


@wrap(kind="llm")
def generate(question: str, documents: list[dict[str, str]]) -> str:
    """A stand-in for a model call: the first word of the best document."""
    return documents[0]["content"].split()[0] if documents else "I don't know"


@wrap(kind="agent")
def answer_question(question: str) -> str:
    """The app: retrieve, then generate; the values that matter are marked with wrap()."""
    question = wrap(question, purpose="input", name="question")
    documents = retrieve(question)
    wrap([doc["id"] for doc in documents], purpose="state", name="retrieved_ids")
    return wrap(generate(question, documents), purpose="output", name="answer")


def answer_f1(evaluable: Evaluable) -> Evaluation:
    """Token F1 of the answer against the expected answer."""
    expected = str(evaluable.expected_output)
    answer = str(evaluable.output_value("answer"))
    score = token_f1(answer, expected)
    return Evaluation(score=score, reasoning=f"answer {answer!r}, expected {expected!r}")


def retrieval_mrr(evaluable: Evaluable) -> Evaluation:
    """Reciprocal rank of the first relevant document among those retrieved."""
    metadata = evaluable.eval_metadata or {}
    relevant: Any = metadata.get("relevant", [])
    retrieved = evaluable.output_value("retrieved_ids") or []
    score = reciprocal_rank(retrieved, relevant)
    return Evaluation(score=score, reasoning=f"retrieved {retrieved}, relevant {relevant}")


async def main() -> int:
    """Run the demo; returns the process exit code."""
    print("evaltrace demo: capture and evaluate a question-answering app (offline)\n")
    print("1. One run under capture_traces(), as a trace outline:\n")
    with capture_traces() as handler:
        answer_question("What is the capital of France?")
    for node in handler.trace:
        print(node.to_text())

    print(f"\n2. {len(QUESTIONS)} questions scored by answer_f1 and retrieval_mrr")
    print("   (the app answers the last one wrongly; 80% of the questions must pass):\n")
    cases = [
        Evaluable(expectation=q["answer"], eval_metadata={"relevant": q["relevant"]})
        for q in QUESTIONS
    ]
    inputs = [q["question"] for q in QUESTIONS]
    evaluators = [answer_f1, retrieval_mrr]
    results = await evaluate_inputs(answer_question, inputs, evaluators, evaluables=cases)
    criteria = ScoreThreshold(threshold=0.5, pct=0.8)
    names = [evaluator.__name__ for evaluator in evaluators]
    print(results_table(results, names, criteria))
    passed, message = criteria([item.evaluations for item in results])
    print(f"\n{'PASSED' if passed else 'FAILED'}: {message}")
    return 0 if passed else 1


def run() -> int:
    """Entry point of ``python -m evaltrace.demo``."""
    return anyio.run(main)


if __name__ == "__main__":
    sys.exit(run())
