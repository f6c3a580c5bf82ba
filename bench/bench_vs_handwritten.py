#!/usr/bin/env python3
"""mcpgen against the hand-written tool over stdio, paired, at 10, 1,000 and 10,000 rows and with the cache.

Each case runs bench/bench_paired.py: one client process holds a session to each server and
alternates calls (A, B, then B, A), so both sides see the same machine noise. Prints, per
case, the median over rounds of each side's p50 and their ratio, the ratio per round, and
the median over every pair of neighbouring calls of mcpgen's latency over the hand-written
one (the figure checked against the target: the least sensitive to load that comes and goes).

    python bench/bench_vs_handwritten.py                    # every case
    python bench/bench_vs_handwritten.py --cases 10 cached --rounds 5
    python bench/bench_vs_handwritten.py --cases 10 --busy 2     # under CPU contention, target <= 1.00
    python bench/bench_vs_handwritten.py --cases 1000 1000f --baseline main   # this tree against mcpgen at REV

With `--baseline REV`, the other side is mcpgen as of git revision REV (exported to a temporary
folder, as bench_core.py does) serving the same project and tool, so the ratio prices a change to
the call path; no target applies.

Cases (mcpgen tool; the hand-written side always runs `top_cities`):
  10       top_cities n=10                 target <= 1.00
  cached   top_cities_cached n=10          target <= 0.60 (same arguments every call)
  1000     top_cities n=1000               target <= 1.10
  1000f    top_cities_floats n=1000        (three float columns: the number formats read every value)
  10000    top_cities_many n=10000         must answer without an error (prose cut, table whole)
  downloads  top_cities n=10 with `defaults.download: true` (two links per answer) against the same
           project without it, both mcpgen: the cost of downloads on a call, target <= 1.03
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_core import bench_project, exported, serve_from  # bench/project with its data copied in
from results import add_write_docs

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CASES = {
    "10": ("top_cities", 10, 300, 1.00),
    "cached": ("top_cities_cached", 10, 300, 0.60),
    "1000": ("top_cities", 1000, 60, 1.10),
    "1000f": ("top_cities_floats", 1000, 60, None),
    "10000": ("top_cities_many", 10000, 8, None),
    "downloads": ("top_cities", 10, 300, 1.03),
}


def with_downloads(project: Path, download: str = "true") -> Path:
    """A copy of `project` whose every spec offers downloads: mcpgen.yaml's `defaults.download` set to `download`."""
    copy = project.parent / f"project-downloads-{hashlib.sha256(download.encode()).hexdigest()[:8]}"
    if not copy.exists():
        shutil.copytree(project, copy)
        with open(copy / "mcpgen.yaml", "a") as f:
            f.write(f"\ndefaults:\n  download: {download}\n")
    return copy


def run_case(name: str, rounds: int, n: int | None, project: Path, baseline: Path | None = None) -> dict:
    tool, rows, calls, target = CASES[name]
    hand = {
        "cmd": [sys.executable, str(HERE / "handwritten_server.py"), str(REPO / "examples/data/cities.csv")],
        "env": {"HANDWRITTEN_MAX_N": str(max(rows, 1000))},
        "tool": "top_cities",
    }
    if baseline is not None:
        hand, target = {"cmd": serve_from(baseline, project), "cwd": str(REPO), "tool": tool}, None
    config = {
        "args": {"n": rows},
        "variants": {
            "mcpgen": {
                "cmd": [sys.executable, "-m", "mcpgen.cli", "serve", str(project / "specs")],
                "cwd": str(REPO),
                "tool": tool,
            },
            "hand": hand,
        },
    }
    if name == "downloads":  # "hand" is mcpgen too here, with downloads on: the ratio is on / off
        config["variants"] = {
            "mcpgen": {
                **config["variants"]["mcpgen"],
                "cmd": [*config["variants"]["mcpgen"]["cmd"][:-1], str(with_downloads(project) / "specs")],
            },
            "hand": config["variants"]["mcpgen"],
        }
    options = ["--rounds", str(rounds), "--n", str(n or calls), "--warmup", "5" if rows > 100 else "20", "--latencies"]
    with tempfile.TemporaryDirectory() as tmp:
        spec, out = Path(tmp) / "case.json", Path(tmp) / "out.jsonl"
        spec.write_text(json.dumps(config))
        subprocess.run(
            [sys.executable, str(HERE / "bench_paired.py"), "--spec", str(spec), "--out", str(out), *options],
            check=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stderr=subprocess.DEVNULL,
        )
        records = [json.loads(line) for line in out.read_text().splitlines()]
    side = {v: [r for r in records if r["variant"] == v] for v in ("mcpgen", "hand")}
    p50 = {v: statistics.median(r["seq_p50_ms"] for r in rs) for v, rs in side.items()}
    ratios = [g["seq_p50_ms"] / h["seq_p50_ms"] for g, h in zip(side["mcpgen"], side["hand"])]
    # Each mcpgen call against the hand-written call made next to it: the median of these ratios
    # is the least sensitive to load that comes and goes during a round.
    pairs = [
        a / b
        for g, h in zip(side["mcpgen"], side["hand"])
        for a, b in zip(g["seq_latencies_ms"], h["seq_latencies_ms"])
    ]
    # The same per round: its range shows how far load that comes and goes moved the figure.
    paired_per_round = [
        statistics.median(a / b for a, b in zip(g["seq_latencies_ms"], h["seq_latencies_ms"]))
        for g, h in zip(side["mcpgen"], side["hand"])
    ]
    return {
        "case": name,
        "tool": tool,
        "rows": rows,
        "calls_per_round": n or calls,
        "mcpgen_p50_ms": round(p50["mcpgen"], 3),
        "hand_p50_ms": round(p50["hand"], 3),
        "mcpgen_p50_per_round_ms": [r["seq_p50_ms"] for r in side["mcpgen"]],
        "hand_p50_per_round_ms": [r["seq_p50_ms"] for r in side["hand"]],
        "ratio": round(p50["mcpgen"] / p50["hand"], 3),
        "ratio_per_round": [round(r, 3) for r in ratios],
        "ratio_of_pairs": round(statistics.median(pairs), 3),
        "ratio_of_pairs_per_round": [round(r, 3) for r in paired_per_round],
        "target": target,
        "errors": {
            v: [r["isError"] for r in rs].count(True) + sum(r["seq_errors"] for r in rs) for v, rs in side.items()
        },
        "mcpgen_bytes": side["mcpgen"][0]["result_json_bytes"],
        "hand_bytes": side["hand"][0]["result_json_bytes"],
    }


