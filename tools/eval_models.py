#!/usr/bin/env python3
"""Measures the bundled models with transformers and writes the test fixtures.

  held-out perplexity  the held-out split of tools/make_corpus.py (documents
                       joined by blank lines), in consecutive windows of
                       max_position_embeddings tokens, exactly as
                       `hive eval-ppl` cuts them
  agreement (alpha)    for each prompt the target continues greedily; at each
                       position the draft, given the same history, picks its
                       greedy token; alpha = the fraction of equal picks, as
                       `hive agree` computes it

Writes, for tests/models:
  tests/models/data/heldout_sample.txt    a few KB of held-out text
  tests/models/data/prompts.jsonl         prompts for the agreement test
  tests/models/data/expected.json         transformers' numbers on those, and
                                          the ids of a plain and a chat prompt
and prints the numbers for the model cards (--card also writes them to
models/metrics.json, the held-out split as one text to <corpus>/heldout.txt
and the agreement prompts to tests/models/data/agreement_prompts.jsonl;
prompts files are JSON lines, as `hive agree --prompts` reads them).

Run from the repository root after training both models:
  .venv/bin/python tools/eval_models.py --card
"""
import argparse
import json
import math
import pathlib
import sys

import torch
from transformers import AutoTokenizer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bundled_models as bm  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "models" / "data"
TARGET, DRAFT = ROOT / "models" / "hive-moe-target", ROOT / "models" / "hive-draft"
SAMPLE_BYTES = 4000
TEST_PROMPTS = ["Once upon a time", "The Lord said unto Moses,", "A computer is",
                "To install a package, the administrator", "Love is", "In the beginning",
                "He who laughs last", "The best way to"]
MAX_TOKENS = 32


@torch.no_grad()
def perplexity(model, ids):
    """exp(mean NLL) over non-overlapping windows of max_position_embeddings tokens."""
    window = model.config.max_position_embeddings
    total, count = 0.0, 0
    for start in range(0, len(ids) - 1, window):
        chunk = torch.tensor([ids[start:start + window]])
        if chunk.shape[1] < 2:
            continue
        logits = model(chunk).logits[0].double()
        nll = torch.nn.functional.cross_entropy(logits[:-1], chunk[0, 1:], reduction="sum")
        total, count = total + float(nll), count + chunk.shape[1] - 1
    return math.exp(total / count), count


@torch.no_grad()
def agreement(target, draft, prompt_ids, max_tokens):
    """(agreed, positions): the target's greedy picks against the draft's on the same history."""
    eos = set(target.config.eos_token_id)
    ids = list(prompt_ids)
    picks = []
    for _ in range(max_tokens):
        pick = int(target(torch.tensor([ids])).logits[0, -1].argmax())
        picks.append(pick)
        ids.append(pick)
        if pick in eos:
            break
    history = torch.tensor([list(prompt_ids) + picks[:-1]])
    draft_picks = draft(history).logits[0, len(prompt_ids) - 1:].argmax(-1).tolist()
    return sum(int(a == b) for a, b in zip(picks, draft_picks)), len(picks)


@torch.no_grad()
def greedy(model, prompt_ids, max_tokens):
    """Greedy continuation that does not stop at end-of-sequence tokens."""
    ids = list(prompt_ids)
    for _ in range(max_tokens):
        ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
    return ids[len(prompt_ids):]


def heldout_text(corpus):
    with open(pathlib.Path(corpus) / "heldout.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def card_prompts(documents, count=100):
    """The first words of held-out documents: prompts neither model trained on."""
    prompts = []
    for text in documents:
        words = text.split()
        if len(words) >= 12:
            prompts.append(" ".join(words[:6]))
    step = max(1, len(prompts) // count)
    return prompts[::step][:count]


def total_agreement(target, draft, tokenizer, prompts, max_tokens):
    agreed = positions = 0
    for prompt in prompts:
        a, n = agreement(target, draft, tokenizer(prompt).input_ids, max_tokens)
        agreed, positions = agreed + a, positions + n
    return agreed / positions, agreed, positions


def write_prompts(path, prompts):
    """One {"prompt": text} JSON line per prompt, as hive agree reads them."""
    lines = (json.dumps({"prompt": p}, ensure_ascii=False) + "\n" for p in prompts)
    path.write_text("".join(lines), encoding="utf-8")


def write_fixtures(documents, tokenizer, target, draft):
    DATA.mkdir(parents=True, exist_ok=True)
    sample = ""
    for text in documents:
        if len(sample) >= SAMPLE_BYTES:
            break
        sample += text + "\n\n"
    (DATA / "heldout_sample.txt").write_text(sample, encoding="utf-8")
    write_prompts(DATA / "prompts.jsonl", TEST_PROMPTS)
    ids = tokenizer(sample).input_ids
    alpha, agreed, positions = total_agreement(target, draft, tokenizer, TEST_PROMPTS, MAX_TOKENS)
    chat = [{"role": "user", "content": "Tell me a fortune about computers."}]
    plain = tokenizer("Once upon a time").input_ids
    continuation = greedy(target, plain, 24)
    expected = {
        "heldout_sample_tokens": len(ids),
        "perplexity": {"hive-moe-target": perplexity(target, ids)[0],
                       "hive-draft": perplexity(draft, ids)[0]},
        "agreement": {"max_tokens": MAX_TOKENS, "alpha": alpha, "agreed": agreed,
                      "positions": positions},
        "plain_prompt": {"text": "Once upon a time", "ids": plain, "greedy_ids": continuation,
                         "greedy_text": tokenizer.decode(continuation, skip_special_tokens=True)},
        "chat_prompt": {"text": chat[0]["content"],
                        "ids": tokenizer.apply_chat_template(chat, add_generation_prompt=True,
                                                             tokenize=True, return_dict=False)},
    }
    (DATA / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    print(json.dumps({k: expected[k] for k in ("perplexity", "agreement")}, indent=2))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="build-corpus")
    parser.add_argument("--card", action="store_true", help="also measure the full held-out split")
    args = parser.parse_args()
    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(TARGET)
    target, draft = bm.load_model(TARGET), bm.load_model(DRAFT)
    documents = heldout_text(args.corpus)
    write_fixtures(documents, tokenizer, target, draft)
    if not args.card:
        return
    text = "\n\n".join(documents)
    (pathlib.Path(args.corpus) / "heldout.txt").write_text(text, encoding="utf-8")
    ids = tokenizer(text).input_ids
    train = bm.token_stream(args.corpus, tokenizer.backend_tokenizer, "train", seed=0)
    metrics = {"train_tokens": len(train), "heldout_tokens": len(ids)}
    for name, model in (("hive-moe-target", target), ("hive-draft", draft)):
        total, active = bm.count_parameters(model)
        ppl, _ = perplexity(model, ids)
        metrics[name] = {"parameters": total, "active_parameters": active, "heldout_perplexity": ppl}
    prompts = card_prompts(documents)
    write_prompts(DATA / "agreement_prompts.jsonl", prompts)
    alpha, agreed, positions = total_agreement(target, draft, tokenizer, prompts, MAX_TOKENS)
    metrics["agreement"] = {"prompts": len(prompts), "max_tokens": MAX_TOKENS, "alpha": alpha,
                            "agreed": agreed, "positions": positions}
    (ROOT / "models" / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    main()
