"""`serve --reload`: watch the specs folder and mcpgen.yaml, and serve the new tools when they are valid.

On a change the whole project is opened again in a worker thread (`open_project`:
load, check, compile, connect). Valid: the ToolServer's registry is swapped, clients
are told `tools/list_changed`, and the old project's engines are closed once its
in-flight calls have returned. Invalid: the last good tools keep serving and every
problem is logged on stderr as `file:line:col: message`.

    reloader = Reloader(tool_server, project, specs_dir)
    await reloader.run()          # until cancelled

`LiveProject` is the swap itself, shared with `preview`: the new project becomes current
at once, and each replaced one is closed when no call is running on its tools any more.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread

from ..errors import SpecError
from ..load.discovery import parent_folder
from ..spec.config import CONFIG_NAME
from ..text import plural
from .project import Project, open_project

logger = logging.getLogger("mcpgen")

DRAIN_SECONDS = 600.0  # longest wait for the old tools' calls before their engines close anyway


async def watch_project(
    specs_dir: Path, on_change: Callable[[], Awaitable[Any]], stop: anyio.Event | None = None, debounce_ms: int = 200
) -> None:
    """Await `on_change()` after each batch of changes to the specs folder, or to the
    mcpgen.yaml in its parent, until `stop` is set (or the task is cancelled)."""
    from watchfiles import DefaultFilter, awatch

    async def watch(path: Path, recursive: bool, accept) -> None:
        async for changes in awatch(
            path, watch_filter=accept, recursive=recursive, debounce=debounce_ms, step=50, stop_event=stop
        ):
            logger.debug("changed: %s", ", ".join(sorted(p for _, p in changes)))
            await on_change()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch, specs_dir, True, DefaultFilter())
        # mcpgen.yaml may sit in the specs folder's parent: watch that one file name there.
        tg.start_soon(watch, parent_folder(specs_dir), False, lambda change, path: Path(path).name == CONFIG_NAME)


class LiveProject:
    """The project in use, and the replaced ones whose calls have not all returned yet.

    Calls count themselves in `Registry.active`, so a replaced project is closed as soon as
    that count is zero: by `close_idle()` after a call, or by `drain()` in the background.

    >>> live = LiveProject(None)
    >>> live.replace(None), live.draining
    (None, 0)
    """

    def __init__(self, project: Project | None):
        self.project = project
        self._replaced: list[Project] = []

    @property
    def draining(self) -> int:
        """How many replaced projects still wait for their calls to return."""
        return len(self._replaced)

    def replace(self, new: Project | None) -> Project | None:
        """Make `new` current; the old project (returned) is closed now if idle, else later."""
        old, self.project = self.project, new
        if old is not None:
            self._replaced.append(old)
        self.close_idle()
        return old

    def close_idle(self) -> bool:
        """Close the replaced projects no call is using; True when none is left waiting."""
        for project in [p for p in self._replaced if not p.registry.active]:
            self._replaced.remove(project)
            project.close()
        return not self._replaced

    async def drain(self, seconds: float = DRAIN_SECONDS) -> None:
        """Wait for the replaced projects' calls (at most `seconds`), then close them."""
        with anyio.move_on_after(seconds):
            while not self.close_idle():
                await anyio.sleep(0.05)
        for project in self._replaced:
            project.close()
        self._replaced.clear()

    def close(self) -> None:
        """Close the current project and every replaced one."""
        for project in [*self._replaced, self.project]:
            if project is not None:
                project.close()
        self._replaced.clear()
        self.project = None


class Reloader:
    def __init__(self, tool_server, project: Project, specs_dir: str | Path, debounce_ms: int = 200):
        self.tool_server = tool_server
        self.live = LiveProject(project)
        self.specs_dir = Path(specs_dir).resolve()  # open_project changes the working directory
        self.debounce_ms = debounce_ms
        self._lock = anyio.Lock()
        self._task_group: anyio.abc.TaskGroup | None = None

    async def run(self) -> None:
        """Watch until cancelled; each batch of changes triggers one reload."""
        logger.info("watching %s for changes", self.specs_dir)
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            tg.start_soon(watch_project, self.specs_dir, self.reload, stop, self.debounce_ms)
            try:
                await anyio.sleep_forever()
            finally:
                # The watcher waits in a thread a cancellation cannot reach, up to its 5 s timeout; the
                # event ends that wait within 50 ms, so Ctrl-C stops a --reload server at once.
                stop.set()

    async def reload(self) -> bool:
        """Open the project again; serve it if valid. Returns whether the tools were replaced."""
        async with self._lock:
            try:
                new = await anyio.to_thread.run_sync(open_project, self.specs_dir)
            except SpecError as exc:
                logger.error(
                    "reload failed; still serving the last good %s. Problems:\n%s",
                    plural(len(self.tool_server.registry), "tool"),
                    "\n".join(str(p) for p in exc.problems),
                )
                return False
            except Exception as exc:  # e.g. a database that is down: same rule, keep serving
                logger.error(
                    "reload failed (%s: %s); still serving the last good %s",
                    type(exc).__name__,
                    exc,
                    plural(len(self.tool_server.registry), "tool"),
                )
                return False
            before = set(self.tool_server.registry.names())
            self.live.replace(new)
            self.tool_server.registry = new.registry
            after = set(new.registry.names())
        added, removed = sorted(after - before), sorted(before - after)
        logger.info(
            "reloaded: %s%s%s",
            plural(len(after), "tool"),
            f"; added {', '.join(added)}" if added else "",
            f"; removed {', '.join(removed)}" if removed else "",
        )
        await self.tool_server.tools_changed()
        if self._task_group is not None:
            self._task_group.start_soon(self.live.drain)
        else:
            await self.live.drain()
        return True

    def close(self) -> None:
        self.live.close()
