#!/usr/bin/env python3
"""Hive against llama.cpp on identical weights, in one run (docs/benchmarks.md).

  .venv/bin/python tools/bench/llama_cpp_side_by_side.py --llama-bin DIR
      [--build build] [--models dense,moe] [--rounds 3] [--threads N]
      [--prefill 512] [--decode 64] [--batches 16,64] [--batch-prompt 32]
      [--batch-decode 16] [--matmul-precision f32|bf16] [--quant q8_0,q4_k_m]
      [--json FILE]

--prefill 0 and --batches "" leave those rows out (decode alone, more rounds).

DIR holds llama.cpp's `llama-bench` and `llama-batched-bench`, built from its
source outside this repository. The models are tools/make_gguf_pair.py's
(written first when missing): the same bf16 weights as a Hugging Face
directory for Hive and as GGUF for llama.cpp. With --quant, both engines run
the same quantized GGUF file instead, one per type, written from the Hugging
Face directory by `hive quantize` (so llama.cpp loading it is checked too):
Hive multiplies the blocks as stored, and every row's roofline counts the
bytes the quantized weights take.

Rows, each as tokens/s, the median of the rounds, and Hive / llama.cpp:
  ppP       a P-token prompt in one batch (llama-bench -p P; Hive: bench_rows)
  tgN       N tokens at batch 1 (llama-bench -n N)
  batchB    B sequences decoding together after --batch-prompt tokens each:
            the decode steps' tokens/s (llama-batched-bench's S_TG)
Each row also gets its roofline, from bench_rows (tools/bench/roofline.hpp):
the tokens/s no engine passes on this machine, the larger of the row's bytes
over the read bandwidth and its FLOP over the arithmetic peak, both probed in
the same run; the table gives each engine's fraction of it, and the ceiling
of Hive / llama.cpp that llama.cpp's fraction leaves (1 / its fraction).
--matmul-precision sets Hive's HIVE_MATMUL_PRECISION (kernels/cpu/cpu_features.hpp):
bf16, Hive's default, rounds activations to bf16 for vdpbf16ps or AMX tiles, as
llama.cpp does with bf16 weights; f32 is Hive's exact, ISA-independent mode.
The engines alternate (Hive first in odd rounds, llama.cpp first in even
ones), with the same thread count.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"side_by_side: {' '.join(map(str, cmd))} failed ({result.returncode}):\n"
                 f"{result.stderr[-2000:]}")
    return result.stdout


def hive_rows(args, model_dir):
    out = pathlib.Path(args.work) / "hive.json"
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               HIVE_MATMUL_PRECISION=args.matmul_precision)
    run([args.build + "/bin/bench_rows", "--model", model_dir, "--prefill", str(args.prefill),
         "--decode", str(args.decode), "--batches", args.batches,
         "--batch-prompt", str(args.batch_prompt), "--batch-decode", str(args.batch_decode),
         "--json", out], env)
    report = json.loads(out.read_text())
    rows = {r["row"]: r["tokens_per_s"] for r in report["rows"]}
    rooflines = {r["row"]: r["roofline_tokens_per_s"] for r in report["rows"]}
    return rows, rooflines, report


def llama_rows(args, gguf):
    rows = {}
    bench = run([args.llama_bin + "/llama-bench", "-m", gguf, "-t", str(args.threads),
                 "-p", str(args.prefill), "-n", str(args.decode), "-r", "1", "-o", "json"])
    for test in json.loads(bench):
        if test["n_prompt"] > 0:
            rows[f"pp{test['n_prompt']}"] = test["avg_ts"]
        else:
            rows[f"tg{test['n_gen']}"] = test["avg_ts"]
    if not args.batches:  # --batches "": the single-sequence rows alone
        return rows
    batches = [int(b) for b in args.batches.split(",")]
    context = max(batches) * (args.batch_prompt + args.batch_decode) + 64
    batched = run([args.llama_bin + "/llama-batched-bench", "-m", gguf, "-t", str(args.threads),
                   "-c", str(context), "-b", "2048", "-ub", "512",
                   "-npp", str(args.batch_prompt), "-ntg", str(args.batch_decode),
                   "-npl", args.batches, "--output-format", "jsonl"])
    for line in batched.splitlines():
        if line.startswith('{"n_kv_max"'):
            result = json.loads(line)
            rows[f"batch{result['pl']}"] = result["speed_tg"]
    return rows


def model_files(args):
    """(label, Hive's model path, llama.cpp's GGUF) for each model and type."""
    for shape in args.models.split(","):
        pair = pathlib.Path(args.work) / f"pair-{shape}"
        if not (pair / "model.gguf").exists():
            run([sys.executable, str(ROOT / "tools" / "make_gguf_pair.py"), shape, str(pair)])
        if not args.quant:
            yield shape, str(pair / "hf"), str(pair / "model.gguf")
            continue
        for qtype in args.quant.split(","):
            gguf = pair / f"hive-{qtype}.gguf"
            if not gguf.exists():
                run([args.build + "/bin/hive", "quantize", "--model", str(pair / "hf"),
                     "--type", qtype, "--out", str(gguf)])
            yield f"{shape}-{qtype}", str(gguf), str(gguf)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-bin", required=True)
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--models", default="dense,moe")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--prefill", type=int, default=512)
    parser.add_argument("--decode", type=int, default=64)
    parser.add_argument("--batches", default="16,64")
    parser.add_argument("--batch-prompt", type=int, default=32)
    parser.add_argument("--batch-decode", type=int, default=16)
    parser.add_argument("--work", default=str(ROOT / "bench_models"))
    parser.add_argument("--matmul-precision", choices=["f32", "bf16"], default="bf16")
    parser.add_argument("--quant", default="",
                        help="GGUF types to run from one file each (q8_0,q4_0,q4_k_m); "
                             "empty: the bf16 pair")
    parser.add_argument("--json")
    args = parser.parse_args()

    report = {"threads": args.threads, "rounds": args.rounds,
              "matmul_precision": args.matmul_precision, "models": {}}
    for label, hive_model, gguf in model_files(args):
        hive, llama, rooflines, probes = [], [], [], []
        for r in range(args.rounds):
            order = ("hive", "llama") if r % 2 == 0 else ("llama", "hive")
            for engine in order:
                if engine == "hive":
                    rows, row_rooflines, probe = hive_rows(args, hive_model)
                    hive.append(rows)
                    rooflines.append(row_rooflines)
                    probes.append(probe)
                else:
                    rows = llama_rows(args, gguf)
                    llama.append(rows)
                print(f"{label} round {r + 1} {engine}: {json.dumps(rows)}", file=sys.stderr)
        bandwidth = statistics.median(p["read_bandwidth_bytes_per_s"] for p in probes)
        peak = statistics.median(p["peak_flops_per_s"] for p in probes)
        bytes_per_token = probes[0]["weight_bytes_per_decode_token"]
        table = {}
        for row in hive[0]:
            h = statistics.median(x[row] for x in hive)
            lc = statistics.median(x[row] for x in llama)
            roofline = statistics.median(x[row] for x in rooflines)
            # Each round's pair ran back to back: the median of their ratios
            # is steadier than the ratio of medians when the machine's
            # speed drifts between rounds.
            paired = statistics.median(x[row] / y[row] for x, y in zip(hive, llama))
            table[row] = {"hive": h, "llama_cpp": lc, "ratio": h / lc, "paired_ratio": paired,
                          "roofline_tokens_per_s": roofline,
                          "hive_of_roofline": h / roofline, "llama_cpp_of_roofline": lc / roofline,
                          "ratio_ceiling": roofline / lc,
                          "hive_runs": [x[row] for x in hive],
                          "llama_cpp_runs": [x[row] for x in llama],
                          "roofline_runs": [x[row] for x in rooflines]}
        report["models"][label] = {"read_bandwidth_bytes_per_s": bandwidth,
                                   "peak_flops_per_s": peak,
                                   "peak_instruction": probes[0]["peak_instruction"],
                                   "weight_bytes_per_decode_token": bytes_per_token,
                                   "rows": table}
        print(f"\n{label}: read {bandwidth / 1e9:.1f} GB/s, peak {peak / 1e9:.0f} GFLOP/s "
              f"({probes[0]['peak_instruction'] or 'no SIMD path'}), "
              f"{bytes_per_token / 1e6:.0f} MB per decode token, {args.threads} threads, "
              f"median of {args.rounds} rounds, Hive matmul {args.matmul_precision}\n")
        print("| row | Hive tok/s | llama.cpp tok/s | Hive / llama.cpp | paired rounds | "
              "roofline tok/s | of roofline (Hive, llama.cpp) | ceiling |")
        print("|---|---|---|---|---|---|---|---|")
        for row, t in table.items():
            print(f"| {row} | {t['hive']:.2f} | {t['llama_cpp']:.2f} | {t['ratio']:.2f}x | "
                  f"{t['paired_ratio']:.2f}x | {t['roofline_tokens_per_s']:.1f} | "
                  f"{t['hive_of_roofline']:.0%}, {t['llama_cpp_of_roofline']:.0%} | "
                  f"{t['ratio_ceiling']:.2f}x |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
