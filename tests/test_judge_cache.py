"""The judge cache: what is kept, how it is keyed, how it meets Repeated, and what a run spent.

Requests are counted at the offline judge server (the real ``openai`` client over loopback);
the cache is a real SQLite file in the test's folder.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from evaltrace.datasets import dataset_from_data, run_dataset
from evaltrace.errors import ConfigurationError
from evaltrace.evals.evaluable import Evaluable, NamedData
from evaltrace.judges import Factuality, Repeated, configure_judge, create_llm_evaluator
from evaltrace.llm import (
    CachedReply,
    JudgeCache,
    JudgeSample,
    JudgeUsage,
    RateLimiter,
    current_judge_sample,
    judge_client,
    judge_config,
    judge_epoch,
    judge_sample,
    request_key,
    run_judge_call,
)
from evaltrace.results import RunResult, load_result, merge_results
from evaltrace.results.report import render_report
from evaltrace.testing.fake_judge import FakeJudgeServer, serve_fake_judge

MODEL = "judge-model"
GRADES = {"A": 1.0, "B": 0.5, "C": 0.0}


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeJudgeServer]:
    yield from serve_fake_judge()


@pytest.fixture
def cache_file(tmp_path: Path) -> Path:
    return tmp_path / "judges.sqlite3"


@pytest.fixture
def judge(judge_server: FakeJudgeServer, cache_file: Path) -> Iterator[FakeJudgeServer]:
    judge_server.reset()
    judge_server.reset_stats()
    with configure_judge(
        base_url=judge_server.base_url, api_key="k", model=MODEL, max_retries=0, cache=cache_file
    ):
        yield judge_server


def grader(name: str = "grader", question: str = "Is this answer right?") -> Any:
    return create_llm_evaluator(
        name, question + "\nQ: {eval_input}\nA: {eval_output}", choice_scores=GRADES
    )


def dataset(count: int = 3) -> Any:
    return dataset_from_data(
        {
            "entries": [
                {"name": f"entry-{i}", "entry_kwargs": {"question": f"question {i}"}}
                for i in range(count)
            ]
        }
    )


async def shout(question: str) -> str:
    return question.upper()


def scores(result: RunResult) -> list[list[float | None]]:
    return [[e.score for e in entry.evaluations] for entry in result.entries]


def runs_of(result: RunResult, evaluator: int = 0) -> list[list[float | None]]:
    """Each entry's repeated runs' scores, in order."""
    return [
        [run["score"] for run in entry.evaluations[evaluator].details["runs"]]
        for entry in result.entries
    ]


def case(output: str = "Paris") -> Evaluable:
    return Evaluable(
        eval_input=[NamedData(name="question", value="Capital of France?")],
        eval_output=[NamedData(name="answer", value=output)],
        expectation="Paris",
    )


# -- runs against the offline judge ---------------------------------------------------------------


@pytest.mark.anyio
async def test_a_second_identical_run_with_repeated_judging_sends_no_judge_request(
    judge: FakeJudgeServer,
) -> None:
    judge.add_rule("", sequence=["A", "B", "A", "C", "A", "B"])
    evaluators = [Repeated(grader(), n=5, strategy="average")]

    first = await run_dataset(dataset(), runnable=shout, evaluators=evaluators)
    sent = len(judge.requests)
    again = await run_dataset(dataset(), runnable=shout, evaluators=evaluators)

    assert sent == 15  # five samples of each of three entries, every one asked
    assert len(judge.requests) == sent  # the second run asked nothing
    assert scores(again) == scores(first)
    assert runs_of(again) == runs_of(first)


@pytest.mark.anyio
async def test_each_sample_of_a_repeated_judge_is_asked_once_and_kept_apart(
    judge: FakeJudgeServer,
) -> None:
    judge.add_rule("", sequence=["A", "B", "C"])
    repeated = Repeated(grader(), n=3, max_concurrency=1, strategy="min")

    first = await repeated(case())
    again = await repeated(case())

    assert [run["score"] for run in first.details["runs"]] == [1.0, 0.5, 0.0]
    assert [run["score"] for run in again.details["runs"]] == [1.0, 0.5, 0.0]
    assert len(judge.requests) == 3


@pytest.mark.anyio
async def test_a_run_after_changing_one_evaluator_asks_only_that_evaluators_judge(
    judge: FakeJudgeServer,
) -> None:
    kept = Repeated(grader("kept", "Is it right?"), n=2)
    await run_dataset(dataset(), runnable=shout, evaluators=[kept, grader("edited", "Is it kind?")])
    judge.reset_stats()

    changed = grader("edited", "Is it kind and short?")
    await run_dataset(dataset(), runnable=shout, evaluators=[kept, changed])

    asked = [request.body["messages"][1]["content"] for request in judge.requests]
    assert len(asked) == 3
    assert all(text.startswith("Is it kind and short?") for text in asked)


@pytest.mark.anyio
async def test_each_epoch_of_an_entry_is_judged_as_a_sample_of_its_own(
    judge: FakeJudgeServer,
) -> None:
    judge.add_rule("", sequence=["A", "C", "B"])
    evaluators = [grader()]

    first = await run_dataset(
        dataset(1), runnable=shout, evaluators=evaluators, epochs=3, reducer="mean"
    )
    sent = len(judge.requests)
    again = await run_dataset(
        dataset(1), runnable=shout, evaluators=evaluators, epochs=3, reducer="mean"
    )

    epochs = [[e.score for e in epoch.evaluations] for epoch in again.entries[0].epochs]
    assert sent == 3 and len(judge.requests) == 3  # three epochs asked, then none
    assert epochs == [[1.0], [0.0], [0.5]]
    assert scores(again) == scores(first) == [[0.5]]
    assert first.entries[0].judge_usage[MODEL].requests == 3
    assert again.entries[0].judge_usage[MODEL].cache_hits == 3


@pytest.mark.anyio
async def test_autoevals_judges_are_answered_from_the_cache_too(judge: FakeJudgeServer) -> None:
    judge.add_rule("", choice="C")
    first = await Factuality()(case())
    again = await Factuality()(case())

    assert first.score == again.score == 1.0
    assert len(judge.requests) == 1


@pytest.mark.anyio
async def test_without_a_cache_every_request_is_sent(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.reset()
    judge_server.reset_stats()
    with configure_judge(base_url=judge_server.base_url, api_key="k", model=MODEL, cache=False):
        await grader()(case())
        await grader()(case())

    assert len(judge_server.requests) == 2


class CommittedOnlyWhenFlushed(JudgeCache):
    """A cache whose writer thread never starts: its writes reach the file only on a flush."""

    def _wake_writer(self) -> None:
        pass


@pytest.mark.anyio
async def test_a_run_leaves_its_judge_responses_in_the_file_when_it_returns(
    judge_server: FakeJudgeServer, cache_file: Path
) -> None:
    judge_server.reset()
    judge_server.reset_stats()
    cache = CommittedOnlyWhenFlushed(cache_file)
    with configure_judge(base_url=judge_server.base_url, api_key="k", model=MODEL, cache=cache):
        await run_dataset(dataset(2), runnable=shout, evaluators=[Repeated(grader(), n=2)])

        with sqlite3.connect(cache_file) as connection:
            stored = connection.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    assert stored == 4


# -- what is never cached ---------------------------------------------------------------------


def chat_body(message: dict[str, Any], finish_reason: str = "tool_calls") -> str:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "select_choice", "arguments": '{"reasons": "ok", "choice": "A"}'},
    }
    return json.dumps(
        {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]}
                    | message,
                    "finish_reason": finish_reason,
                }
            ],
        }
    )


@pytest.mark.anyio
async def test_an_error_reply_is_not_kept(judge: FakeJudgeServer) -> None:
    judge.fail_next(500)

    failed = await grader()(case())
    scored = await grader()(case())

    assert failed.status == "errored" and scored.score == 1.0
    assert len(judge.requests) == 2


@pytest.mark.anyio
async def test_an_answer_that_does_not_parse_is_not_kept(judge: FakeJudgeServer) -> None:
    judge.add_rule("", sequence=["Z", "A"])  # "Z" is no choice of the grader's

    failed = await grader()(case())
    scored = await grader()(case())

    assert failed.status == "errored" and scored.score == 1.0
    assert len(judge.requests) == 2


@pytest.mark.anyio
async def test_a_reply_cut_short_is_used_but_not_kept(judge: FakeJudgeServer) -> None:
    judge.malformed_next(body=chat_body({}, finish_reason="length"))

    first = await grader()(case())
    await grader()(case())

    assert first.score == 1.0
    assert len(judge.requests) == 2


@pytest.mark.anyio
async def test_a_refusal_is_not_kept(judge: FakeJudgeServer) -> None:
    judge.malformed_next(body=chat_body({"refusal": "I cannot grade this."}))

    await grader()(case())
    await grader()(case())

    assert len(judge.requests) == 2


# -- keys -----------------------------------------------------------------------------------------


def key(request: dict[str, Any], sample: JudgeSample | None = None) -> str | None:
    return request_key(
        endpoint="http://127.0.0.1:1/v1",
        api="chat.completions",
        request=request,
        sample=sample or JudgeSample(),
    )


def test_the_key_covers_the_endpoint_the_request_and_the_sample() -> None:
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.7}
    other_endpoint = request_key(
        endpoint="http://127.0.0.1:2/v1", api="chat.completions", request=request,
        sample=JudgeSample(),
    )  # fmt: skip

    assert key(request) == key(dict(reversed(list(request.items()))))
    assert key(request) != other_endpoint
    assert key(request) != key({**request, "temperature": 0.2})
    assert key(request) != key({**request, "model": "n"})
    assert key(request) != key(request, JudgeSample(path=(1,)))
    assert key(request) != key(request, JudgeSample(epoch=1))


def test_a_request_holding_something_that_is_not_json_has_no_key() -> None:
    assert key({"model": "m", "messages": [object()]}) is None


def test_the_first_sample_of_a_repetition_is_the_plain_call() -> None:
    with judge_sample(0):
        first = current_judge_sample()
    assert first == current_judge_sample() == JudgeSample()


def test_nested_samples_never_share_a_key() -> None:
    with judge_sample(0), judge_sample(3):
        inner_third = current_judge_sample()
    with judge_sample(3), judge_sample(0):
        outer_third = current_judge_sample()
    with judge_epoch(2), judge_sample(1):
        epoch_two = current_judge_sample()

    assert inner_third == JudgeSample(path=(0, 3))
    assert outer_third == JudgeSample(path=(3,))
    assert epoch_two == JudgeSample(epoch=2, path=(1,))


def test_a_negative_sample_index_is_refused() -> None:
    with pytest.raises(ValueError, match=r"judge_sample\(index\) must be a whole number >= 0"):
        with judge_sample(-1):
            pass


@pytest.mark.anyio
async def test_transport_options_are_not_part_of_the_key(
    judge: FakeJudgeServer, cache_file: Path
) -> None:
    config = judge_config()
    client = judge_client(config).caching
    request = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hello"}],
    }

    async def ask(timeout: float) -> Any:
        return await client.chat.completions.create(**request, timeout=timeout)

    first = await run_judge_call(config, lambda: ask(30.0))
    again = await run_judge_call(config, lambda: ask(10.0))

    assert again.choices[0].message.content == first.choices[0].message.content
    assert len(judge.requests) == 1


# -- the file -------------------------------------------------------------------------------------


def reply(body: str = "{}", model: str = "m") -> CachedReply:
    return CachedReply(api="embeddings", model=model, body=body, input_tokens=3)


def test_a_key_keeps_its_first_response(cache_file: Path) -> None:
    cache = JudgeCache(cache_file)
    cache.put("k", reply('{"first": true}'))
    cache.put("k", reply('{"second": true}'))

    stored = cache.get("k")
    assert stored is not None and stored.body == '{"first": true}' and stored.input_tokens == 3
    assert cache.stats().entries == 1


def stored_keys(cache_file: Path) -> set[str]:
    with sqlite3.connect(cache_file) as connection:
        return {row[0] for row in connection.execute("SELECT key FROM responses")}


def test_a_response_reaches_the_file_within_a_second_without_a_flush(cache_file: Path) -> None:
    cache = JudgeCache(cache_file)
    cache.put("k", reply())

    deadline = time.monotonic() + 5.0
    while "k" not in stored_keys(cache_file) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "k" in stored_keys(cache_file)


def test_responses_older_than_the_ttl_are_not_used(cache_file: Path) -> None:
    cache = JudgeCache(cache_file)
    cache.put("k", reply())
    cache.flush()
    with sqlite3.connect(cache_file) as connection:
        connection.execute("UPDATE responses SET created = created - 7200")

    assert JudgeCache(cache_file, ttl=3600).get("k") is None
    assert JudgeCache(cache_file, ttl=86400).get("k") is not None


def test_past_its_size_limit_the_responses_used_longest_ago_are_evicted(
    cache_file: Path,
) -> None:
    cache = JudgeCache(cache_file, max_bytes=20_000)
    body = json.dumps({"text": "x" * 900})
    for index in range(10):
        cache.put(f"old-{index}", reply(body))
    cache.flush()
    with sqlite3.connect(cache_file) as connection:
        connection.execute("UPDATE responses SET used = used - 3600")
    assert cache.get("old-0") is not None  # used an hour later than the others: kept longer
    for index in range(15):
        cache.put(f"new-{index}", reply(body))

    stats = cache.stats()
    assert stats.bytes <= 20_000
    assert cache.get("old-0") is not None
    assert cache.get("old-1") is None
    assert cache.get("new-14") is not None


def test_stats_count_responses_and_tokens_per_model(cache_file: Path) -> None:
    cache = JudgeCache(cache_file)
    cache.put("a", reply(model="m1"))
    cache.put("b", reply(model="m1"))
    cache.put("c", reply(model="m2"))

    stats = cache.stats()
    assert stats.entries == 3
    assert stats.models == {"m1": (2, 6), "m2": (1, 3)}
    assert stats.oldest is not None and stats.problem is None


def test_clear_removes_every_response(cache_file: Path) -> None:
    cache = JudgeCache(cache_file)
    cache.put("a", reply())
    cache.put("b", reply())

    assert cache.clear() == 2
    assert cache.get("a") is None and cache.stats().entries == 0


@pytest.mark.anyio
async def test_a_corrupted_cache_file_is_bypassed_with_one_warning(
    judge: FakeJudgeServer, cache_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache_file.write_bytes(b"this is not a database " * 100)

    with caplog.at_level(logging.WARNING, logger="evaltrace"):
        first = await grader()(case())
        again = await grader()(case())

    assert first.score == again.score == 1.0
    assert len(judge.requests) == 2
    warnings = [r.getMessage() for r in caplog.records if "judge cache" in r.getMessage()]
    assert len(warnings) == 1
    assert str(cache_file) in warnings[0] and "evaltrace cache clear" in warnings[0]


def test_clear_deletes_a_file_that_is_not_a_usable_cache(cache_file: Path) -> None:
    cache_file.write_bytes(b"garbage" * 100)
    cache = JudgeCache(cache_file)

    assert cache.stats().problem is not None
    assert cache.clear() == 0
    cache.put("k", reply())
    assert cache.get("k") is not None


def test_a_cache_file_written_by_a_newer_evaltrace_is_bypassed(
    cache_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with sqlite3.connect(cache_file) as connection:
        connection.execute("PRAGMA user_version = 99")

    with caplog.at_level(logging.WARNING, logger="evaltrace"):
        cache = JudgeCache(cache_file)
        cache.put("k", reply())
        assert cache.get("k") is None

    assert "newer evaltrace" in caplog.text


def test_a_cache_path_that_is_a_folder_is_bypassed(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)

    cache.put("k", reply())
    assert cache.get("k") is None
    assert cache.problem is not None


WRITER = """
import sys
from evaltrace.llm import CachedReply, JudgeCache

