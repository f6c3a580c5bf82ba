"""The tasks extension (`io.modelcontextprotocol/tasks`): a tool a spec marks `long_running: true`
answers a client that declares the extension with a task at once; the call runs on in the
background, and the client polls `tasks/get` for its status, its progress and, once it has
completed, its result; `tasks/cancel` stops its query. A client that does not declare the
extension gets the answer as always, when the call ends.

Tasks live in the server process that started them, bound to their caller as cursors are (another
caller's `tasks/get` finds no such task), and are kept TTL_MS after they start (longer if still
working), at most MAX_TASKS at once.

The extension is built on the SDK's extension interface (`mcp.server.extension`): its methods are
`MethodBinding`s, applied to the low-level server by `install`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    RequestParams,
)

from ..answer.asking import ANSWERS
from ..answer.plain import ToolResult
from ..identity import caller_identity
from ..text import clipped

logger = logging.getLogger("mcpgen")

EXTENSION_ID = "io.modelcontextprotocol/tasks"
TTL_MS = 3_600_000  # a task (and its result) is kept an hour after it starts
POLL_MS = 1_000  # how often a client is asked to poll
MAX_TASKS = 1_000  # tasks kept at once per server; past it, long-running calls answer when done, as without tasks
TERMINAL = frozenset({"completed", "failed", "cancelled"})


class TaskParams(RequestParams):
    """`tasks/get` and `tasks/cancel`: which task."""

    task_id: str


class UpdateParams(TaskParams):
    """`tasks/update`: answers to a task's input requests (mcpgen's tasks never ask for input)."""

    input_responses: dict[str, Any] | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Task:
    """One call running (or run) in the background for one caller."""

    task_id: str
    owner: str | None
    tool: str
    started: float = field(default_factory=time.monotonic)
    created_at: str = field(default_factory=_now)
    updated_at: str = ""
    status: str = "working"
    message: str | None = None
    result: ToolResult | None = None
    error: dict[str, Any] | None = None
    job: asyncio.Task | None = None

    def settle(self, status: str, message: str | None = None) -> None:
        if self.status in TERMINAL:  # a cancelled task stays cancelled, whatever its query did after
            return
        self.status, self.message, self.updated_at = status, message, _now()

    def envelope(self) -> dict[str, Any]:
        """The task's fields on the wire (a CreateTaskResult's, and those of tasks/get)."""
        out: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at or self.created_at,
            "ttlMs": TTL_MS,
            "pollIntervalMs": POLL_MS,
        }
        if self.message:
            out["statusMessage"] = self.message
        return out

    def detailed(self) -> dict[str, Any]:
        """tasks/get: the envelope, with the result once completed or the error once failed."""
        out = {"resultType": "complete", **self.envelope()}
        if self.status == "completed" and self.result is not None:
            out["result"] = self.result.to_mcp().model_dump(mode="json", by_alias=True, exclude_none=True)
        elif self.status == "failed" and self.error is not None:
            out["error"] = self.error
        return out


class TaskStore:
    """The tasks of one server, by id."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    def start(self, tool: str, run) -> dict[str, Any] | None:
        """Start `run(progress)` (a coroutine function returning the ToolResult) as a task of the
        caller; the CreateTaskResult, or None when MAX_TASKS are kept already (the caller then runs
        the call itself)."""
        self._expire()
        if len(self._tasks) >= MAX_TASKS:
            return None
        task = Task(secrets.token_urlsafe(18), caller_identity(), tool)
        self._tasks[task.task_id] = task  # stored before it is announced: tasks/get finds it at once
        task.job = asyncio.get_running_loop().create_task(self._run(task, run))  # the caller's context, copied
        return {"resultType": "task", **task.envelope()}

    async def _run(self, task: Task, run) -> None:
        async def progress(done: float, total: float | None, message: str | None) -> None:
            task.message, task.updated_at = message, _now()

        # Nobody can be asked from inside a task (its questions come before it starts): a hand-written tool
        # that asks in one is answered as for a client that cannot ask. This task's context is its own copy.
        ANSWERS.set(None)
        try:
            task.result = await run(progress)
            task.settle("completed", None)
        except asyncio.CancelledError:
            task.settle("cancelled", "The call was cancelled.")
        except Exception:  # Registry.call answers every failure itself: this is a bug, logged
            logger.exception("task %s of tool %s failed", task.task_id, task.tool)
            task.error = {"code": INTERNAL_ERROR, "message": "The call failed; the details are in the server log."}
            task.settle("failed", None)

    def find(self, task_id: str) -> Task:
        """The caller's task, or -32602 (an unknown id and another caller's task look the same)."""
        self._expire()
        task = self._tasks.get(task_id)
        if task is None or task.owner != caller_identity():
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown task: {clipped(task_id)}")
        return task

    def cancel(self, task_id: str) -> None:
        task = self.find(task_id)
        if task.status not in TERMINAL and task.job is not None:
            task.settle("cancelled", "The call was cancelled.")
            task.job.cancel()  # the query stops on the database (mcpgen.engines.control)

    def _expire(self) -> None:
        cutoff = time.monotonic() - TTL_MS / 1000
        for task_id in [i for i, t in self._tasks.items() if t.started < cutoff and t.status in TERMINAL]:
            del self._tasks[task_id]

    def close(self) -> None:
        for task in self._tasks.values():
            if task.job is not None and not task.job.done():
                task.job.cancel()


