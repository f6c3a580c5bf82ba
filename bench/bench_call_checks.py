#!/usr/bin/env python3
"""What the per-call checks cost, in CPU time, this tree against another: argument checking
(a bounded integer and a `pattern`), the bench tool's prose template over 10 rows, and its
source URL.

CPU time (thread_time, the best of many repeats) is steadier than wall time on a shared
machine, so this prices a change to the call path when the stdio figures of bench_core.py
are drowned by noise. Each tree runs in its own process, alternately, for a few rounds.

    python bench/bench_call_checks.py --baseline REV [--rounds 4]

REV is a git revision (exported to a temporary folder, as bench_core.py does).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench_core import exported

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

MEASURE = """
import json, time, timeit, yaml
from mcpgen.spec.params import Arguments
from mcpgen.templates.render import Template
from mcpgen.spec.models import Parameter

spec = yaml.safe_load(open({spec!r}))
prose, source = Template(spec["content"]), Template(spec["sources"][0], url=True)
rows = [{{"city": f"City {{i}}", "country_code": "JP", "population": 37_000_000 - i * 1000}} for i in range(10)]
args = Arguments({{
    "n": Parameter(type="integer", description="d", minimum=1, maximum=1000, default=10),
    "c": Parameter(type="string", description="d", pattern="^[A-Z]{{2}}$", required=False),
}})
parts = {{
    "arguments": lambda: args.validate({{"n": 10, "c": "JP"}}),
    "prose": lambda: prose.render({{"rows": rows, "n": 10}}),
    "source": lambda: source.render({{"n": 10}}),
}}
out = {{}}
for name, f in parts.items():
    f()
    out[name] = min(timeit.Timer(f, timer=time.thread_time).repeat(number=500, repeat=30)) / 500 * 1e6
print(json.dumps(out))
"""


def measure(tree: Path) -> dict:
    code = MEASURE.format(spec=str(HERE / "project/specs/top_cities.yaml"))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    run = [sys.executable, "-P", "-c", code]  # -P: `-c` would import from the working folder first
    out = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", metavar="REV", required=True, help="the git revision to compare with")
    ap.add_argument("--rounds", type=int, default=4)
    opts = ap.parse_args()
    runs: dict[str, list[dict]] = {"baseline": [], "this tree": []}
    with contextlib.ExitStack() as stack:
        trees = {"baseline": stack.enter_context(exported(opts.baseline)), "this tree": REPO}
        for round_ in range(opts.rounds):
            for label in trees if round_ % 2 == 0 else reversed(trees):
                runs[label].append(measure(trees[label]))
    print(f"{'us per call (CPU)':18s} {'arguments':>10s} {'prose':>8s} {'source':>8s} {'total':>8s}")
    totals = {}
    for label, results in runs.items():
        med = {k: statistics.median(r[k] for r in results) for k in results[0]}
        totals[label] = sum(med.values())
        print(f"{label:18s} {med['arguments']:10.1f} {med['prose']:8.1f} {med['source']:8.1f} {totals[label]:8.1f}")
    print(f"added per call: {totals['this tree'] - totals['baseline']:+.1f} us")


if __name__ == "__main__":
    main()
