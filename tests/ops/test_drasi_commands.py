"""The commands like Drasi's CLI, end to end: ``drasi-ray run`` of a Drasi resource file, then
``apply``, ``list``, ``describe``, ``watch`` and ``delete`` against it, each a process of its
own, on a real Redis, a real PostgreSQL and a real local Ray; and each command's one line for a
user's mistake.

The running app is Drasi's Getting Started tutorial: its PostgreSQL source file with the
database's place and credentials adapted to this session's server (host, port, user, the
password as a file, the database and slot names: :func:`adapted_source` shows exactly what),
its queries file as published, the rows and changes of its steps made with SQL on its
``Message`` table. The module shares one running app; tests run in file order and each leaves
the app as it found it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import orjson
import pytest
import redis

from drasi_ray.model import keys
from drasi_ray.ops import cli
from drasi_ray.testing.embedded_redis import EmbeddedRedis, free_port
from drasi_ray.testing.postgres import EmbeddedPostgres
from drasi_ray.testing.waiting import wait_until
from tests.differential.tutorials import RESOURCES

ROOT = Path(__file__).parents[2]
DRASI_RAY = str(Path(sys.executable).parent / "drasi-ray")
APP_ID = "tutorial"
GETTING_STARTED = RESOURCES / "getting-started"
QUERIES = str(GETTING_STARTED / "hello-world-queries.yaml")
QUIET = ("--status-interval", "0")
SCHEMA = """
CREATE TABLE "Message" ("MessageId" integer PRIMARY KEY, "From" varchar(50) NOT NULL,
                        "Message" varchar(200) NOT NULL);
CREATE PUBLICATION drasi_publication FOR TABLE "Message";
INSERT INTO "Message" VALUES (1, 'Buzz Lightyear', 'To infinity and beyond!'),
    (2, 'Brian Kernighan', 'Hello World'), (3, 'Antoninus', 'I am Spartacus'),
    (4, 'David', 'I am Spartacus');
