#!/usr/bin/env python3
"""End to end through `hive run`: one MoE model as 1 process of W rank threads
(parallel.transport in_process) against W processes of one rank each
(transport mpi, under mpirun), tokens/s at each batch of concurrent
sequences. Rounds alternate the two sides (threads first in even rounds);
each figure is the median of the rounds, the ratio the median of the
per-round ratios, with its range. Both sides run with OMP_NUM_THREADS=1, so
each rank computes on one thread.

  python3 tools/bench/rank_processes_e2e.py --model DIR [--world-size 2]
      [--batches 16,64] [--tokens 32] [--prompt-len 8] [--rounds 5] [--json FILE]

tokens/s is hive run's own: generated tokens over the time from the first
submission to the last request's end (the model's loading left out).
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
           "OMPI_MCA_mpi_yield_when_idle": "1"}


def launch_file(path, model, world_size, transport):
    path.write_text(f"""model: {model}
device: cpu
parallel:
  world_size: {world_size}
  transport: {transport}
  expert_parallel_size: {world_size}
  tensor_parallel_size: 1
kv_cache:
  block_size: 16
  memory_budget: 128MiB
scheduler:
  max_num_seqs: 64
  max_num_batched_tokens: 512
""")


def prompts_file(path, batch, tokens, prompt_len):
    with path.open("w") as f:
        for b in range(batch):
            ids = [1 + (b * 7 + i) % 50 for i in range(prompt_len)]
            f.write(json.dumps({"id": f"p{b}", "prompt_ids": ids, "max_tokens": tokens,
                                "ignore_eos": True, "temperature": 0}) + "\n")


def tokens_per_second(command, env):
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    found = re.search(r"\(([0-9.]+) tokens/s\)", done.stderr)
    if not found:
        raise SystemExit(f"{' '.join(command)}: no tokens/s in its output:\n{done.stderr}")
    return float(found.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--batches", default="16,64")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--prompt-len", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hive", default=str(ROOT / "build/bin/hive"))
    parser.add_argument("--json")
    args = parser.parse_args()
    env = {**MPI_ENV, **os.environ, "OMP_NUM_THREADS": "1"}  # the caller's MCA settings win
    model = pathlib.Path(args.model).resolve()
    w = args.world_size
    report = {"model": str(model), "world_size": w, "tokens": args.tokens,
              "prompt_len": args.prompt_len, "rounds": args.rounds, "batches": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        launch_file(tmp / "threads.yaml", model, w, "in_process")
        launch_file(tmp / "processes.yaml", model, w, "mpi")
        sides = {
            "threads": lambda p: [args.hive, "run", "--config", str(tmp / "threads.yaml"),
                                  "--prompts", str(p)],
            "processes": lambda p: ["mpirun", "-np", str(w), "--bind-to", "none", args.hive,
                                    "run", "--config", str(tmp / "processes.yaml"),
                                    "--prompts", str(p)],
        }
        print(f"model {model}, {w} ranks, {args.tokens} tokens per request, "
              f"median of {args.rounds} rounds")
        print(f"| sequences | 1 process x {w} threads (tok/s) | {w} processes x 1 thread (tok/s) "
              "| processes / threads | range |")
        print("|---|---|---|---|---|")
        for batch in (int(b) for b in args.batches.split(",")):
            prompts = tmp / f"prompts{batch}.jsonl"
            prompts_file(prompts, batch, args.tokens, args.prompt_len)
            speeds = {"threads": [], "processes": []}
            for r in range(args.rounds):
                order = ["threads", "processes"] if r % 2 == 0 else ["processes", "threads"]
                for side in order:
                    speeds[side].append(tokens_per_second(sides[side](prompts), env))
            ratios = [p / t for p, t in zip(speeds["processes"], speeds["threads"])]
            row = {"batch": batch, "threads_tokens_per_s": speeds["threads"],
                   "processes_tokens_per_s": speeds["processes"],
                   "ratio": statistics.median(ratios), "ratio_range": [min(ratios), max(ratios)]}
            report["batches"].append(row)
            print(f"| {batch} | {statistics.median(speeds['threads']):.1f} | "
                  f"{statistics.median(speeds['processes']):.1f} | {row['ratio']:.3f}x | "
                  f"{min(ratios):.3f} .. {max(ratios):.3f} |", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
