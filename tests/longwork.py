"""A project whose queries take long, for the progress, cancellation and task tests: `big` holds
ROWS integers (fewer in process, IN_PROCESS_ROWS, where a test may shorten the progress poll);
`scan` reads it once (DuckDB reports progress), `forever` joins it with itself
(minutes of work unless cancelled), `quick` answers at once. One slot: a query left running would
hold up every later call, so a call answering at once proves the cancelled query stopped. `scan` and
`forever` are long-running (tasks for clients of the tasks extension, like TasksClient below)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import anyio
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.types import CallToolResult, Request, RequestParams, Result
from mcp_types import CancelTaskRequest, CancelTaskRequestParams, GetTaskRequest, GetTaskRequestParams
from pydantic import ConfigDict, TypeAdapter

ROWS = 20_000_000
IN_PROCESS_ROWS = 4_000_000

CONFIG = """\
connections:
  default:
    duckdb: ":memory:"
    threads: 1  # a scan of about a second on one core: the same wait, half the work of two
    max_concurrent: 1
    queue_timeout: 30
    init:
      - CREATE TABLE big AS SELECT range AS x FROM range({rows})
"""

SPECS = {
    "scan": """\
description: Counts the even multiples of k among the big numbers, hashing every fourth one (a second or so).
parameters:
  k: {type: integer, description: the divisor, default: 7, minimum: 1}
sql: |
  SELECT count(*) FILTER (WHERE x % :k = 0) AS n, sum(CASE WHEN x % 4 = 0 THEN hash(md5(x::VARCHAR)) END) AS h FROM big
  WHERE x % 2 = 0 AND x < (SELECT max(x) FROM big b WHERE b.x % 3 = 0)
sources: [https://example.org/big]
content: "{{ rows[0].n }} multiples of {{ k }}."
timeout: 60s
long_running: true
""",
    "forever": """\
description: A join of the big numbers with themselves; runs for minutes.
parameters:
  h: {type: integer, description: the hash to look for, default: 7}
sql: SELECT count(*) AS n FROM big a, big b WHERE hash(a.x + b.x) = :h
sources: [https://example.org/big]
content: "{{ rows[0].n }} pairs."
timeout: 300s
long_running: true
""",
    "quick": """\
description: How many big numbers there are.
sql: SELECT count(*) AS n FROM big
sources: [https://example.org/big]
content: "{{ rows[0].n }} numbers."
""",
}


def write_long_project(root: Path, extra: dict[str, str] | None = None, rows: int = ROWS) -> Path:
    """The project under `root`, `big` holding `rows` numbers; returns its specs folder."""
    (root / "mcpgen.yaml").write_text(CONFIG.format(rows=rows))
    specs = root / "specs"
    specs.mkdir()
    for name, text in {**SPECS, **(extra or {})}.items():
        (specs / f"{name}.yaml").write_text(text)
    return specs


# -- a client of the tasks extension, on the SDK's client extension interface --------------------


TASKS = "io.modelcontextprotocol/tasks"
RAW = TypeAdapter(dict)


class CreatedTask(Result):
    """A CreateTaskResult as the server sends it (flat: the task's fields at the top level)."""

    result_type: Literal["task"]
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class TasksClient(ClientExtension):
    """Declares the tasks extension; a task answer is polled with tasks/get until it ends (every
    `poll` seconds, or the server's pollIntervalMs), and its inlined result is the call's answer.
    `created` and `polls` record what the server sent."""

    identifier = TASKS

    def __init__(self, poll: float | None = 0.05, resolve: bool = True):
        self.poll, self.resolve, self.created, self.polls = poll, resolve, [], []

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve)]

    async def _resolve(self, created: CreatedTask, ctx) -> CallToolResult:
        self.created.append(created)
        while True:
            got = await get_task(ctx.session, created.task_id)
            self.polls.append(got)
            if got["status"] in ("completed", "failed", "cancelled"):
                if got["status"] != "completed":
                    raise RuntimeError(f"task {got['status']}: {got.get('error') or got.get('statusMessage')}")
                return CallToolResult.model_validate(got["result"])
            await anyio.sleep(self.poll if self.poll is not None else got["pollIntervalMs"] / 1000)


def multiples(k: int, rows: int) -> int:
    """What `scan` counts for `k` over `rows` numbers: the even multiples of k below the last multiple of 3."""
    below = (rows - 1) // 3 * 3
    return len(range(0, below, math.lcm(2, k)))


async def get_task(session, task_id: str) -> dict:
    return await session.send_request(GetTaskRequest(params=GetTaskRequestParams(task_id=task_id)), RAW)


async def cancel_task(session, task_id: str) -> dict:
    return await session.send_request(CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id)), RAW)


class _AnyParams(RequestParams):
    model_config = ConfigDict(extra="allow")


class _AnyRequest(Request[_AnyParams | None, str]):
    pass


async def send(session, method: str, params: dict | None = None) -> dict:
    """Any request, as the client would send it; the raw result."""
    request = _AnyRequest(method=method, params=_AnyParams(**params) if params is not None else None)
    return await session.send_request(request, RAW)
