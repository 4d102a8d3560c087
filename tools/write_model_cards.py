#!/usr/bin/env python3
"""Writes models/<name>/README.md, the model cards of the bundled pair.

Every number comes from a file the other tools wrote: the corpus statistics
(build-corpus/stats.json), each model's config.json and loss.tsv, and
models/metrics.json (tools/eval_models.py --card). The training commands are
in models/training.json, filled in by hand with the commands that were run.

Run from the repository root after tools/eval_models.py --card:
  .venv/bin/python tools/write_model_cards.py
"""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"

LICENSES = {
    "fortunes": ("fortune cookie collections (all English files)", "BSD-3-Clause (fortune-mod)"),
    "bible-kjv-text": ("King James Version of the Bible, read with `bible` from bible-kjv",
                       "text public domain; package GPL-2+"),
    "dict-devil": ("Ambrose Bierce, The Devil's Dictionary", "public domain"),
    "debian-handbook": ("The Debian Administrator's Handbook, en-US HTML, tags stripped",
                        "GPL-2+ or CC-BY-SA-3.0"),
}
SOURCE_OF = {"fortunes": "fortunes", "bible": "bible-kjv-text", "devils_dictionary": "dict-devil",
             "handbook": "debian-handbook"}


def loss_table(path, every=50):
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    keep = [r for r in rows if int(r[0]) % every == 0 or r is rows[-1] or r[3]]
    peak = max(float(r[2]) for r in keep)
    floor = min(float(r[2]) for r in keep) - 0.5
    lines = ["| step | tokens | train loss | held-out loss | lr | seconds | |",
             "|---:|---:|---:|---:|---:|---:|:---|"]
    for step, tokens, train, held, lr, seconds in keep:
        bar = "#" * max(1, round(40 * (float(train) - floor) / (peak - floor)))
        lines.append(f"| {step} | {int(tokens):,} | {train} | {held or ''} | {lr} | {seconds} | `{bar}` |")
    return "\n".join(lines), rows[-1]


def data_section(stats):
    lines = ["| package (Debian 12) | version | text | license | documents | bytes |",
             "|---|---|---|---|---:|---:|"]
    for key, package in SOURCE_OF.items():
        what, license_ = LICENSES[package]
        lines.append(f"| {package} | {stats['packages'][package]} | {what} | {license_} | "
                     f"{stats[key]['documents']:,} | {stats[key]['bytes']:,} |")
    lines.append(f"| total | | | | | {stats['total_bytes']:,} |")
    return "\n".join(lines)


def sample_section(name):
    if name != "hive-moe-target":
        return ""
    plain = json.loads((ROOT / "tests" / "models" / "data" / "expected.json").read_text())["plain_prompt"]
    return f"""
Greedy continuation of "{plain['text']}" ({len(plain['greedy_ids'])} tokens, from
`tests/models/data/expected.json`):

> {plain['text']}{plain['greedy_text']}
"""


