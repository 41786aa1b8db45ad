"""An HR-handbook assistant: retrieval-augmented generation over the company handbook.

:meth:`HandbookAssistant.answer` retrieves the three handbook sections that best match the
question (a small BM25-style keyword ranker over ``handbook.json``), puts them in the prompt,
and asks a chat model to answer from them alone.

What evaltrace sees:

* ``@wrap(kind="retriever")`` on :meth:`HandbookAssistant.retrieve`: its output, the ranked
  documents with their ids, is what DocumentMRR and DocumentRecall score;
* ``@wrap(kind="llm")`` on :meth:`HandbookAssistant.generate`: the prompt and the completion;
* ``wrap(question, purpose="input", name="question")`` and
  ``wrap(answer, purpose="output", name="answer")``: what AnswerF1 and the Faithfulness judge
  read.

:class:`HandbookRunnable` is how ``rag_pipeline.evaltrace.yaml`` runs the assistant, offline;
:func:`evaluate_pipeline` runs it through the Haystack-style ``evaluate_runnable`` instead.
Run this file to see that: ``python instrumentation_examples/rag_pipeline/rag_app.py``.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import openai
import yaml
from openai.types.chat import ChatCompletion

from evaltrace import wrap
from evaltrace.datasets import load_dataset
from evaltrace.judges import configure_judge
from evaltrace.pipeline import EvaluationResult, Metric, evaluate_runnable
from evaltrace.testing import FakeJudgeServer

MODEL = "gpt-4o-mini"
HERE = Path(__file__).parent
HANDBOOK: list[dict[str, str]] = json.loads((HERE / "handbook.json").read_text("utf-8"))

SYSTEM_PROMPT = """\
You answer employees' questions about the Contoso employee handbook. Use only the handbook
sections given with the question. Answer in one or two sentences, with the exact numbers the
handbook gives. If the sections do not answer the question, say that you do not know.
"""

_STOPWORDS = frozenset(
    "a an and are can do does for from get how i in is it many much my of on or the there "
    "to what when where which who will with you your".split()
)


def _terms(text: str) -> list[str]:
    return [word for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in _STOPWORDS]


class HandbookAssistant:
    """Retrieves handbook sections and answers from them with a chat model."""

    def __init__(self, client: openai.AsyncOpenAI, model: str = MODEL, top_k: int = 3) -> None:
        self.client = client
        self.model = model
        self.top_k = top_k
        self._documents = [_terms(f"{doc['title']} {doc['content']}") for doc in HANDBOOK]
        frequency = Counter(term for terms in self._documents for term in set(terms))
        self._idf = {
            term: math.log(1 + (len(HANDBOOK) - df + 0.5) / (df + 0.5))
            for term, df in frequency.items()
        }

    @wrap(kind="agent")
    async def answer(self, question: str) -> str:
        """Answer a question from the handbook."""
        question = wrap(question, purpose="input", name="question")
        documents = self.retrieve(question)
        text = await self.generate(question, documents)
        return wrap(text, purpose="output", name="answer")

    @wrap(kind="retriever")
    def retrieve(self, query: str) -> list[dict[str, Any]]:
        """The ``top_k`` sections sharing the most informative words with the query (BM25)."""
        wanted = set(_terms(query))
        scored: list[tuple[float, dict[str, str]]] = []
        for doc, terms in zip(HANDBOOK, self._documents, strict=True):
            counts = Counter(terms)
            score = sum(
                self._idf[term] * counts[term] * 2.2 / (counts[term] + 1.2)
                for term in wanted
                if term in counts
            )
            if score > 0:
                scored.append((score, doc))
        scored.sort(key=lambda pair: -pair[0])
        return [
            {"id": doc["id"], "content": doc["content"], "score": round(score, 3)}
            for score, doc in scored[: self.top_k]
        ]

    @wrap(kind="llm")
    async def generate(self, question: str, documents: list[dict[str, Any]]) -> str:
        """Ask the model to answer from the retrieved sections."""
        sections = "\n".join(f"[{doc['id']}] {doc['content']}" for doc in documents)
        completion: ChatCompletion = await self.client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": SYSTEM_PROMPT},
                {
                    "role": "user",
                    "content": f"Handbook sections:\n{sections}\n\nQuestion: {question}",
                },
            ],
            temperature=0,
        )
        return completion.choices[0].message.content or ""


class HandbookRunnable:
    """Runs the assistant for a dataset, offline: a scripted model and judge on loopback.

    A real deployment points the ``openai`` client at its provider through ``OPENAI_BASE_URL``
    and ``OPENAI_API_KEY``, and evaltrace's judges at theirs through ``EVALTRACE_JUDGE_BASE_URL``,
    ``EVALTRACE_JUDGE_API_KEY`` and ``EVALTRACE_JUDGE_MODEL``; then ``setup`` builds
    ``openai.AsyncOpenAI()`` and starts nothing. Here two FakeJudgeServers stand in: one plays
    the assistant's model (``fake_model.yaml``), the other the Faithfulness judge
    (``fake_judge.yaml``).
    """

    async def setup(self) -> None:
        """Start the two servers, point the assistant and the judge at them."""
        script = yaml.safe_load((HERE / "fake_model.yaml").read_text("utf-8"))
        self.model_server = FakeJudgeServer().start()
        for rule in script:
            self.model_server.add_rule(**rule)
        self.judge_server = FakeJudgeServer().start()
        script_faithfulness_judge(self.judge_server)
        self.judge = configure_judge(
            base_url=self.judge_server.base_url, api_key="offline", model=MODEL
        )
        client = openai.AsyncOpenAI(base_url=self.model_server.base_url, api_key="offline")
        self.assistant = HandbookAssistant(client)

    async def run(self, question: str) -> str:
        """Answer one entry's question."""
        return await self.assistant.answer(question)

    async def teardown(self) -> None:
        """Close the client, restore the judge configuration, stop both servers."""
        await self.assistant.client.close()
        self.judge.restore()
        self.model_server.stop()
        self.judge_server.stop()


