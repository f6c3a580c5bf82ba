"""The suite cannot hang (tests/hangs.py): a test stuck past its timeout ends the run within the
timeout, with the stack of the stuck code, whichever way it is stuck. Each case runs pytest on a
small test file in a child process, under this project's configuration, in one process and in a
pytest-xdist worker (`-n`: a worker that crashes ends the run, --max-worker-restart 0)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

STUCK = {
    # A C call that holds the GIL and retries on EINTR (glibc's system() waiting for its child),
    # as libpq's PQgetResult did through psycopg: no Python thread or signal handler runs again.
    "gil": """
        import ctypes
        def test_stuck():
            ctypes.PyDLL(None).system(b"exec sleep 300")
    """,
    # A worker thread the event loop waits for: the signal method's exception, raised in the loop,
    # leaves asyncio.run waiting for the thread at shutdown.
    "loop": """
        import time
        import anyio
        def test_stuck():
            anyio.run(anyio.to_thread.run_sync, time.sleep, 300)
    """,
}


# Under -n the same hooks run behind two more interpreters (pytest-xdist's controller and worker): slow, run in CI.
@pytest.mark.parametrize("workers", ["0", pytest.param("1", marks=pytest.mark.slow)])
@pytest.mark.parametrize("shape", sorted(STUCK))
def test_a_stuck_test_ends_the_run_within_its_timeout_with_a_stack(shape, workers, tmp_path):
    test = tmp_path / f"test_stuck_{shape}.py"
    test.write_text("import pytest\npytestmark = pytest.mark.timeout(1)\n" + textwrap.dedent(STUCK[shape]))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)]),
        "MCPGEN_TEST_HANG_GRACE": "2",
    }
    env.pop("PYTEST_TIMEOUT", None)
    command = [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "-p", "hangs"]
    command += ["-p", "no:cacheprovider", "-q", "-n", workers, "--rootdir", str(tmp_path), str(test)]
    start = time.monotonic()
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=100)
    elapsed = time.monotonic() - start
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert elapsed < 90, f"the stuck test ran {elapsed:.0f} s:\n{output}"
    assert "Timeout" in output and f"test_stuck_{shape}.py" in output and "in test_stuck" in output, output
