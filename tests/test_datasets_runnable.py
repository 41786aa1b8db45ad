"""The Runnable protocol and RunnableAdapter: lifecycle, argument passing, argument checks."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict, ValidationError
from typing_extensions import TypedDict

from evaltrace.datasets import (
    DatasetProblem,
    NotRunnableError,
    ReferenceLoader,
    Runnable,
    RunnableAdapter,
    RunnableLifecycleError,
)

USER_CODE = Path(__file__).parent / "fixtures" / "datasets" / "user_code"

pytestmark = pytest.mark.anyio


def load_app(tmp_path: Path, name: str) -> Any:
    shutil.copy(USER_CODE / "app.py", tmp_path / "app.py")
    return ReferenceLoader().load(
        f"app.py:{name}", file="t.json", location="runnable", base_dir=tmp_path
    )


def check(target: object, entry_kwargs: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    problems = RunnableAdapter(target).check_arguments(
        entry_kwargs, file="t.json", location="entries[0].entry_kwargs"
    )
    return [(p.location, p.message, p.hint) for p in problems]


class Question(BaseModel):
    question: str
    tone: str = "plain"


class Lifecycle:
    def __init__(self) -> None:
        self.events: list[str] = []

    async def setup(self) -> None:
        self.events.append("setup")

    async def run(self, args: Question) -> str:
        self.events.append(f"run {args.question}")
        return args.question

    async def teardown(self) -> None:
        await anyio.sleep(0)  # a teardown that awaits must still finish when cancelled
        self.events.append("teardown")


# -- lifecycle ------------------------------------------------------------------------------------


async def test_a_runnable_class_is_created_set_up_run_and_torn_down(tmp_path: Path) -> None:
    app_class = load_app(tmp_path, "QuestionApp")
    events = __import__(app_class.__module__).EVENTS
    adapter = RunnableAdapter(app_class)

    async with adapter.session():
        output = await adapter.run({"question": "hi", "context": {"locale": "fr"}})

    assert output == "hi (fr)"
    assert events == ["create", "setup", "teardown"]


async def test_runs_of_one_instance_happen_concurrently() -> None:
    both_started = anyio.Event()
    started: list[str] = []

    class App:
        async def run(self, args: Question) -> str:
            started.append(args.question)
            if len(started) == 2:
                both_started.set()
            await both_started.wait()  # only returns if the other run started meanwhile
            return args.question

    adapter = RunnableAdapter(App)
    outputs: list[str] = []
    with anyio.fail_after(30):  # a deadlock guard, not a timing assertion
        async with adapter.session(), anyio.create_task_group() as group:
            for question in ("a", "b"):

                async def one(question: str = question) -> None:
                    outputs.append(await adapter.run({"question": question}))

                group.start_soon(one)

    assert sorted(outputs) == ["a", "b"]


async def test_teardown_runs_when_a_run_raises_in_the_session() -> None:
    app = Lifecycle()
    adapter = RunnableAdapter(app)

    with pytest.raises(ValidationError):
        async with adapter.session():
            await adapter.run({"tone": "no question"})

    assert app.events == ["setup", "teardown"]


async def test_teardown_finishes_when_the_session_is_cancelled() -> None:
    app = Lifecycle()
    adapter = RunnableAdapter(app)

    with anyio.CancelScope() as scope:
        async with adapter.session():
            scope.cancel()
            await anyio.sleep_forever()

    assert app.events == ["setup", "teardown"]


async def test_teardown_runs_after_setup_raised_part_way() -> None:
    class App(Lifecycle):
        async def setup(self) -> None:
            raise ConnectionError("database down")

    app = App()
    with pytest.raises(ConnectionError):
        async with RunnableAdapter(app).session():
            pass

    assert app.events == ["teardown"]


async def test_no_teardown_when_the_instance_could_not_be_created() -> None:
    torn_down: list[bool] = []

    class App:
        @classmethod
        def create(cls) -> App:
            raise RuntimeError("no credentials")

        async def run(self, args: Question) -> str:
            return ""

        async def teardown(self) -> None:
            torn_down.append(True)

    with pytest.raises(RuntimeError, match="no credentials"):
        async with RunnableAdapter(App).session():
            pass

    assert torn_down == []


async def test_an_async_create_is_awaited() -> None:
    class App:
        def __init__(self, prefix: str) -> None:
            self.prefix = prefix

        @classmethod
        async def create(cls) -> App:
            return cls(prefix="> ")

        def run(self, question: str) -> str:
            return self.prefix + question

    adapter = RunnableAdapter(App)
    async with adapter.session():
        assert await adapter.run({"question": "hi"}) == "> hi"


async def test_running_a_class_before_setup_is_a_lifecycle_error() -> None:
    with pytest.raises(RunnableLifecycleError, match="before setup"):
        await RunnableAdapter(Lifecycle).run({"question": "hi"})


# -- how arguments are passed ---------------------------------------------------------------------


async def test_a_plain_sync_function_gets_keyword_arguments_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()

    def answer(question: str, tone: str = "plain") -> tuple[str, bool]:
        return f"{tone}: {question}", threading.get_ident() != loop_thread

    adapter = RunnableAdapter(answer)

    assert not adapter.takes_one_argument
    assert await adapter.run({"question": "hi"}) == ("plain: hi", True)


async def test_a_plain_async_function_gets_keyword_arguments() -> None:
    async def answer(question: str, tone: str = "plain") -> str:
        return f"{tone}: {question}"

    assert await RunnableAdapter(answer).run({"question": "hi", "tone": "warm"}) == "warm: hi"


async def test_an_object_with_a_run_method_is_used_as_is_with_its_hooks() -> None:
    app = Lifecycle()
    adapter = RunnableAdapter(app)

    async with adapter.session():
        await adapter.run({"question": "hi"})

    assert app.events == ["setup", "run hi", "teardown"]


@dataclasses.dataclass
class SearchArgs:
    question: str
    limit: int = 3


class OpenArgs(BaseModel):
    model_config = ConfigDict(extra="allow")
    question: str


class TypedArgs(TypedDict):
    question: str


async def test_a_dataclass_argument_is_built_from_entry_kwargs() -> None:
    def search(args: SearchArgs) -> SearchArgs:
        return args

    assert await RunnableAdapter(search).run({"question": "q", "limit": "5"}) == SearchArgs("q", 5)


async def test_a_dict_argument_receives_entry_kwargs_as_they_are() -> None:
    def raw(args: dict[str, Any]) -> dict[str, Any]:
        return args

    assert await RunnableAdapter(raw).run({"anything": [1, 2]}) == {"anything": [1, 2]}


def test_an_unannotated_or_plain_single_parameter_gets_a_keyword_argument() -> None:
    def echo(question):  # type: ignore[no-untyped-def]
        return question

    def shout(question: str) -> str:
        return question.upper()

    assert not RunnableAdapter(echo).takes_one_argument
    assert not RunnableAdapter(shout).takes_one_argument


def test_the_one_argument_model_is_resolved_under_future_annotations(tmp_path: Path) -> None:
    adapter = RunnableAdapter(load_app(tmp_path, "QuestionApp"))

    assert adapter.takes_one_argument
    assert adapter.argument_type.__name__ == "Question"


def test_an_object_following_the_protocol_is_a_runnable() -> None:
    class App(Runnable[Question]):
        async def run(self, args: Question) -> str:
            return args.question

    assert isinstance(App(), Runnable)
    assert isinstance(Lifecycle(), Runnable)
    assert not isinstance(len, Runnable)


# -- checking arguments before running ------------------------------------------------------------


def test_a_missing_model_field_is_a_problem_at_the_entry_kwargs() -> None:
    assert check(Lifecycle, {"tone": "warm"}) == [
        (
            "entries[0].entry_kwargs",
            "missing required field 'question'",
            "Lifecycle validates entry_kwargs as Question",
        )
    ]


def test_an_unknown_model_field_is_a_problem_with_the_closest_field() -> None:
    [(location, message, hint)] = check(Lifecycle, {"question": "q", "tome": "warm"})

    assert (location, message) == ("entries[0].entry_kwargs.tome", "unexpected argument 'tome'")
    assert hint == "did you mean 'tone'? Question has the fields: question, tone"


def test_a_wrong_nested_value_is_a_problem_at_its_place(tmp_path: Path) -> None:
    [(location, message, _)] = check(
        load_app(tmp_path, "QuestionApp"), {"question": "q", "context": {"locale": 3}}
    )

    assert location == "entries[0].entry_kwargs.context.locale"
    assert message == "invalid for Question: Input should be a valid string"


def test_a_model_allowing_extra_keys_accepts_unknown_ones() -> None:
    def run(args: OpenArgs) -> str:
        return args.question

    assert check(run, {"question": "q", "anything": 1}) == []


def test_typed_dict_fields_are_the_known_keys() -> None:
    def run(args: TypedArgs) -> str:
        return args["question"]

    assert [message for _, message, _ in check(run, {"questin": "q"})] == [
        "unexpected argument 'questin'",
        "missing required field 'question'",
    ]


def test_missing_and_unexpected_keyword_arguments_are_problems() -> None:
    def answer(question: str, *, tone: str = "plain") -> str:
        return question

    assert check(answer, {"tnoe": "warm"}) == [
        (
            "entries[0].entry_kwargs",
            "missing required argument 'question'",
            "answer takes: question, tone",
        ),
        (
            "entries[0].entry_kwargs.tnoe",
            "unexpected argument 'tnoe'",
            "did you mean 'tone'? answer takes: question, tone",
        ),
    ]


def test_a_function_taking_any_keywords_accepts_any_key() -> None:
    def anything(**kwargs: Any) -> None:
        pass

    assert check(anything, {"x": 1, "y": 2}) == []


def test_problems_are_dataset_problems_naming_the_file() -> None:
    problems = RunnableAdapter(Lifecycle).check_arguments({}, file="t.json", location="loc")

    assert all(isinstance(p, DatasetProblem) and p.file == "t.json" for p in problems)


# -- what cannot be a runnable --------------------------------------------------------------------


def test_something_not_callable_is_not_a_runnable() -> None:
    with pytest.raises(NotRunnableError, match="not a Runnable class"):
        RunnableAdapter(42)


def test_a_class_without_run_is_not_a_runnable() -> None:
    class App:
        pass

    with pytest.raises(NotRunnableError, match="has no run method"):
        RunnableAdapter(App)


def test_a_class_needing_constructor_arguments_and_no_create_is_refused() -> None:
    class App:
        def __init__(self, client: object) -> None:
            self.client = client

        async def run(self, question: str) -> str:
            return question

    with pytest.raises(NotRunnableError, match="define a create\\(\\) classmethod"):
        RunnableAdapter(App)


def test_a_required_positional_only_parameter_is_not_usable() -> None:
    def app(question: str, /) -> str:
        return question

    with pytest.raises(NotRunnableError, match="positional-only"):
        RunnableAdapter(app)


def test_an_argument_type_pydantic_cannot_validate_is_reported() -> None:
    import typing

    if sys.version_info >= (3, 12):
        pytest.skip("pydantic accepts typing.TypedDict from Python 3.12")

    class OldTypedDict(typing.TypedDict):  # pydantic needs typing_extensions' on 3.11
        question: str

    def run(args: OldTypedDict) -> str:
        return args["question"]

    run.__annotations__["args"] = OldTypedDict  # the local class, resolved
    with pytest.raises(NotRunnableError, match="cannot be validated"):
        RunnableAdapter(run)


def test_an_annotation_only_imported_for_type_checking_is_reported(tmp_path: Path) -> None:
    (tmp_path / "late.py").write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from decimal import Decimal\n\n"
        "def run(amount: Decimal) -> str:\n    return str(amount)\n"
    )
    target = ReferenceLoader().load("late.py:run", file="t", location="runnable", base_dir=tmp_path)

    with pytest.raises(NotRunnableError, match="NameError: name 'Decimal' is not defined"):
        RunnableAdapter(target)