"""


def adapted_source(server: EmbeddedPostgres, database: str) -> str:
    """The tutorial's source file, its database found on this session's server: the
    Kubernetes service's host and port, the tutorial's user and written password (which
    drasi_ray refuses: passwordFile names a file instead), the database, and a replication
    slot of its own (slot names are the server's)."""
    text = (GETTING_STARTED / "hello-world-source.yaml").read_text()
    for published, here in (
        ("host: postgres.default.svc.cluster.local", f"host: {server.host}"),
        ("user: test", "user: postgres"),
        ("port: 5432", f"port: {server.port}"),
        ("password: test", f"passwordFile: {server.password_file}"),
        ("database: hello-world", f"database: {database}\n    slotName: slot_{database}"),
    ):
        assert published in text
        text = text.replace(published, here)
    return text


@dataclass(frozen=True, slots=True)
class Done:
    code: int
    out: str
    err: str


class Session:
    """The running app (``drasi-ray run`` in its own process group) and the commands."""

    def __init__(self, url: str, postgres: EmbeddedPostgres, directory: Path) -> None:
        self.url = url
        self.postgres = postgres
        self.directory = directory
        self.database = postgres.create_database(f"hello_{uuid.uuid4().hex[:8]}")
        postgres.execute(SCHEMA, self.database)
        source = self.file("hello-world-source.yaml", adapted_source(postgres, self.database))
        self.out: list[str] = []
        self.process = subprocess.Popen(
            [DRASI_RAY, "run", source, "--app-id", APP_ID, "--redis-url", url, *QUIET],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=environment(),
            cwd=ROOT,
            start_new_session=True,
        )
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()
        self.client = redis.Redis.from_url(url)
        wait_until(self._registered, timeout_s=180, what="drasi-ray run serving the app")

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.out.append(line)

    def _registered(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"drasi-ray run exited: {''.join(self.out)}")
        return bool(self.client.exists(keys.control(APP_ID)))

    def command(self, *words: str) -> list[str]:
        """``drasi-ray WORDS`` for this app (unless the words name another with --app=)."""
        app = [] if any(word.startswith("--app=") for word in words) else ["--app", APP_ID]
        return [DRASI_RAY, *words, *app, "--redis-url", self.url]

    def cli(self, *words: str, timeout: float = 300) -> Done:
        done = subprocess.run(
            self.command(*words),
            capture_output=True,
            text=True,
            env=environment(),
            cwd=ROOT,
            timeout=timeout,
        )
        return Done(done.returncode, done.stdout, done.stderr)

    def ok(self, *words: str) -> str:
        done = self.cli(*words)
        assert done.code == 0, done.err
        return done.out

    def sql(self, statement: str) -> None:
        """A change to the tutorial's database, as its steps make them."""
        self.postgres.execute(statement, self.database)

    def file(self, name: str, text: str) -> str:
        path = self.directory / name
        path.write_text(text)
        return str(path)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.client.close()


def environment() -> dict[str, str]:
    """This process's environment without what would point a command elsewhere (``run``
    then starts a local Ray of its own)."""
    env = dict(os.environ)
    for name in ("RAY_ADDRESS", "DRASI_RAY_APP", "DRASI_RAY_REDIS_URL"):
        env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def session(
    postgres_server: EmbeddedPostgres, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Session]:
    with EmbeddedRedis() as server:
        running = Session(server.url, postgres_server, tmp_path_factory.mktemp("drasi-commands"))
        try:
            yield running
        finally:
            running.stop()


def table_rows(out: str) -> list[list[str]]:
    """The rows of the last table in ``out`` (cells stripped), its header first."""
    lines = [line for line in out.splitlines() if " | " in line or line.strip() == "(no rows)"]
    return [[cell.strip() for cell in line.split("|")] for line in lines]


@pytest.mark.slow
def test_apply_bootstraps_the_tutorials_queries_and_watch_shows_its_results(
    session: Session,
) -> None:
    applied = session.ok("apply", "-f", QUERIES)
    assert applied.splitlines() == [
        "Apply: ContinuousQuery/hello-world-from: created",
        "Apply: ContinuousQuery/message-count: created",
        "Apply: ContinuousQuery/inactive-people: created",
        "Apply operation successful",
    ]
    assert table_rows(session.ok("watch", "hello-world-from", "--once")) == [
        ["MessageFrom", "MessageId"],
        ["Brian Kernighan", "2"],
    ]
    session.sql("""INSERT INTO public."Message" VALUES (5, 'Allen', 'Hello World');""")

    def counted() -> list[list[str]]:
        return table_rows(session.ok("watch", "message-count", "--once"))

    wait_until(lambda: len(counted()) == 4, timeout_s=60, what="Allen's message counted")
    assert counted() == [
        ["Frequency", "Message"],
        ["1", "To infinity and beyond!"],
        ["2", "Hello World"],
        ["2", "I am Spartacus"],
    ]


@pytest.mark.slow
def test_watch_redraws_the_table_as_the_results_change(session: Session) -> None:
    watch = subprocess.Popen(
        session.command("watch", "hello-world-from", "--interval", "0.2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
        cwd=ROOT,
    )
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(watch.stdout or ()), daemon=True)
    reader.start()
    try:
        wait_until(lambda: "hello-world-from: 2 rows\n" in seen, timeout_s=60, what="two rows")
        session.sql("""DELETE FROM public."Message" WHERE "Message" = 'Hello World';""")
        wait_until(lambda: "hello-world-from: 0 rows\n" in seen, timeout_s=60, what="none left")
    finally:
        code = _interrupt(watch)
    assert code == 0
    first = seen.index("hello-world-from: 2 rows\n")
    assert [line.strip() for line in seen[first + 3 : first + 5]] == [
        "Allen           | 5",
        "Brian Kernighan | 2",
    ]
    session.sql(
        """INSERT INTO "Message" VALUES (2, 'Brian Kernighan', 'Hello World'),"""
        """ (5, 'Allen', 'Hello World');"""
    )


def _interrupt(process: subprocess.Popen[str]) -> int:
    """Ctrl-C ``process``; its exit status. One that outlives it 20 s fails the test with
    its Python stack (py-spy) and is killed."""
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        dump = subprocess.run(
            [
                os.path.join(os.path.dirname(sys.executable), "py-spy"),
                "dump",
                "--pid",
                str(process.pid),
            ],
            capture_output=True,
            text=True,
            check=False,
            env=environment(),
        )
        process.kill()
        process.wait(timeout=10)
        raise AssertionError(
            f"still running 20 s after Ctrl-C:\n{dump.stdout}{dump.stderr}"
        ) from None


@pytest.mark.slow
def test_list_and_describe_show_the_resources_with_their_status(session: Session) -> None:
    listing = session.ok("list")
    assert "SOURCES" in listing and "QUERIES" in listing and "REACTIONS" in listing
    rows = {row[0]: row for row in table_rows(listing)}
    assert rows["hello-world"][1] == "PostgreSQL"
    assert rows["hello-world"][-1] == "Running"
    for query in ("hello-world-from", "message-count", "inactive-people"):
        assert rows[query][2] == "Running", listing
        assert rows[query][1] == "drasi/coordinator", listing  # the fused layout's host
    described = session.ok("describe", "query", "message-count")
    assert "kind: ContinuousQuery\nname: message-count\n" in described
    assert "  queryLanguage: GQL\n" in described
    assert "LET Message = m.Message" in described
    assert "status:\n  status: Running\n" in described
    source = session.ok("describe", "source", "hello-world")
    assert "  kind: PostgreSQL\n" in source and "    - public.Message\n" in source
    assert session.postgres.password not in source


@pytest.mark.slow
def test_reactions_are_applied_listed_described_updated_and_deleted(session: Session) -> None:
    """A Platform reaction beside a query, and the tutorial's Debug reaction (the SSE
    dashboard, on a free port here: the tutorial's 8080 may be taken)."""
    reaction = """\
apiVersion: v1
kind: Reaction
name: results
spec:
  kind: Platform
  queries:
    hello-world-from:
  properties:
    maxStreamLength: {maxlen}
---
"""
    debug = (GETTING_STARTED / "hello-world-reaction.yaml").read_text()
    debug += "  properties:\n    port: 0\n"
    first = session.file("reaction.yaml", reaction.format(maxlen=1000) + debug)
    assert session.ok("apply", "-f", first).splitlines()[:2] == [
        "Apply: Reaction/results: created",
        "Apply: Reaction/hello-world-debug: created",
    ]
    assert "Apply: Reaction/results: unchanged" in session.ok("apply", "-f", first)
    session.sql("""INSERT INTO "Message" VALUES (8, 'Grace', 'Hello World');""")
    stream = keys.result_stream("hello-world-from")
    wait_until(lambda: session.client.xlen(stream) > 0, timeout_s=60, what="results on the stream")
    rows = {row[0]: row for row in table_rows(session.ok("list", "reaction"))}
    assert rows["results"][1:4] == ["platform", "hello-world-from", "Running"]
    assert rows["hello-world-debug"][1] == "sse"
    described = session.ok("describe", "reaction", "hello-world-debug")
    url = next(line.split(": ", 1)[1] for line in described.splitlines() if "  url: " in line)
    with urllib.request.urlopen(f"{url.rstrip('/')}/api/queries", timeout=30) as answer:
        served = orjson.loads(answer.read())
    assert "hello-world-from" in str(served)
    changed = session.file("reaction2.yaml", reaction.format(maxlen=10) + debug)
    assert "Apply: Reaction/results: updated" in session.ok("apply", "-f", changed)
    assert "maxlen: 10" in session.ok("describe", "reaction", "results")
    deleted = session.ok("delete", "-f", changed)
    assert deleted.splitlines() == [
        "Delete: Reaction/results: deleted",
        "Delete: Reaction/hello-world-debug: deleted",
        "Delete operation successful",
    ]
    assert "results" not in {row[0] for row in table_rows(session.ok("list", "reaction"))}
    session.sql("""DELETE FROM "Message" WHERE "MessageId" = 8;""")


@pytest.mark.slow
def test_apply_of_a_file_with_an_error_leaves_the_app_unchanged(session: Session) -> None:
    text = """\
apiVersion: v1
kind: ContinuousQuery
name: spartacus
spec:
  mode: query
  sources: {subscriptions: [{id: hello-world}]}
  query: "MATCH (m:Message {Message: 'I am Spartacus'}) RETURN m.From AS From"
---
apiVersion: v1
kind: ContinuousQuery
name: broken
spec:
  mode: query
  sources: {subscriptions: [{id: hello-world}]}
  query: "MATCH (m:Message) WHERE m.From = RETURN m.From AS From"
"""
    path = session.file("broken.yaml", text)
    done = session.cli("apply", "-f", path)
    assert done.code == 2
    assert done.out == ""
    assert done.err.startswith(f"drasi-ray: error: {path}:15:")
    assert len(done.err.splitlines()) == 1, done.err
    assert "ContinuousQuery/broken spec.query" in done.err
    assert "spartacus" not in session.ok("list", "query")


@pytest.mark.slow
def test_a_query_is_deleted_by_name_and_applied_again(session: Session) -> None:
    assert session.ok("delete", "query", "hello-world-from").splitlines() == [
        "Delete: ContinuousQuery/hello-world-from: deleted",
        "Delete operation successful",
    ]
    assert "hello-world-from" not in session.ok("list", "query")
    refused = session.cli("delete", "source", "hello-world")
    assert refused.code == 2
    assert "read by queries" in refused.err
    applied = session.ok("apply", "-f", QUERIES)
    assert "Apply: ContinuousQuery/hello-world-from: created" in applied
    assert "Apply: ContinuousQuery/message-count: unchanged" in applied


@pytest.mark.slow
def test_each_command_says_in_one_line_what_is_wrong(session: Session) -> None:
    """An unknown name, an app that does not run, a query that does not parse: one line on
    stderr and exit code 2, for every command that asks the app (run at once)."""
    bad_query = session.file(
        "bad.yaml",
        "apiVersion: v1\nkind: ContinuousQuery\nname: bad\nspec:\n  mode: query\n"
        "  sources: {subscriptions: [{id: hello-world}]}\n  query: MATCH (m RETURN m\n",
    )
    mistakes = {
        "apply a syntax error": (["apply", "-f", bad_query], f"{bad_query}:7:"),
        "list another app": (["list", "--app=nobody"], "app 'nobody' on redis://"),
        "describe an unknown name": (["describe", "query", "nope"], "unknown query 'nope'"),
        "delete an unknown name": (["delete", "reaction", "nope"], "unknown reaction 'nope'"),
        "watch an unknown query": (["watch", "nope", "--once"], "unknown query 'nope'"),
    }
    running = {
        name: subprocess.Popen(
            session.command(*words),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(),
            cwd=ROOT,
        )
        for name, (words, _) in mistakes.items()
    }
    for name, process in running.items():
        out, err = process.communicate(timeout=300)
        assert (process.returncode, out) == (2, ""), (name, out, err)
        assert one_error_line(err), (name, err)
        assert mistakes[name][1] in err, (name, err)


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["apply", "-f", "missing.yaml"], "missing.yaml: No such file or directory"),
        (["delete", "-f", "missing.yaml"], "missing.yaml: No such file or directory"),
        (["list", "sorce"], "unknown kind 'sorce': source, query (or continuousquery), reaction"),
        (["delete", "query"], "delete: give KIND NAME, or -f FILE..."),
    ],
)
def test_mistakes_seen_before_asking_the_app_are_one_line_too(
    words: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([*words, "--redis-url", "redis://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert one_error_line(err) and said in err, err


def test_a_redis_that_does_not_answer_is_one_line_in_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = time.monotonic()
    assert cli.main(["list", "--redis-url", f"redis://:pw@127.0.0.1:{free_port()}/0"]) == 2
    err = capsys.readouterr().err
    assert one_error_line(err), err
    assert "cannot reach Redis at redis://:***@127.0.0.1:" in err and "(app 'default')" in err
    assert time.monotonic() - started < 20


def test_run_and_validate_take_a_drasi_file_and_refuse_its_mistakes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad-source.yaml"
    bad.write_text("apiVersion: v2\nkind: Source\nname: s\nspec: {kind: Platform}\n")
    said = f"{bad}:1:13: document 1 apiVersion: unknown apiVersion 'v2'"
    assert cli.main(["run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert one_error_line(err) and said in err, err
    assert cli.main(["validate", str(bad)]) == 1
    assert capsys.readouterr().out.startswith(said)
    assert cli.main(["validate", QUERIES]) == 0
    assert capsys.readouterr().out == f"{QUERIES}: ok\n"


def one_error_line(err: str) -> bool:
    return len(err.splitlines()) == 1 and err.startswith("drasi-ray: error: ")
