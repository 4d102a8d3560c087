#!/usr/bin/env python3
"""Generates the golden-test checkpoints and their transformers references.

For every supported architecture this writes a small random-weight Hugging
Face checkpoint to tests/data/models/<name>/ and, next to it, golden.safetensors:

  prompt_<i>  I32 [P]        fixed prompt token ids
  greedy_<i>  I32 [16]       transformers' greedy continuation (float32)
  logits_<i>  F32 [P+16, V]  logits at every position of prompt + continuation

Run from the repository root after `tools/setup --torch`:
  .venv/bin/python tools/make_golden.py
The versions used are written to tests/data/models/VERSIONS.json.
"""
import json
import zlib
import pathlib
import sys

import numpy as np
import safetensors
import torch
import transformers
from safetensors.torch import save_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "models"
NEW_TOKENS = 16
SEED = 1234

COMMON = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
              initializer_range=0.1, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2)

# name -> (config class, model class, extra config, storage dtype, options)
MODELS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(rope_theta=500000.0,
                   rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                     high_freq_factor=4.0, original_max_position_embeddings=16)),
              torch.bfloat16, {}),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(sliding_window=8, head_dim=16),
                torch.float16, {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(rope_theta=1000000.0), torch.float32,
              {"shard": "60KB"}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(head_dim=32, tie_word_embeddings=True),
              torch.float32, {}),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM",
                dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=96),
                torch.bfloat16, {}),
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM",
                  dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=48,
                       shared_expert_intermediate_size=96, norm_topk_prob=False),
                  torch.float32, {}),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM",
                  dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=48,
                       norm_topk_prob=True, head_dim=16, num_hidden_layers=3,
                       mlp_only_layers=[1]),
                  torch.float32, {}),
}

# DeepSeek-V3: MLA (with and without q_lora_rank, v_head_dim != qk_head_dim),
# a dense first layer, grouped sigmoid routing with a random correction
# bias, shared experts; the second adds YaRN with mscale != mscale_all_dim
# (cos/sin and softmax scaled) and plain (non-interleaved) rope.
DEEPSEEK = dict(num_key_value_heads=4, kv_lora_rank=32, qk_rope_head_dim=16, qk_nope_head_dim=16,
                v_head_dim=24, moe_intermediate_size=32, num_hidden_layers=3,
                first_k_dense_replace=1, routed_scaling_factor=2.5)
MODELS["deepseek_v3"] = ("DeepseekV3Config", "DeepseekV3ForCausalLM",
                         dict(DEEPSEEK, q_lora_rank=48, n_routed_experts=8, n_group=2, topk_group=1,
                              num_experts_per_tok=2, n_shared_experts=2, norm_topk_prob=True),
                         torch.float32, {"min_gap": 0.025})
MODELS["deepseek_v3_yarn"] = ("DeepseekV3Config", "DeepseekV3ForCausalLM",
                              dict(DEEPSEEK, q_lora_rank=None, n_routed_experts=12, n_group=3,
                                   topk_group=2, num_experts_per_tok=3, n_shared_experts=1,
                                   norm_topk_prob=False, rope_interleave=False,
                                   rope_parameters=dict(rope_type="yarn", rope_theta=10000.0,
                                                        factor=4.0,
                                                        original_max_position_embeddings=64,
                                                        beta_fast=32.0, beta_slow=1.0,
                                                        mscale=0.9, mscale_all_dim=0.7)),
                              torch.bfloat16, {"min_gap": 0.01})

# DeepSeek-V2: the same MLA and experts with softmax routing and no
# correction bias. The first keeps the topk_group groups (of n_group) with
# the best single probability (group_limited_greedy), with q_lora_rank and
# YaRN (mscale != mscale_all_dim), as DeepSeek-V2 itself; the second is
# V2-Lite's shape: plain top-k (greedy, n_group unset), no q_lora_rank, bf16.
# Both scale the weights by routed_scaling_factor, unnormalised.
MODELS["deepseek_v2"] = ("DeepseekV2Config", "DeepseekV2ForCausalLM",
                         dict(DEEPSEEK, q_lora_rank=48, n_routed_experts=12, n_group=4, topk_group=2,
                              num_experts_per_tok=3, n_shared_experts=2, norm_topk_prob=False,
                              topk_method="group_limited_greedy",
                              rope_parameters=dict(rope_type="yarn", rope_theta=10000.0,
                                                   factor=4.0, original_max_position_embeddings=64,
                                                   beta_fast=32.0, beta_slow=1.0, mscale=1.0,
                                                   mscale_all_dim=0.8)),
                         torch.float32, {"min_gap": 0.025, "stable_routing": True})
MODELS["deepseek_v2_lite"] = ("DeepseekV2Config", "DeepseekV2ForCausalLM",
                              dict(DEEPSEEK, q_lora_rank=None, n_routed_experts=8,
                                   num_experts_per_tok=2, n_shared_experts=1, norm_topk_prob=False,
                                   topk_method="greedy"),
                              torch.bfloat16, {"min_gap": 0.01})

PROMPT_LENGTHS = [5, 19]