def script_faithfulness_judge(server: FakeJudgeServer) -> None:
    """Script the judge's two steps for each answer in ``fake_judge.yaml``.

    Faithfulness first asks the judge to split the answer into statements, then to give each
    statement a verdict (1: the retrieved passages support it, 0: they do not). The first
    request quotes the answer, the second the statements, so one rule answers each.
    """
    for answer in yaml.safe_load((HERE / "fake_judge.yaml").read_text("utf-8")):
        statements = answer["statements"]
        server.add_rule(
            f"answer: {answer['answer_starts']}",
            json={"statements": [item["statement"] for item in statements]},
        )
        server.add_rule(statements[0]["statement"], json={"faithfulness": statements})


async def evaluate_pipeline(
    questions: list[Any], expected: list[dict[str, Any]]
) -> EvaluationResult:
    """Run the assistant once per question with ``evaluate_runnable`` (no evaluators).

    ``expected`` holds, per question, the final answer (under ``"answer"``, the runnable's
    name) and the retriever's relevant documents (under ``"retrieve"``, its span's name);
    metrics are computed afterwards, for the whole pipeline or one component.
    """
    runnable = HandbookRunnable()
    await runnable.setup()
    try:
        return await evaluate_runnable(runnable.assistant.answer, questions, expected)
    finally:
        await runnable.teardown()


def dataset_cases() -> tuple[list[Any], list[dict[str, Any]]]:
    """The questions and expectations of the dataset file, for :func:`evaluate_pipeline`."""
    dataset = load_dataset(HERE / "rag_pipeline.evaltrace.yaml")
    questions = [entry.entry_kwargs["question"] for entry in dataset.entries]
    expected = [
        {"answer": entry.expectation, "retrieve": (entry.eval_metadata or {})["relevant_documents"]}
        for entry in dataset.entries
    ]
    return questions, expected


async def main() -> None:
    """Evaluate the pipeline on the dataset's questions and print per-component metrics."""
    result = await evaluate_pipeline(*dataset_cases())
    print(f"{len(result.run.entries)} questions through evaluate_runnable")
    metrics = {
        "answer F1 (pipeline)": result.calculate_metrics(Metric.F1),
        "retriever MRR": result.calculate_metrics(Metric.MRR, component="retrieve", key="id"),
        "retriever recall": result.calculate_metrics(
            Metric.RECALL, component="retrieve", key="id", mode="multi_hit"
        ),
    }
    for label, metric in metrics.items():
        scores = " ".join("-" if score is None else f"{score:.2f}" for score in metric.per_input)
        print(f"{label:>20}: {metric.score:.3f}  (per question: {scores})")


if __name__ == "__main__":
    anyio.run(main)