cache = JudgeCache(sys.argv[1])
me = sys.argv[2]
for index in range(200):
    cache.put(f"{me}-{index}", CachedReply(api="embeddings", model=me, body='{"n": %d}' % index))
    cache.put(f"shared-{index}", CachedReply(api="embeddings", model=me, body="{}"))
    assert cache.get(f"{me}-{index}") is not None, index
print("done")
"""


def test_four_processes_writing_one_cache_lose_nothing(cache_file: Path) -> None:
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(cache_file), f"p{number}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for number in range(4)
    ]
    outcomes = [writer.communicate(timeout=120) for writer in writers]

    assert [out for out, _ in outcomes] == ["done\n"] * 4, [error for _, error in outcomes]
    with sqlite3.connect(cache_file) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        count = connection.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        totals = connection.execute("SELECT entries FROM totals").fetchone()[0]
    assert count == totals == 4 * 200 + 200


def test_threads_writing_one_cache_lose_nothing(cache_file: Path) -> None:
    cache = JudgeCache(cache_file)

    def write(me: int) -> None:
        for index in range(100):
            cache.put(f"{me}-{index}", reply())

    async def all_threads() -> None:
        async with anyio.create_task_group() as group:
            for me in range(4):
                group.start_soon(anyio.to_thread.run_sync, write, me)

    anyio.run(all_threads)
    assert cache.stats().entries == 400


def test_the_cache_given_to_configure_judge_is_checked() -> None:
    with pytest.raises(ConfigurationError, match=r"configure_judge\(cache=\.\.\.\) takes True"):
        configure_judge(cache=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"ttl=\.\.\.\) must be a positive number"):
        JudgeCache("x.sqlite3", ttl=0)


def test_the_environment_variable_names_the_cache_file(
    monkeypatch: pytest.MonkeyPatch, cache_file: Path
) -> None:
    monkeypatch.setenv("EVALTRACE_JUDGE_CACHE", str(cache_file))
    configured = judge_config().cache
    monkeypatch.setenv("EVALTRACE_JUDGE_CACHE", "off")

    assert configured is not None and configured.path == cache_file
    assert judge_config().cache is None


# -- what a run spent --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_each_entry_records_its_judges_tokens_per_model_and_the_run_adds_them_up(
    judge: FakeJudgeServer,
) -> None:
    evaluators = [Repeated(grader(), n=2), create_llm_evaluator("other", "{eval_output}")]
    other = create_llm_evaluator("other", "{eval_output}", model="other-model")

    result = await run_dataset(
        dataset(2), runnable=shout, evaluators=[*evaluators[:1], other], threshold=0.0
    )

    for entry in result.entries:
        assert set(entry.judge_usage) == {MODEL, "other-model"}
        assert entry.judge_usage[MODEL].requests == 2
        assert entry.judge_usage[MODEL].input_tokens > 0
        assert entry.judge_usage[MODEL].output_tokens > 0
        assert entry.judge_usage["other-model"].requests == 1
    assert result.judge_usage[MODEL].requests == 4
    assert result.judge_usage[MODEL].input_tokens == sum(
        entry.judge_usage[MODEL].input_tokens for entry in result.entries
    )


@pytest.mark.anyio
async def test_a_run_records_cache_hits_misses_and_the_tokens_saved(
    judge: FakeJudgeServer, tmp_path: Path
) -> None:
    evaluators = [Repeated(grader(), n=3)]
    first = await run_dataset(dataset(2), runnable=shout, evaluators=evaluators)
    again = await run_dataset(
        dataset(2), runnable=shout, evaluators=evaluators, output_dir=tmp_path / "runs"
    )

    spent, saved = first.judge_usage[MODEL], again.judge_usage[MODEL]
    assert (spent.requests, spent.cache_misses, spent.cache_hits) == (6, 6, 0)
    assert (saved.requests, saved.cache_misses, saved.cache_hits) == (0, 0, 6)
    assert saved.saved_input_tokens == spent.input_tokens
    assert saved.saved_output_tokens == spent.output_tokens
    assert load_result(tmp_path / "runs" / again.run_id).judge_usage == again.judge_usage


@pytest.mark.anyio
async def test_the_report_says_what_the_judges_spent_and_what_the_cache_saved(
    judge: FakeJudgeServer,
) -> None:
    evaluators = [Repeated(grader(), n=2)]
    await run_dataset(dataset(1), runnable=shout, evaluators=evaluators)
    again = await run_dataset(dataset(1), runnable=shout, evaluators=evaluators)

    report = render_report([again], plain=True)

    assert "judges: 0 requests; cache: 2 hits, 0 misses" in report


@pytest.mark.anyio
async def test_merged_shards_add_up_their_judge_usage(
    judge: FakeJudgeServer, tmp_path: Path
) -> None:
    path = write_project(tmp_path, judge.base_url)
    shards = [
        await run_dataset(path, shard=f"{k}/2", output_dir=tmp_path / "shards") for k in (1, 2)
    ]

    merged = load_result(merge_results([tmp_path / "shards" / r.run_id for r in shards], tmp_path))

    assert merged.judge_usage["m"].requests == 6
    assert merged.judge_usage["m"] == shards[0].judge_usage["m"] + shards[1].judge_usage["m"]


def test_a_run_result_without_judge_usage_still_loads() -> None:
    data = json.loads(RunResult(name="old").model_dump_json())
    del data["judge_usage"]

    assert RunResult.model_validate(data).judge_usage == {}


def test_judge_usage_adds_up_field_by_field() -> None:
    one = JudgeUsage(requests=1, input_tokens=10, cached_tokens=4, cache_misses=1)
    two = JudgeUsage(cache_hits=2, saved_input_tokens=20, saved_output_tokens=6)

    total = one + two
    assert (total.requests, total.cache_hits, total.saved_tokens) == (1, 2, 26)


# -- fewer, cheaper calls -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_judges_instructions_lead_as_a_system_message_the_same_for_every_entry(
    judge: FakeJudgeServer,
) -> None:
    await run_dataset(dataset(3), runnable=shout, evaluators=[grader()])

    systems = {json.dumps(r.body["messages"][0]) for r in judge.requests}
    roles = {tuple(m["role"] for m in r.body["messages"]) for r in judge.requests}
    assert len(systems) == 1 and roles == {("system", "user")}
    assert "select_choice" in json.loads(systems.pop())["content"]


@pytest.mark.anyio
async def test_the_tokens_a_provider_read_from_its_prompt_cache_are_recorded(
    judge: FakeJudgeServer,
) -> None:
    result = await run_dataset(dataset(3), runnable=shout, evaluators=[grader()], concurrency=1)

    cached = [entry.judge_usage[MODEL].cached_tokens for entry in result.entries]
    assert cached[0] == 0 and cached[1] > 0 and cached[2] == cached[1]
    assert result.judge_usage[MODEL].cached_tokens == sum(cached)


@pytest.mark.anyio
async def test_a_call_answered_from_the_cache_does_not_wait_for_the_rate_limiter(
    judge_server: FakeJudgeServer, cache_file: Path
) -> None:
    judge_server.reset()
    judge_server.reset_stats()
    limiter = RateLimiter(requests_per_minute=1)
    with configure_judge(
        base_url=judge_server.base_url, api_key="k", model=MODEL, cache=cache_file
    ):
        await grader()(case())  # fills the cache, outside the limiter
        with configure_judge(rate_limiter=limiter), anyio.fail_after(5):
            results = [await grader()(case()) for _ in range(3)]

    assert [result.score for result in results] == [1.0, 1.0, 1.0]
    assert len(judge_server.requests) == 1


# -- the command line -------------------------------------------------------------------------


PROJECT = """
from evaltrace.judges import Repeated, configure_judge, create_llm_evaluator
from evaltrace.testing import FakeJudgeServer

