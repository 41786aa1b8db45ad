"""``evaltrace fake-llm``: an OpenAI-compatible model server on 127.0.0.1 that answers by rules.

The fake judge of ``evaltrace.testing.fake_judge`` as a command, for trying an app or an
evaluator against a scripted model without a network, a key or a bill: it prints its base URL
(``http://127.0.0.1:PORT/v1``) on one line of standard output and serves until Ctrl-C
(SIGINT) or SIGTERM.
"""

from __future__ import annotations

import sys

import click

from evaltrace.cli._terminal import CommandError, err, out

__all__ = ["fake_llm"]


@click.command("fake-llm", short_help="Serve a scripted OpenAI-compatible model on 127.0.0.1.")
@click.option(
    "--rules",
    "rules_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="A rules file (YAML, or JSON): what to answer to which request.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="The port to listen on; 0 picks a free one.",
)
def fake_llm(rules_file: str | None, port: int) -> int:
    """Serve an OpenAI-compatible model on 127.0.0.1 that answers by the rules in FILE.

    It answers chat completions, the Responses API, embeddings and moderations (see
    docs/testing-offline-judges.md for the rules file). The base URL is printed on one line
    of standard output; give it to an OpenAI client as base_url (or OPENAI_BASE_URL).
    Ctrl-C or SIGTERM stops it.

    Exit code 0 once stopped; 2 when the rules file cannot be read or the port is taken.
    """
    from evaltrace.errors import ConfigurationError
    from evaltrace.testing.fake_judge import (
        FakeJudgeServer,
        RulesFileError,
        read_rules,
        serve_in_foreground,
    )

    try:
        judge = FakeJudgeServer(port=port)
        rules = read_rules(rules_file) if rules_file is not None else []
        judge.add_rules(rules)
    except (RulesFileError, ConfigurationError) as exc:
        raise CommandError(str(exc)) from None

    def announce(url: str) -> None:
        out(url)
        sys.stdout.flush()
        source = f" from {rules_file}" if rules_file is not None else ""
        err(
            f"evaltrace fake-llm: {len(rules)} {'rule' if len(rules) == 1 else 'rules'}{source}; "
            "serving until Ctrl-C"
        )

    try:
        serve_in_foreground(judge, announce=announce)
    except ConfigurationError as exc:  # the port is taken
        raise CommandError(str(exc)) from None
    return 0