def card(name, stats, metrics, training):
    config = json.loads((MODELS / name / "config.json").read_text())
    table, last = loss_table(MODELS / name / "loss.tsv")
    own, other = metrics[name], metrics["hive-draft" if name == "hive-moe-target" else "hive-moe-target"]
    run = training[name]
    agreement = metrics["agreement"]
    alpha = agreement["alpha"]
    speedups = ", ".join(f"γ={g}: {(1 - alpha ** (g + 1)) / (1 - alpha):.2f}" for g in (2, 4, 8))
    role = ("the **target** of Hive's bundled speculative-decoding pair and the default model of "
            "`hive generate`" if name == "hive-moe-target" else
            "the **draft** of Hive's bundled speculative-decoding pair (target: hive-moe-target)")
    arch = config["architectures"][0]
    moe = (f"{config['num_local_experts'] if 'num_local_experts' in config else config['num_experts']} experts, "
           f"top-{config['num_experts_per_tok']}, expert FFN {config['moe_intermediate_size']}, "
           f"norm_topk_prob {str(config['norm_topk_prob']).lower()}, every layer sparse"
           if "moe_intermediate_size" in config else f"dense FFN {config['intermediate_size']}")
    return f"""# {name}

A small English language model trained from scratch by Hive's own scripts, {role}.
It writes fortune-cookie, King-James and handbook flavoured English; it knows no facts
worth trusting and exists so that Hive has something real to run, test and measure
without downloading weights.

## Model

| | |
|---|---|
| architecture | `{arch}` |
| layers | {config['num_hidden_layers']} (hidden {config['hidden_size']}, {config['num_attention_heads']} heads of {config['head_dim']}, {config['num_key_value_heads']} KV heads) |
| feed-forward | {moe} |
| parameters | {own['parameters']:,} total, {own['active_parameters']:,} active per token (tied embeddings counted once) |
| vocabulary | {config['vocab_size']} (byte-level BPE, shared by both models) |
| context | {config['max_position_embeddings']} tokens, RoPE θ {config['rope_parameters']['rope_theta']:g} |
| weights | bf16 safetensors |
| the other model of the pair | {other['parameters']:,} parameters ({max(own['parameters'], other['parameters']) / min(own['parameters'], other['parameters']):.1f}× {'more' if other['parameters'] > own['parameters'] else 'fewer'} than this one) |

## Tokenizer and chat template

Byte-level BPE (Hugging Face `tokenizers`, GPT-2 pre-tokenizer regex, no normalizer),
4096 tokens: 256 byte symbols, 3 special tokens and learned merges
(`tools/train_tokenizer.py`). No BOS token is added.

| id | token | use |
|---:|---|---|
| 0 | `<|endoftext|>` | ends a document; EOS, padding |
| 1 | `<|im_start|>` | opens a chat turn |
| 2 | `<|im_end|>` | closes a chat turn; EOS |

The chat template (`tokenizer_config.json`) is ChatML:
`<|im_start|>user\\n...<|im_end|>\\n<|im_start|>assistant\\n`. A quarter of the fortunes
were trained as the answer to "Tell me a fortune about <collection>." and half of the
dictionary entries as the answer to "What is <Word>?", so `hive generate --chat` has seen
that shape.

## Data

{stats['total_bytes'] / 1e6:.1f} MB of English text from Debian packages, built by
`tools/make_corpus.py` from the installed files (the corpus itself is not committed):

{data_section(stats)}

One document per fortune, Bible chapter, dictionary entry and handbook page; every 50th
document is held out. Training shuffles the documents (seeded) and joins them with
`<|endoftext|>`: {metrics['train_tokens']:,} training tokens, {metrics['heldout_tokens']:,} held-out tokens.

## License

GPL-2.0-or-later, the most restrictive licence among the packages above (each of the
others allows redistribution under it).

## Training

```
{run['command']}
```

Seed {run['seed']}; {last[0]} steps of 8 × 512 tokens ({int(last[1]):,} tokens); AdamW
(β 0.9/0.95, weight decay 0.1 on matrices), peak learning rate {run['lr']} with linear
warm-up and cosine decay to a tenth, gradient clipping at 1.0{run['extra']}. One CPU thread
(`torch.set_num_threads(1)`, `nice -n 10`): {int(last[5]) / 60:.0f} minutes of wall time on a
2-core machine busy with C++ builds (a step takes about {run['step_seconds_idle']} s on an idle
core, {float(run['step_seconds_idle']) * int(last[0]) / 60:.0f} minutes for the run). torch {run['torch']}, transformers {run['transformers']},
tokenizers {run['tokenizers']}.

Loss curve (`loss.tsv`: train loss is the loss optimised above, averaged over the last 25 steps;
held-out loss is the cross-entropy on the first 24 windows of the held-out split):

{table}

## Evaluation

| | |
|---|---|
| held-out perplexity | **{own['heldout_perplexity']:.2f}** ({metrics['heldout_tokens']:,} tokens, windows of 512, transformers in f32 on the bf16 weights) |
| greedy agreement α of the pair | **{alpha:.3f}** ({agreement['agreed']} of {agreement['positions']} positions: {agreement['prompts']} held-out document openings, up to {agreement['max_tokens']} target tokens each) |
| expected tokens per target pass, (1 − α^(γ+1)) / (1 − α) | {speedups} |

{sample_section(name)}{run.get('note', '')}

Reproduce with Hive (`build-corpus/heldout.txt` is the held-out split as one text, written by
`tools/eval_models.py --card`):

```
hive eval-ppl --model models/{name} --text build-corpus/heldout.txt
hive agree --target models/hive-moe-target --draft models/hive-draft \\
    --prompts tests/models/data/agreement_prompts.jsonl --max-tokens {agreement['max_tokens']}
```
"""


def main():
    stats = json.loads((ROOT / "build-corpus" / "stats.json").read_text())
    metrics = json.loads((MODELS / "metrics.json").read_text())
    training = json.loads((MODELS / "training.json").read_text())
    for name in ("hive-moe-target", "hive-draft"):
        (MODELS / name / "README.md").write_text(card(name, stats, metrics, training))
        print(f"wrote models/{name}/README.md")


if __name__ == "__main__":
    main()