def declared(ctx, params: RequestParams) -> bool:
    """Whether the caller declared the tasks extension: for the session, or on this request alone."""
    meta = params.meta or {}
    capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY)
    if isinstance(capabilities, dict) and EXTENSION_ID in (capabilities.get("extensions") or {}):
        return True
    session = getattr(ctx.session, "client_capabilities", None)
    extensions = getattr(session, "extensions", None) or {}
    return EXTENSION_ID in extensions


class TasksExtension(Extension):
    """tasks/get, tasks/cancel and tasks/update over a TaskStore, for callers that declared the extension."""

    identifier = EXTENSION_ID

    def __init__(self, store: TaskStore):
        self.store = store

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, self.get),
            MethodBinding("tasks/cancel", TaskParams, self.cancel),
            MethodBinding("tasks/update", UpdateParams, self.update),
        ]

    def install(self, server) -> None:
        """Serve the methods on the SDK's low-level `Server` and declare the extension in its capabilities."""
        for method in self.methods():
            server.add_request_handler(method.method, method.params_type, method.handler)
        server.extensions[self.identifier] = self.settings()

    @staticmethod
    def _gate(ctx, params: TaskParams) -> None:
        """Refuse a caller without the extension (-32021), and over HTTP an `Mcp-Name` header that names
        another task than the body (-32020, as the SDK refuses one that names another tool). A request
        without the header is served: the SDK's own client sends none for tasks/*."""
        headers = getattr(getattr(ctx, "request", None), "headers", None)
        named = headers.get(MCP_NAME_HEADER) if headers is not None else None
        if named is not None and decode_header_value(named.strip()) != params.task_id:
            raise MCPError(code=HEADER_MISMATCH, message=f"{MCP_NAME_HEADER} header does not match the body's taskId")
        if not declared(ctx, params):
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=f"tasks/* needs the {EXTENSION_ID} extension, which this client did not declare",
                data={"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
            )

    async def get(self, ctx, params: TaskParams) -> dict[str, Any]:
        self._gate(ctx, params)
        return self.store.find(params.task_id).detailed()

    async def cancel(self, ctx, params: TaskParams) -> dict[str, Any]:
        self._gate(ctx, params)
        self.store.cancel(params.task_id)
        return {"resultType": "complete"}

    async def update(self, ctx, params: UpdateParams) -> dict[str, Any]:
        self._gate(ctx, params)
        task = self.store.find(params.task_id)
        raise MCPError(code=INVALID_PARAMS, message=f"Task {task.task_id} is not waiting for input.")
