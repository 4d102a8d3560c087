"""llama.cpp's GGUF layout of a Hugging Face checkpoint, as its converter
(convert_hf_to_gguf.py) writes it, for the writers that need one without
llama.cpp's source tree: tools/make_gguf_pair.py (benchmark weights) and
tools/make_gguf_models.py (test fixtures, the bundled model as a GGUF).

Tensors arrive as numpy arrays by Hugging Face name: float32, float16, or
uint16 holding bf16 bits. The mapping:
  - names: model.layers.N.self_attn.q_proj.weight -> blk.N.attn_q.weight, ...
  - experts stacked per layer and projection: [experts, rows, cols];
  - Llama's q and k rows (weights and biases) permuted from Hugging Face's
    rotate-half order to GGML's adjacent rope pairs (Qwen keeps NeoX order);
  - 1-D tensors (norms, biases) and routers widened to float32, exactly;
  - Llama 3 rope scaling written as the rope_freqs.weight divisors.
"""
import math
import re

import numpy as np

ARCHITECTURES = {"llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2": "qwen2",
                 "qwen3": "qwen3", "qwen2_moe": "qwen2moe", "qwen3_moe": "qwen3moe"}
GLOBAL = {"model.embed_tokens": "token_embd", "model.norm": "output_norm", "lm_head": "output"}
LAYER = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
         "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
         "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
         "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
         "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
         "mlp.gate": "ffn_gate_inp", "block_sparse_moe.gate": "ffn_gate_inp",
         "mlp.shared_expert.gate_proj": "ffn_gate_shexp",
         "mlp.shared_expert.up_proj": "ffn_up_shexp",
         "mlp.shared_expert.down_proj": "ffn_down_shexp",
         "mlp.shared_expert_gate": "ffn_gate_inp_shexp"}
EXPERTS = {"gate_proj": "ffn_gate_exps", "up_proj": "ffn_up_exps", "down_proj": "ffn_down_exps",
           "w1": "ffn_gate_exps", "w3": "ffn_up_exps", "w2": "ffn_down_exps"}
ROUTERS = ("ffn_gate_inp", "ffn_gate_inp_shexp")
LAYER_NAME = re.compile(r"model\.layers\.(\d+)\.(.+)\.(weight|bias)$")
EXPERT_NAME = re.compile(r"(?:mlp|block_sparse_moe)\.experts\.(\d+)\.(\w+)$")


def widen(bits):
    """bf16 bits -> float32, exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def as_float32(array):
    return widen(array) if array.dtype == np.uint16 else array.astype(np.float32)


def permute_rope_rows(w, n_head):
    """Hugging Face's rotate-half row order -> GGML's adjacent pairs, per head
    (as llama.cpp's converter does for Llama's q and k projections)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def gguf_name(hf_name):
    """(GGUF name, expert index or None) of a Hugging Face tensor name."""
    stem, _, suffix = hf_name.rpartition(".")
    if stem in GLOBAL:
        return f"{GLOBAL[stem]}.{suffix}", None
    match = LAYER_NAME.match(hf_name)
    if not match:
        raise KeyError(f"{hf_name}: no GGUF name")
    layer, part, suffix = match.groups()
    expert = EXPERT_NAME.match(part)
    if expert:
        return f"blk.{layer}.{EXPERTS[expert.group(2)]}.{suffix}", int(expert.group(1))
    return f"blk.{layer}.{LAYER[part]}.{suffix}", None


def gguf_tensors(c, hf):
    """(GGUF name, array) for every tensor of `hf` (name -> array)."""
    llama = c["model_type"] in ("llama", "mistral", "mixtral")
    heads = {"attn_q": c["num_attention_heads"], "attn_k": c["num_key_value_heads"]}
    out, stacks = {}, {}
    for name, array in hf.items():
        gguf, expert = gguf_name(name)
        if expert is not None:
            stacks.setdefault(gguf, {})[expert] = array
            continue
        base = gguf.split(".")[2] if gguf.startswith("blk.") else ""
        if llama and base in heads:
            array = permute_rope_rows(array, heads[base])
        if array.ndim == 1 or base in ROUTERS:
            array = as_float32(array)
        out[gguf] = array
    for gguf, experts in stacks.items():
        out[gguf] = np.stack([experts[e] for e in range(len(experts))])
    yield from out.items()