GRADER = Repeated(
    create_llm_evaluator("grader", "Q: {{eval_input}} A: {{eval_output}}",
                         choice_scores={{"A": 1.0, "B": 0.0}}),
    n=3,
)


class App:
    def setup(self):
        self.token = configure_judge(base_url="{base_url}", api_key="k", model="m")

    def run(self, question):
        return question.upper()

    def teardown(self):
        self.token.restore()
"""


def write_project(folder: Path, base_url: str) -> Path:
    (folder / "app.py").write_text(textwrap.dedent(PROJECT.format(base_url=base_url)))
    data = {
        "runnable": "app.py:App",
        "evaluators": ["app.py:GRADER"],
        "entries": [{"name": f"e{i}", "entry_kwargs": {"question": f"q{i}"}} for i in range(2)],
    }
    path = folder / "qa.evaltrace.json"
    path.write_text(json.dumps(data))
    return path


def evaltrace(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    environment = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "evaltrace", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_evaltrace_test_keeps_judge_responses_in_the_file_given(
    judge_server: FakeJudgeServer, tmp_path: Path, cache_file: Path
) -> None:
    judge_server.reset()
    judge_server.reset_stats()
    path = write_project(tmp_path, judge_server.base_url)

    first = evaltrace("test", str(path), "--judge-cache", str(cache_file), cwd=tmp_path)
    again = evaltrace("test", str(path), "--judge-cache", str(cache_file), cwd=tmp_path)

    assert first.returncode == again.returncode == 0, first.stderr
    assert len(judge_server.requests) == 6
    assert "cache: 0 hits, 6 misses" in first.stdout
    assert "judges: 0 requests; cache: 6 hits, 0 misses" in again.stdout
    stats = evaltrace("cache", "stats", "--judge-cache", str(cache_file), cwd=tmp_path)
    assert "responses: 6" in stats.stdout


def test_evaltrace_test_without_the_judge_cache_asks_every_time(
    judge_server: FakeJudgeServer, tmp_path: Path, cache_file: Path
) -> None:
    judge_server.reset()
    judge_server.reset_stats()
    path = write_project(tmp_path, judge_server.base_url)
    env = {"EVALTRACE_JUDGE_CACHE": str(cache_file)}

    evaltrace("test", str(path), "--no-judge-cache", cwd=tmp_path, env=env)
    evaltrace("test", str(path), "--no-judge-cache", cwd=tmp_path, env=env)

    assert len(judge_server.requests) == 12
    assert not cache_file.exists()


def test_evaltrace_test_uses_the_default_cache_file_unless_told_otherwise(
    judge_server: FakeJudgeServer, tmp_path: Path
) -> None:
    judge_server.reset()
    judge_server.reset_stats()
    path = write_project(tmp_path, judge_server.base_url)
    env = {"EVALTRACE_JUDGE_CACHE": "", "XDG_CACHE_HOME": str(tmp_path / "cache-home")}

    evaltrace("test", str(path), cwd=tmp_path, env=env)
    evaltrace("test", str(path), cwd=tmp_path, env=env)
    where = evaltrace("cache", "path", cwd=tmp_path, env=env).stdout.strip()

    assert len(judge_server.requests) == 6
    assert Path(where) == tmp_path / "cache-home" / "evaltrace" / "judge-cache.sqlite3"
    assert Path(where).is_file()


def test_evaltrace_cache_clear_empties_the_cache(tmp_path: Path, cache_file: Path) -> None:
    JudgeCache(cache_file).put("k", reply())

    cleared = evaltrace("cache", "clear", "--judge-cache", str(cache_file), cwd=tmp_path)
    stats = evaltrace(
        "cache", "stats", "--judge-cache", str(cache_file), "--format", "json", cwd=tmp_path
    )

    assert cleared.returncode == 0 and "removed 1 response from" in cleared.stdout
    assert json.loads(stats.stdout)["entries"] == 0


def test_evaltrace_cache_stats_names_the_problem_of_a_corrupted_file(
    tmp_path: Path, cache_file: Path
) -> None:
    cache_file.write_bytes(b"garbage" * 100)

    stats = evaltrace("cache", "stats", "--judge-cache", str(cache_file), cwd=tmp_path)

    assert stats.returncode == 1
    assert "problem:" in stats.stdout and "evaltrace cache clear" in stats.stdout


def test_the_judge_cache_options_contradicting_each_other_are_refused(tmp_path: Path) -> None:
    both = evaltrace(
        "test", "x.json", "--judge-cache", "c.sqlite3", "--no-judge-cache", cwd=tmp_path
    )

    assert both.returncode == 2
    assert "--judge-cache PATH and --no-judge-cache contradict each other" in both.stderr
