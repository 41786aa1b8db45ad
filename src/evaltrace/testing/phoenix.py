"""Arize Phoenix as a real collector for tests: started on loopback, read back, stopped.

Phoenix is not a dependency of evaltrace: it lives in a virtual environment of its own
(``.ci/run`` builds one), and :class:`PhoenixServer` runs its ``phoenix`` executable as a
subprocess on free 127.0.0.1 ports, with telemetry off and a temporary working directory, and
stops it by its process id.

Example:
    >>> with PhoenixServer("/path/to/phoenix-venv/bin/phoenix") as phoenix:  # doctest: +SKIP
    ...     # export to phoenix.otlp_http_endpoint or phoenix.otlp_grpc_endpoint, then:
    ...     spans = phoenix.spans("my-project", count=3)
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import IO, Any

from evaltrace.errors import EvaltraceError
from evaltrace.testing.lifecycle import Started

__all__ = ["PhoenixError", "PhoenixServer"]


class PhoenixError(EvaltraceError, RuntimeError):
    """Phoenix did not start, stopped, or did not hold the spans asked for in time."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PhoenixServer(Started):
    """``phoenix serve`` on free loopback ports, telemetry off, in a temporary directory.

    Args:
        executable: The ``phoenix`` executable of Phoenix's own virtual environment.
        startup_timeout: Seconds to wait for its REST API to answer.
    """

    def __init__(self, executable: str | os.PathLike[str], *, startup_timeout: float = 120) -> None:
        self.executable = os.fspath(executable)
        """The ``phoenix`` executable."""
        self.startup_timeout = startup_timeout
        """Seconds :meth:`start` waits for the REST API to answer."""
        self.http_port = 0
        """The HTTP port (REST API and OTLP/HTTP), once started."""
        self.grpc_port = 0
        """The OTLP/gRPC port, once started."""
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: tempfile.TemporaryDirectory[str] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The REST API's base URL, which is also the OTLP/HTTP endpoint."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def otlp_http_endpoint(self) -> str:
        """For ``OTEL_EXPORTER_OTLP_ENDPOINT`` with ``http/protobuf``."""
        return self.base_url

    @property
    def otlp_grpc_endpoint(self) -> str:
        """For ``OTEL_EXPORTER_OTLP_ENDPOINT`` with ``grpc`` (an insecure channel)."""
        return f"http://127.0.0.1:{self.grpc_port}"

    @property
    def pid(self) -> int | None:
        """The process id of the running server."""
        return None if self._process is None else self._process.pid

    def start(self) -> PhoenixServer:
        """Start Phoenix and wait until its REST API answers.

        Raises:
            PhoenixError: It exited or did not answer within :attr:`startup_timeout` (the
                message ends with its log).
        """
        if not Path(self.executable).is_file():
            raise PhoenixError(f"no Phoenix executable at {self.executable!r}")
        self.http_port, self.grpc_port = _free_port(), _free_port()
        self._workdir = tempfile.TemporaryDirectory(prefix="evaltrace-phoenix-")
        env = {
            **os.environ,
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.http_port),
            "PHOENIX_GRPC_PORT": str(self.grpc_port),
            "PHOENIX_WORKING_DIR": self._workdir.name,
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        self._log = open(Path(self._workdir.name) / "phoenix.log", "w+b")
        self._process = subprocess.Popen(
            [self.executable, "serve"], env=env, stdout=self._log, stderr=subprocess.STDOUT
        )
        try:
            self._wait_until_up()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_up(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self._process.poll() is not None:
                raise PhoenixError(
                    f"phoenix exited with code {self._process.returncode}:\n{self.log()}"
                )
            try:
                self._get("/v1/projects")
                return
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise PhoenixError(
                        f"phoenix did not answer within {self.startup_timeout} s:\n{self.log()}"
                    ) from None
                time.sleep(0.25)

    def stop(self) -> None:
        """Stop Phoenix by its process id (SIGTERM, then SIGKILL after 30 s)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def log(self) -> str:
        """What Phoenix printed so far."""
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def version(self) -> str:
        """The version of the running Phoenix."""
        with urllib.request.urlopen(f"{self.base_url}/arize_phoenix_version", timeout=10) as r:
            return str(r.read().decode())

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base_url + path, timeout=10) as response:
            return json.load(response)

    def spans(self, project: str, *, count: int, timeout: float = 60) -> list[dict[str, Any]]:
        """The spans of ``project`` (``GET /v1/projects/{project}/spans``), oldest first.

        Waits until the project holds at least ``count`` spans: it answers 404 until its
        first span arrives, and spans are written shortly after they are received.

        Raises:
            PhoenixError: Fewer than ``count`` spans arrived within ``timeout`` seconds.
        """
        path = f"/v1/projects/{urllib.parse.quote(project, safe='')}/spans"
        deadline = time.monotonic() + timeout
        while True:
            spans = self._all_pages(path + "?limit=1000&sort=start_time&order=asc")
            if len(spans) >= count:
                return spans
            if time.monotonic() > deadline:
                raise PhoenixError(
                    f"project {project!r} holds {len(spans)} spans after {timeout} s, "
                    f"expected {count}:\n{self.log()}"
                )
            time.sleep(0.25)

    def _all_pages(self, path: str) -> list[dict[str, Any]]:
        spans: list[dict[str, Any]] = []
        cursor = None
        while True:
            try:
                page = self._get(path + (f"&cursor={cursor}" if cursor else ""))
            except urllib.error.HTTPError as exc:
                if exc.code == 404:  # the project exists once its first span arrived
                    return spans
                raise
            spans.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                return spans
