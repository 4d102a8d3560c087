#!/usr/bin/env python3
"""Hive's perplexity against llama.cpp's on the same quantized GGUF files.

  .venv/bin/python tools/bench/llama_cpp_perplexity.py --llama-bin DIR --text FILE
      [--model models/hive-moe-target] [--types q8_0,q4_k_m] [--window 512]
      [--threads N] [--build build] [--work DIR] [--json FILE]
  .venv/bin/python tools/bench/llama_cpp_perplexity.py --llama-bin DIR --text FILE
      --gguf A.gguf,B.gguf [--window 128] [--json FILE]

For each type, `hive quantize` writes the model as GGUF (so llama.cpp
loading Hive's files is checked on the way); then llama.cpp's
`llama-perplexity -c WINDOW` and `hive eval-ppl --window WINDOW
--second-half` score the text on that one file. Both score whole windows
only, each from its middle on, so they predict the same tokens; the table
gives both perplexities, their relative difference and the token counts.
The held-out text of the bundled models is `<corpus>/heldout.txt`, written
by tools/make_corpus.py and tools/eval_models.py --card (or by joining the
"text" of heldout.jsonl's lines with blank lines).

With --gguf the given files are scored as they are, nothing quantized.
tests/models/data/llama_cpp_perplexity.json, the reference models_tests
holds Hive's perplexity on quantized files to, is this program's --json
(each row names its file's sha256; paths inside the repository are stored
relative to it):

  .venv/bin/python tools/bench/llama_cpp_perplexity.py --llama-bin DIR \
      --text tests/models/data/heldout_sample.txt --window 128 --threads 2 \
      --types q8_0,q4_0,q4_k_m --json tests/models/data/llama_cpp_perplexity.json
"""
import argparse
import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(cmd, env=None):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"llama_cpp_perplexity: {' '.join(map(str, cmd))} failed "
                 f"({result.returncode}):\n{result.stderr[-2000:]}{result.stdout[-2000:]}")
    return result.stdout + result.stderr


def relative(path):
    path = pathlib.Path(path).resolve()
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def number(pattern, text, what):
    match = re.search(pattern, text)
    if not match:
        sys.exit(f"llama_cpp_perplexity: no {what} in the output:\n{text[-2000:]}")
    return float(match.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-bin", required=True)
    parser.add_argument("--text", required=True)
    parser.add_argument("--model", default=str(ROOT / "models" / "hive-moe-target"))
    parser.add_argument("--types", default="q8_0,q4_k_m")
    parser.add_argument("--gguf", help="score these files instead of quantizing --model")
    parser.add_argument("--window", type=int, default=512)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--work", default=str(ROOT / "bench_models" / "perplexity"))
    parser.add_argument("--json")
    args = parser.parse_args()

    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    hive = pathlib.Path(args.build) / "bin" / "hive"
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    rows = []
    version = re.search(r"version: .*", run([pathlib.Path(args.llama_bin) / "llama-perplexity",
                                              "--version"]))
    version = version.group(0) if version else "unknown"
    if args.gguf:
        files = [(pathlib.Path(f).stem, pathlib.Path(f).resolve()) for f in args.gguf.split(",")]
    else:
        files = [(qtype, work / f"{pathlib.Path(args.model).name}-{qtype}.gguf")
                 for qtype in args.types.split(",")]
    for qtype, gguf in files:
        if not args.gguf:
            run([hive, "quantize", "--model", args.model, "--type", qtype, "--out", gguf, "--force"])
        llama = run([pathlib.Path(args.llama_bin) / "llama-perplexity", "-m", gguf, "-f", args.text,
                     "-c", args.window, "-t", args.threads])
        ours = run([hive, "eval-ppl", "--model", gguf, "--text", args.text, "--window", args.window,
                    "--second-half", "--device", "cpu"], env)
        where = gguf.relative_to(ROOT) if gguf.is_relative_to(ROOT) else gguf.name
        row = {"type": qtype, "file": str(where),
               "sha256": hashlib.sha256(gguf.read_bytes()).hexdigest(),
               "llama_cpp": number(r"Final estimate: PPL = ([0-9.]+)", llama, "final estimate"),
               "llama_cpp_version": version,
               "llama_cpp_windows": int(number(r"over (\d+) chunks", llama, "chunk count")),
               "hive": number(r"perplexity:\s*([0-9.]+)", ours, "perplexity"),
               "hive_windows": int(number(r"in (\d+) windows", ours, "window count")),
               "hive_predicted": int(number(r"predicted:\s*(\d+)", ours, "prediction count"))}
        row["relative_difference"] = row["hive"] / row["llama_cpp"] - 1
        rows.append(row)
        print(f"{qtype}: {json.dumps(row)}", file=sys.stderr)

    print(f"\n{args.model} on {args.text}, windows of {args.window}, {args.threads} threads\n")
    print("| type | Hive | llama.cpp | Hive / llama.cpp - 1 | windows (Hive, llama.cpp) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['type']} | {r['hive']:.4f} | {r['llama_cpp']:.4f} | "
              f"{r['relative_difference']:+.3%} | {r['hive_windows']}, {r['llama_cpp_windows']} |")
    if args.json:
        pathlib.Path(args.json).write_text(
            json.dumps({"model": None if args.gguf else relative(args.model),
                        "text": relative(args.text),
                        "window": args.window,
                        "threads": args.threads, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
