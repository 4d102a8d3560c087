#!/usr/bin/env python3
"""Writes an FP8 block-scaled checkpoint in DeepSeek-V3's released format,
and transformers' logits on its dequantized weights.

From the deepseek_v3 golden fixture (tools/make_golden.py) this writes
tests/data/models/deepseek_v3_fp8/:

  model.safetensors  the modules transformers' FP8 integration converts
                     (integrations/finegrained_fp8.py: every plain
                     nn.Linear but lm_head, and the routed experts) as
                     F8_E4M3 `<name>.weight` with F32 `<name>.weight_scale_inv`
                     [ceil(out/128), ceil(in/128)]: weight = fp8 * scale_inv
                     per 128 x 128 block, scale_inv = amax(|block|) / 448 as
                     DeepSeek quantized. The rest (embedding, norms, router
                     gates, lm_head) in BF16, the router bias in F32, as the
                     released checkpoints hold them.
  config.json        the source's, plus quantization_config {quant_method:
                     "fp8", fmt: "e4m3", activation_scheme: "dynamic",
                     weight_block_size: [128, 128]}
  golden.safetensors make_golden.py's layout: prompts, greedy tokens and
                     logits of transformers (float32) on the dequantized
                     weights (transformers' own CPU loading of FP8 files
                     cannot be the reference: it assumes whole blocks).

Run from the repository root: .venv/bin/python tools/make_fp8_fixture.py
"""
import json
import pathlib
import shutil
import sys
import tempfile

import numpy as np
import torch
import transformers
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import make_golden  # noqa: E402

SOURCE = make_golden.OUT / "deepseek_v3"
OUT = make_golden.OUT / "deepseek_v3_fp8"
BLOCK = 128
FP8_MAX = 448.0
QUANTIZATION = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                "weight_block_size": [BLOCK, BLOCK]}


def converted_weights(config):
    """The weight names transformers' replace_with_fp8_linear converts:
    plain nn.Linear modules but lm_head, and each routed expert's three."""
    model = transformers.DeepseekV3ForCausalLM(config)
    names = []
    for name, module in model.named_modules():
        if name.endswith(".experts"):
            for e in range(config.n_routed_experts):
                names += [f"{name}.{e}.{p}.weight" for p in ("gate_proj", "up_proj", "down_proj")]
        elif type(module) is torch.nn.Linear and name != "lm_head":
            names.append(name + ".weight")
    return names


def quantize(w):
    """w [out, in] -> (fp8 [out, in], scale_inv [ceil(out/128), ceil(in/128)] f32)."""
    rows, cols = w.shape
    r, c = -(-rows // BLOCK), -(-cols // BLOCK)
    padded = torch.zeros(r * BLOCK, c * BLOCK, dtype=torch.float32)
    padded[:rows, :cols] = w.float()
    blocks = padded.view(r, BLOCK, c, BLOCK)
    amax = blocks.abs().amax(dim=(1, 3))
    scale = torch.where(amax > 0, amax / FP8_MAX, torch.ones_like(amax))
    q = (blocks / scale[:, None, :, None]).to(torch.float8_e4m3fn)
    return q.view(r * BLOCK, c * BLOCK)[:rows, :cols].contiguous(), scale.contiguous()


def dequantize(q, scale):
    rows, cols = q.shape
    full = scale.repeat_interleave(BLOCK, 0).repeat_interleave(BLOCK, 1)[:rows, :cols]
    return q.float() * full


def main():
    config = transformers.DeepseekV3Config.from_pretrained(SOURCE)
    source = load_file(SOURCE / "model.safetensors")
    fp8_names = set(converted_weights(config))
    missing = fp8_names - set(source)
    if missing:
        sys.exit(f"{SOURCE}: no tensors {sorted(missing)[:3]}")
    stored, dequantized = {}, {}
    for name, t in source.items():
        if name in fp8_names:
            q, scale = quantize(t)
            stored[name], stored[name + "_scale_inv"] = q, scale
            dequantized[name] = dequantize(q, scale)
        else:
            kept = t.float() if name.endswith("e_score_correction_bias") else t.bfloat16()
            stored[name] = kept
            dequantized[name] = kept.float()
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    save_file(stored, OUT / "model.safetensors", metadata={"format": "pt"})
    config_json = json.loads((SOURCE / "config.json").read_text())
    config_json["quantization_config"] = QUANTIZATION
    (OUT / "config.json").write_text(json.dumps(config_json, indent=2) + "\n")
    shutil.copy(SOURCE / "generation_config.json", OUT / "generation_config.json")

    with tempfile.TemporaryDirectory() as tmp:
        plain = pathlib.Path(tmp)
        save_file(dequantized, plain / "model.safetensors", metadata={"format": "pt"})
        shutil.copy(SOURCE / "config.json", plain / "config.json")
        reference = transformers.DeepseekV3ForCausalLM.from_pretrained(
            plain, dtype=torch.float32, attn_implementation="eager").eval()
        tensors = {}
        rng = np.random.default_rng(make_golden.SEED)
        for i, length in enumerate(make_golden.PROMPT_LENGTHS):
            for _ in range(50):
                prompt = [int(t) for t in rng.integers(3, config.vocab_size, size=length)]
                tokens, logits, gap = make_golden.greedy_with_margin(reference, prompt)
                if gap > 0.025:  # deepseek_v3's min_gap: stable under a bf16 KV cache
                    break
            else:
                sys.exit(f"no prompt of length {length} without near-tied logits")
            tensors[f"prompt_{i}"] = torch.tensor(prompt, dtype=torch.int32)
            tensors[f"greedy_{i}"] = torch.tensor(tokens, dtype=torch.int32)
            tensors[f"logits_{i}"] = logits.float().contiguous()
            print(f"deepseek_v3_fp8: prompt {i} ({length} tokens) -> {tokens} (min gap {gap:.4f})")
        save_file(tensors, OUT / "golden.safetensors")
    print(f"{len(fp8_names)} FP8 weights; wrote {OUT}")


if __name__ == "__main__":
    main()