def randomize_(model, generator):
    """Give every weight, norm and bias a non-trivial random value, so a
    mistake in any of them shows in the logits (HF inits norms to 1 and
    biases to 0, which would hide them)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=generator))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))
        # DeepSeek's router bias is a buffer (zeros at init); random, it
        # changes which experts are chosen, so a mistake in it shows.
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.3 * torch.randn(b.shape, generator=generator))


def greedy_with_margin(model, prompt):
    """Greedy continuation by full recomputation; returns (tokens, logits over
    prompt + tokens, smallest top-1/top-2 gap relative to the logit scale)."""
    ids = list(prompt)
    min_gap = float("inf")
    for _ in range(NEW_TOKENS):
        with torch.no_grad():
            last = model(torch.tensor([ids])).logits[0, -1]
        top = torch.topk(last, 2).values
        min_gap = min(min_gap, float((top[0] - top[1]) / last.abs().max()))
        ids.append(int(torch.argmax(last)))
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
    return ids[len(prompt):], logits, min_gap


def chosen_experts(model, ids, round_kv):
    """Each router's chosen experts for every token of `ids`; with round_kv,
    the cached latent and rope key rounded to bf16 first, as a bf16 KV cache
    holds them (rounded before the rope here: an error of the same size)."""
    picks, hooks = [], []
    for layer in model.model.layers:
        attn = layer.self_attn
        rope = attn.qk_rope_head_dim
        if round_kv:
            hooks.append(attn.kv_a_layernorm.register_forward_hook(
                lambda m, i, o: o.bfloat16().float()))
            hooks.append(attn.kv_a_proj_with_mqa.register_forward_hook(
                lambda m, i, o, r=rope: torch.cat([o[..., :-r], o[..., -r:].bfloat16().float()], -1)))
        if hasattr(layer.mlp, "gate"):
            hooks.append(layer.mlp.gate.register_forward_hook(
                lambda m, i, o: picks.append(o[2].sort(-1).values)))
    with torch.no_grad():
        model(torch.tensor([ids]))
    for h in hooks:
        h.remove()
    return picks


def make(name, spec):
    config_cls, model_cls, extra, dtype, options = spec
    config = getattr(transformers, config_cls)(**{**COMMON, **extra})
    config._attn_implementation = "eager"
    torch.manual_seed(SEED)
    generator = torch.Generator().manual_seed(SEED + zlib.crc32(name.encode()) % 1000)
    model = getattr(transformers, model_cls)(config).eval()
    randomize_(model, generator)
    out = OUT / name
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.safetensors*"):
        stale.unlink()
    model.to(dtype).save_pretrained(out, max_shard_size=options.get("shard", "50GB"))
    # The reference runs in float32 on exactly the stored (rounded) weights.
    reference = getattr(transformers, model_cls).from_pretrained(
        out, dtype=torch.float32, attn_implementation="eager").eval()
    tensors = {}
    rng = np.random.default_rng(SEED)
    for i, length in enumerate(PROMPT_LENGTHS):
        for attempt in range(50):
            prompt = [int(t) for t in rng.integers(3, config.vocab_size, size=length)]
            tokens, logits, gap = greedy_with_margin(reference, prompt)
            # No near-ties: greedy must be stable under 1e-4 error (and, with
            # min_gap, under the bf16 KV cache's error: MLA's latent rows
            # in bf16 moved a 0.006 gap).
            # With stable_routing, no expert choice flips under the bf16 KV
            # cache's rounding either: a flip moves the logits far more than
            # the rounding itself (group-limited routing flips whole groups).
            stable = not options.get("stable_routing") or all(
                torch.equal(a, b) for a, b in zip(chosen_experts(reference, prompt + tokens, False),
                                                  chosen_experts(reference, prompt + tokens, True)))
            if gap > options.get("min_gap", 1e-3) and stable:
                break
        else:
            sys.exit(f"{name}: no prompt of length {length} without near-tied logits")
        tensors[f"prompt_{i}"] = torch.tensor(prompt, dtype=torch.int32)
        tensors[f"greedy_{i}"] = torch.tensor(tokens, dtype=torch.int32)
        tensors[f"logits_{i}"] = logits.float().contiguous()
        print(f"{name}: prompt {i} ({length} tokens) -> {tokens} (min gap {gap:.4f})")
    save_file(tensors, out / "golden.safetensors")
    # Counts for `hive inspect`, from the torch module (tied weights once;
    # a token uses top_k of num_experts experts in each MoE layer).
    total = reference.num_parameters()
    expert_params = sum(p.numel() for n, p in reference.named_parameters() if ".experts." in n)
    experts = (getattr(config, "num_experts", None) or getattr(config, "num_local_experts", None)
               or getattr(config, "n_routed_experts", 0))
    active = total - (expert_params * (experts - config.num_experts_per_tok) // experts
                      if experts else 0)
    kv_bytes = (2 * config.num_hidden_layers * config.num_key_value_heads
                * (getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads) * 4)
    if hasattr(config, "kv_lora_rank"):  # MLA: one latent row per token and layer
        kv_bytes = config.num_hidden_layers * (config.kv_lora_rank + config.qk_rope_head_dim) * 4
    expected = {"parameters": total, "active_parameters": active,
                "kv_bytes_per_token_f32": kv_bytes}
    (out / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def main():
    names = sys.argv[1:] or list(MODELS)
    for name in names:
        make(name, MODELS[name])
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "safetensors": safetensors.__version__, "numpy": np.__version__,
                "python": sys.version.split()[0], "seed": SEED,
                "command": ".venv/bin/python tools/make_golden.py"}
    (OUT / "VERSIONS.json").write_text(json.dumps(versions, indent=2) + "\n")


if __name__ == "__main__":
    main()
