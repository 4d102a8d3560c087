#!/usr/bin/env python3
"""Trains one of the bundled models (tools/bundled_models.py) on the corpus.

AdamW with linear warm-up and cosine decay, batches of random 512-token
windows, one CPU thread, everything seeded. The target also minimises the
router's load-balancing loss. The draft can learn from the target as well
(--teacher): its loss is the mean of the data cross-entropy and the KL
divergence from the target's next-token distribution, which is what raises
the rate at which the two agree.

Writes <out>/ as a Hugging Face directory (bf16 safetensors, tokenizer,
generation config) and <out>/loss.tsv (step, tokens, train loss,
held-out loss, learning rate, seconds).

Run from the repository root, after make_corpus.py and train_tokenizer.py:
  nice -n 10 .venv/bin/python tools/train_model.py --model hive-moe-target --steps 1000 \
      --warmup 60 --eval-every 100
  nice -n 10 .venv/bin/python tools/train_model.py --model hive-draft --steps 600 \
      --warmup 60 --eval-every 100 --teacher models/hive-moe-target
"""
import argparse
import json
import math
import pathlib
import shutil
import sys
import time

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bundled_models as bm  # noqa: E402

BATCH = 8
EVAL_WINDOWS = 24


def learning_rate(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


@torch.no_grad()
def heldout_loss(model, windows):
    model.eval()
    loss = sum(float(model(input_ids=w[None], labels=w[None]).loss) for w in windows)
    model.train()
    return loss / len(windows)


def step_loss(model, teacher, batch):
    is_moe = bool(getattr(model.config, "num_experts", 0))
    out = model(input_ids=batch, labels=batch, output_router_logits=is_moe)
    if teacher is None:
        return out.loss
    with torch.no_grad():
        target_logits = teacher(input_ids=batch).logits
    kl = F.kl_div(F.log_softmax(out.logits, -1).flatten(0, 1),
                  F.log_softmax(target_logits, -1).flatten(0, 1), log_target=True,
                  reduction="batchmean")
    return 0.5 * out.loss + 0.5 * kl


def save(model, name, out, tokenizer_dir):
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.safetensors*"):
        stale.unlink()
    model.to(torch.bfloat16).save_pretrained(out)
    model.to(torch.float32)
    for file in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(pathlib.Path(tokenizer_dir) / file, out / file)
    generation = {"eos_token_id": [bm.ENDOFTEXT, bm.IM_END], "pad_token_id": bm.ENDOFTEXT,
                  "do_sample": False, "max_new_tokens": 128}
    (out / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
    print(f"{name}: saved to {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, choices=sorted(bm.MODELS))
    parser.add_argument("--steps", type=int, required=True, help="0 saves the initialisation")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20240607)
    parser.add_argument("--teacher", help="target model directory to distil from")
    parser.add_argument("--corpus", default="build-corpus")
    parser.add_argument("--tokenizer", default="build-corpus/tokenizer")
    parser.add_argument("--out", help="default: models/<model>")
    parser.add_argument("--log-every", type=int, default=25)
    parser.add_argument("--eval-every", type=int, default=250)
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = pathlib.Path(args.out or f"models/{args.model}")

    tokenizer = Tokenizer.from_file(str(pathlib.Path(args.tokenizer) / "tokenizer.json"))
    train = bm.token_stream(args.corpus, tokenizer, "train", args.seed)
    heldout = bm.token_stream(args.corpus, tokenizer, "heldout", args.seed, chat=False)
    eval_windows = [heldout[i * bm.CONTEXT:(i + 1) * bm.CONTEXT] for i in range(EVAL_WINDOWS)]
    model = bm.make_model(args.model, args.seed).train()
    teacher = bm.load_model(args.teacher) if args.teacher else None
    total, active = bm.count_parameters(model)
    print(f"{args.model}: {total} parameters ({active} active), {len(train)} training tokens, "
          f"{args.steps} steps of {BATCH}x{bm.CONTEXT}")

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.95))
    log_path = out / "loss.tsv"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "w")
    log.write("step\ttokens\ttrain_loss\theldout_loss\tlr\tseconds\n")
    start, running = time.time(), []
    data = bm.batches(train, BATCH, args.seed)
    for step in range(args.steps):
        lr = learning_rate(step, args.steps, args.lr, args.warmup)
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss = step_loss(model, teacher, next(data)[:, :bm.CONTEXT])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        running.append(loss.item())
        last = step + 1 == args.steps
        if (step + 1) % args.log_every == 0 or last:
            evaluated = (step + 1) % args.eval_every == 0 or last
            held = f"{heldout_loss(model, eval_windows):.4f}" if evaluated else ""
            line = (f"{step + 1}\t{(step + 1) * BATCH * bm.CONTEXT}\t"
                    f"{sum(running) / len(running):.4f}\t{held}\t{lr:.2e}\t{time.time() - start:.0f}")
            log.write(line + "\n")
            log.flush()
            print(line, flush=True)
            running = []
    save(model.eval(), args.model, out, args.tokenizer)


if __name__ == "__main__":
    main()