def rope_parameters(c):
    """transformers 5's rope_parameters, or 4.x's rope_theta and rope_scaling."""
    rope = dict(c.get("rope_scaling") or c.get("rope_parameters") or {})
    rope.setdefault("rope_theta", c.get("rope_theta", 10000.0))
    rope.setdefault("rope_type", rope.get("type", "default"))
    return rope


def llama3_rope_factors(rope, head_dim):
    """The converter's rope_freqs.weight for Llama 3 scaling: per frequency,
    1 (short wavelengths), factor (long ones) or the smooth blend between."""
    base, factor = rope["rope_theta"], rope.get("factor", 8.0)
    low, high = rope.get("low_freq_factor", 1.0), rope.get("high_freq_factor", 4.0)
    old = rope.get("original_max_position_embeddings", 8192)
    exponents = np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim)
    freqs = np.float32(1.0) / (np.float32(base) ** exponents)
    factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / float(freq)
        if wavelen < old / high:
            factors.append(1.0)
        elif wavelen > old / low:
            factors.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def write_metadata(w, c):
    """The architecture keys of config.json `c`; returns extra tensors (rope_freqs)."""
    import gguf

    head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c.get("num_key_value_heads", c["num_attention_heads"]))
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_vocab_size(c["vocab_size"])
    rope = rope_parameters(c)
    w.add_rope_freq_base(rope["rope_theta"])
    extra = {}
    if rope["rope_type"] == "linear":
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(rope["factor"])
    elif rope["rope_type"] == "llama3":
        extra["rope_freqs.weight"] = llama3_rope_factors(rope, head_dim)
    elif rope["rope_type"] != "default":
        raise ValueError(f"rope type {rope['rope_type']} has no writer here")
    if c["model_type"] in ("mixtral", "qwen2_moe", "qwen3_moe"):
        experts = c.get("num_local_experts") or c["num_experts"]
        w.add_expert_count(experts)
        w.add_expert_used_count(c["num_experts_per_tok"])
        if "moe_intermediate_size" in c:
            w.add_expert_feed_forward_length(c["moe_intermediate_size"])
        if c.get("shared_expert_intermediate_size"):
            w.add_expert_shared_feed_forward_length(c["shared_expert_intermediate_size"])
    eos = c.get("eos_token_id")
    eos = eos if isinstance(eos, list) else [] if eos is None else [eos]
    if eos:
        w.add_eos_token_id(eos[0])
    if len(eos) > 1:  # llama.cpp's end-of-turn id: the chat's <|im_end|>
        w.add_eot_token_id(eos[1])
    if c.get("bos_token_id") is not None:
        w.add_bos_token_id(c["bos_token_id"])
    return extra


def add_tokenizer(w, tokenizer_dir, vocab_size):
    """A Hugging Face byte-level BPE (tokenizer.json, tokenizer_config.json)
    as GGUF's "gpt2" tokenizer, with its chat template."""
    import json

    tok = json.loads((tokenizer_dir / "tokenizer.json").read_text())
    config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text())
    tokens = [""] * vocab_size
    types = [1] * vocab_size  # normal
    for text, index in tok["model"]["vocab"].items():
        tokens[index] = text
    for added in tok["added_tokens"]:
        tokens[added["id"]] = added["content"]
        types[added["id"]] = 3 if added["special"] else 4  # control, user-defined
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    if config.get("pad_token"):
        w.add_pad_token_id(tokens.index(config["pad_token"]))
    w.add_add_bos_token(bool(config.get("add_bos_token", False)))
    if config.get("chat_template"):
        w.add_chat_template(config["chat_template"])
