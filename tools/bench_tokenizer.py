#!/usr/bin/env python3
"""Encode throughput: Hive's tokenizer next to Hugging Face `tokenizers`.

Builds one text of at least 1 MB (the seed articles, the project's design
notes, the tokenizer test corpus and Python's own documentation topics),
then for each tokenizer and mode runs build/bin/bench_tokenizer and, in this
process, Hugging Face `tokenizers` on the same text, single-threaded:
  document  the whole text as one string   (HF: Tokenizer.encode(text))
  lines     every line on its own           (HF: Tokenizer.encode_batch(lines))
Both are timed the same way: the first run fills the BPE caches, the median
of the later runs is reported. Prints a table and writes JSON; checks that
both produced the same ids.

  .venv/bin/python tools/bench_tokenizer.py [--build build] [--runs 5] [--json FILE]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # Hugging Face's thread pool, before it loads
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import pydoc_data.topics  # noqa: E402
import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import tokenizer_corpus  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOKENIZERS = ["qwen3", "bytelevel_bpe", "sentencepiece_bpe"]
MIN_BYTES = 1_000_000


def bench_text():
    parts = tokenizer_corpus.seed_texts()
    parts += [(tokenizer_corpus.SHARED / n).read_text(encoding="utf-8")
              for n in ("DESIGN.md", "STYLE.md")]
    parts += tokenizer_corpus.corpus()
    parts += [pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics)]
    text = "\n\n".join(parts)
    while len(text.encode("utf-8")) < MIN_BYTES:
        text += "\n\n" + text
    return text


def bench_hf(directory, text, mode, runs):
    tok = Tokenizer.from_file(str(directory / "tokenizer.json"))
    lines = text.split("\n")
    times, ids = [], None
    for _ in range(runs):
        start = time.perf_counter()
        if mode == "document":
            ids = tok.encode(text, add_special_tokens=False).ids
        else:
            ids = [i for e in tok.encode_batch(lines, add_special_tokens=False) for i in e.ids]
        times.append(time.perf_counter() - start)
    return times[0], statistics.median(times[1:]), ids


def bench_one(binary, directory, text, text_path, mode, runs, tmp):
    megabytes = len(text.encode("utf-8")) / 1e6
    out_json, out_ids = tmp / "hive.json", tmp / "ids.json"
    subprocess.run([str(binary), "--tokenizer", str(directory), "--text", str(text_path),
                    "--mode", mode, "--runs", str(runs), "--json", str(out_json),
                    "--ids", str(out_ids)], check=True, stdout=subprocess.DEVNULL)
    hive = json.loads(out_json.read_text())
    hf_first, hf_median, hf_ids = bench_hf(directory, text, mode, runs)
    return {"tokenizer": directory.name, "mode": mode, "megabytes": round(megabytes, 3),
            "tokens": len(hf_ids),
            "hive_mb_per_s": round(hive["median_mb_per_s"], 2),
            "hf_mb_per_s": round(megabytes / hf_median, 2),
            "hive_first_mb_per_s": round(hive["first_mb_per_s"], 2),
            "hf_first_mb_per_s": round(megabytes / hf_first, 2),
            "same_ids": json.loads(out_ids.read_text()) == hf_ids}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    binary = pathlib.Path(args.build) / "bin" / "bench_tokenizer"
    text = bench_text()
    megabytes = len(text.encode("utf-8")) / 1e6
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        text_path = pathlib.Path(tmp) / "text.txt"
        text_path.write_text(text, encoding="utf-8")
        for name in TOKENIZERS:
            directory = ROOT / "tests" / "data" / "tokenizers" / name
            for mode in ("document", "lines"):
                rows.append(bench_one(binary, directory, text, text_path, mode, args.runs,
                                      pathlib.Path(tmp)))
    print(f"text: {megabytes:.3f} MB, median of {args.runs - 1} warm runs, one thread, "
          f"tokenizers {tokenizers.__version__}")
    header = ["tokenizer", "mode", "tokens", "hive MB/s", "HF MB/s", "speed-up", "hive cold",
              "HF cold", "same ids"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print(f"| {r['tokenizer']} | {r['mode']} | {r['tokens']} | {r['hive_mb_per_s']:.2f} | "
              f"{r['hf_mb_per_s']:.2f} | {r['hive_mb_per_s'] / r['hf_mb_per_s']:.2f}x | "
              f"{r['hive_first_mb_per_s']:.2f} | {r['hf_first_mb_per_s']:.2f} | "
              f"{'yes' if r['same_ids'] else 'NO'} |")
    result = {"text_megabytes": round(megabytes, 3), "runs": args.runs,
              "tokenizers_version": tokenizers.__version__, "results": rows}
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if all(r["same_ids"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