LABELS = {
    "10": "10 rows",
    "cached": "10 rows, `cache: 60s`, the same arguments",
    "1000": "1,000 rows",
    "1000f": "1,000 rows, three float columns",
    "10000": "10,000 rows (`top_cities_many`, answers without an error)",
    "downloads": "10 rows, `download: true` against the same project without it (both mcpgen)",
}


def render(figures: dict) -> str:
    """The table of one run (bench/results.py puts it into docs/benchmarks.md)."""
    from results import spread, table, verdict

    other = f"mcpgen {figures['baseline']}" if figures.get("baseline") else "hand-written"
    header = ["case", "mcpgen p50, ms", f"{other} p50, ms", "p50 ratio per round", "**paired ratio**", "target"]
    rows = []
    for r in figures["cases"]:
        target = verdict(r["ratio_of_pairs"], r["target"])
        if r["case"] == "10000":
            failed = sum(r["errors"].values())
            target = f"answers, no error: {'met' if not failed else 'missed'} ({r['mcpgen_bytes']:,} bytes against {r['hand_bytes']:,})"
        cells = [spread(r["mcpgen_p50_per_round_ms"]), spread(r["hand_p50_per_round_ms"])]
        cells += [spread(r["ratio_per_round"]), spread(r["ratio_of_pairs_per_round"], bold=True)]
        rows.append([LABELS[r["case"]], *cells, target])
    return table(header, rows) + (
        "\nPaired ratio: the median over each round's calls of mcpgen's latency over the call made next to it;"
        " median [range] of the rounds.\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, help="calls per round (default: per case)")
    ap.add_argument("--busy", type=int, default=0, help="processes spinning on the CPU meanwhile (contention)")
    ap.add_argument(
        "--baseline", metavar="REV", help="pair with mcpgen as of this git revision, not the hand-written tool"
    )
    add_write_docs(ap)
    opts = ap.parse_args()
    spinning = [
        subprocess.Popen(
            [sys.executable, "-c", "import time\nend = time.monotonic() + 3600\nwhile time.monotonic() < end: pass"]
        )
        for _ in range(opts.busy)
    ]
    try:
        cases(opts)
    finally:
        for process in spinning:
            process.kill()
            process.wait(10)


def cases(opts) -> None:
    if opts.busy:
        print(f"with {opts.busy} processes spinning on the CPU meanwhile", flush=True)
    other = f"mcpgen {opts.baseline}" if opts.baseline else "hand-written"
    done = []
    with bench_project() as project, contextlib.ExitStack() as stack:
        baseline = stack.enter_context(exported(opts.baseline)) if opts.baseline else None
        for name in opts.cases:
            r = run_case(name, opts.rounds, opts.n, project, baseline)
            done.append(r)
            verdict = "" if r["target"] is None else (" OK" if r["ratio_of_pairs"] <= r["target"] else " OVER")
            if name == "downloads":
                print(
                    f"downloads: p50 on {r['mcpgen_p50_ms']:8.3f} ms | off {r['hand_p50_ms']:8.3f} ms | ratio on/off"
                    f" {r['ratio']:.3f} (rounds {r['ratio_per_round']}; median of paired calls {r['ratio_of_pairs']:.3f})"
                    f" target {r['target']}{verdict} | errors {r['errors']} | bytes {r['mcpgen_bytes']:,} / {r['hand_bytes']:,}",
                    flush=True,
                )
                continue
            print(
                f"{r['case']:>7}: mcpgen p50 {r['mcpgen_p50_ms']:8.3f} ms | {other} {r['hand_p50_ms']:8.3f} ms"
                f" | ratio {r['ratio']:.3f} (rounds {r['ratio_per_round']}; median of paired calls"
                f" {r['ratio_of_pairs']:.3f}) target {r['target']}{verdict}"
                f" | errors {r['errors']} | bytes {r['mcpgen_bytes']:,} / {r['hand_bytes']:,}",
                flush=True,
            )
    if opts.write_docs:
        from results import publish

        name = f"vs {opts.baseline}" if opts.baseline else "busy" if opts.busy else None
        publish(__file__, {"cases": done, "baseline": opts.baseline, "busy": opts.busy}, opts.rounds, name=name)


if __name__ == "__main__":
    main()
