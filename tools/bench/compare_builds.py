#!/usr/bin/env python3
"""Two builds of Hive side by side: a change's cost, old against new.

  .venv/bin/python tools/bench/compare_builds.py --old OLD_BUILD --new NEW_BUILD
      [--model models/hive-moe-target] [--rounds 5] [--threads N] [--json FILE]

Each round runs bench_actor_overhead (batch 1 through hive::Engine: the
actors' time per token and per step) and bench_rows (prefill, decode at
batch 1 and batched decode: the model's kernels) from both builds, the old
first in odd rounds and the new first in even ones, so a shared machine's
drift hits both alike. The table gives each figure's median over the
rounds for both builds and new / old; for times lower is better, for
tokens/s higher.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]

# bench_actor_overhead's figures compared: (label, its row, its key).
ACTOR_FIGURES = [("async, stream: ms/token", "async stream", "actor_ms"),
                 ("async, callback: ms/token", "async callback", "actor_ms"),
                 ("one step, stream: ms/token", "one step stream", "actor_ms"),
                 ("async, stream: scheduler step (ms)", "async stream", "step_ms"),
                 ("async, stream: compute per step (ms)", "async stream", "compute_ms")]


def run(cmd, env):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"compare_builds: {' '.join(map(str, cmd))} failed ({result.returncode}):\n"
                 f"{result.stderr[-2000:]}{result.stdout[-2000:]}")


def measure(build, args, work, env):
    """One round of one build: {figure: value}."""
    figures = {}
    actor = work / "actor.json"
    run([build / "bin" / "bench_actor_overhead", "--model", args.model, "--tokens", "128",
         "--repeats", "3", "--json", actor], env)
    report = json.loads(actor.read_text())
    for label, row, key in ACTOR_FIGURES:
        figures[label] = report[row][key]
    rows = work / "rows.json"
    run([build / "bin" / "bench_rows", "--model", args.model, "--prefill", "256", "--decode", "64",
         "--batches", "16", "--batch-prompt", "32", "--batch-decode", "16", "--json", rows], env)
    for row in json.loads(rows.read_text())["rows"]:
        figures[f"{row['row']} (tok/s)"] = row["tokens_per_s"]
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--model", default=str(ROOT / "models" / "hive-moe-target"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--json")
    args = parser.parse_args()

    builds = {"old": pathlib.Path(args.old), "new": pathlib.Path(args.new)}
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    runs = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
            for which in order:
                runs[which].append(measure(builds[which], args, pathlib.Path(tmp), env))
            print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)

    table = {}
    print(f"\n{args.model}, {args.threads} threads, medians of {args.rounds} alternating rounds")
    print(f"old: {args.old}\nnew: {args.new}\n")
    print("| figure | old | new | new / old |\n|---|---|---|---|")
    for figure in runs["old"][0]:
        old = statistics.median(x[figure] for x in runs["old"])
        new = statistics.median(x[figure] for x in runs["new"])
        table[figure] = {"old": old, "new": new, "ratio": new / old,
                         "old_runs": [x[figure] for x in runs["old"]],
                         "new_runs": [x[figure] for x in runs["new"]]}
        print(f"| {figure} | {old:.4g} | {new:.4g} | {new / old:.3f} |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"model": args.model, "threads": args.threads, "rounds": args.rounds,
             "old": args.old, "new": args.new, "figures": table}, indent=2) + "\n")


if __name__ == "__main__":
    main()
