"""A review summarizer: one sentence per customer review, for the product team's dashboard.

:meth:`ReviewSummarizer.summarize` asks a chat model for a one-sentence summary that keeps the
reviewer's verdict and every concrete complaint or praise.

What evaltrace sees: ``@wrap(kind="chain")`` on :meth:`ReviewSummarizer.summarize`,
``@wrap(kind="llm")`` on the model call, ``wrap(review, purpose="input", name="review")`` and
``wrap(summary, purpose="output", name="summary")``.

:class:`ReviewSummarizerRunnable` is how ``noisy_judge.evaltrace.json`` runs it, offline.
"""

from __future__ import annotations

from pathlib import Path

import openai
import yaml
from openai.types.chat import ChatCompletion

from evaltrace import wrap
from evaltrace.judges import configure_judge
from evaltrace.testing import FakeJudgeServer

MODEL = "gpt-4o-mini"
HERE = Path(__file__).parent

SYSTEM_PROMPT = """\
Summarise the customer review in one sentence for the product team. Keep the reviewer's
overall verdict and every concrete point of praise or complaint (sizes, materials, defects,
comparisons). Do not add anything the review does not say.
"""


class ReviewSummarizer:
    """Summarises customer reviews with a chat model."""

    def __init__(self, client: openai.AsyncOpenAI, model: str = MODEL) -> None:
        self.client = client
        self.model = model

    @wrap(kind="chain")
    async def summarize(self, review: str) -> str:
        """One sentence for the dashboard."""
        review = wrap(review, purpose="input", name="review")
        completion = await self.call_model(review)
        return wrap(completion.choices[0].message.content or "", purpose="output", name="summary")

    @wrap(kind="llm")
    async def call_model(self, review: str) -> ChatCompletion:
        """One chat completion."""
        return await self.client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": review},
            ],
            temperature=0.3,
        )


class ReviewSummarizerRunnable:
    """Runs the summarizer for a dataset, offline: a scripted model and judge on loopback.

    A real deployment points the ``openai`` client at its provider through ``OPENAI_BASE_URL``
    and ``OPENAI_API_KEY``, and evaltrace's judges at theirs through ``EVALTRACE_JUDGE_BASE_URL``,
    ``EVALTRACE_JUDGE_API_KEY`` and ``EVALTRACE_JUDGE_MODEL``; then ``setup`` builds
    ``openai.AsyncOpenAI()`` and starts nothing. Here two FakeJudgeServers stand in: one plays
    the summarizer's model (``fake_model.yaml``), the other the noisy grader
    (``fake_judge.yaml``).
    """

    async def setup(self) -> None:
        """Start the two servers, point the summarizer and the judge at them."""
        self.model_server = FakeJudgeServer().start()
        for rule in yaml.safe_load((HERE / "fake_model.yaml").read_text("utf-8")):
            self.model_server.add_rule(**rule)
        self.judge_server = FakeJudgeServer().start()
        script_noisy_judge(self.judge_server)
        self.judge = configure_judge(
            base_url=self.judge_server.base_url, api_key="offline", model=MODEL
        )
        client = openai.AsyncOpenAI(base_url=self.model_server.base_url, api_key="offline")
        self.summarizer = ReviewSummarizer(client)

    async def run(self, review: str) -> str:
        """Summarise one entry's review."""
        return await self.summarizer.summarize(review)

    async def teardown(self) -> None:
        """Close the client, restore the judge configuration, stop both servers."""
        await self.summarizer.client.close()
        self.judge.restore()
        self.model_server.stop()
        self.judge_server.stop()


def script_noisy_judge(server: FakeJudgeServer, *, strategies: int = 7) -> None:
    """Script the grader's five verdicts on each summary of ``fake_judge.yaml``.

    A ``sequence`` rule answers successive requests in turn. Each of the dataset's
    ``strategies`` repeated evaluators asks five times, one evaluator after the other
    (``evaluators.TakingTurns``), so the five verdicts are repeated once per evaluator and every
    strategy aggregates the same five.
    """
    for summary in yaml.safe_load((HERE / "fake_judge.yaml").read_text("utf-8")):
        verdicts = [{"reasons": v["reasons"], "choice": v["choice"]} for v in summary["verdicts"]]
        server.add_rule(f"Summary: {summary['summary_starts']}", sequence=verdicts * strategies)
