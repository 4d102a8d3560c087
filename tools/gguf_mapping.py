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
  - Llama 3 rope scaling written as the rope_freqs.weight divisors;
  - DeepSeek-V2/V3 (GGUF's deepseek2): kv_b_proj split per head into
    attn_k_b (its k rows, transposed: [heads, rank, nope]) and attn_v_b
    ([heads, v, rank]), the router's e_score_correction_bias as
    exp_probs_b.bias, the multi-token-prediction layers left out.
"""
import math
import re

import numpy as np

ARCHITECTURES = {"llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2": "qwen2",
                 "qwen3": "qwen3", "qwen2_moe": "qwen2moe", "qwen3_moe": "qwen3moe",
                 "deepseek_v2": "deepseek2", "deepseek_v3": "deepseek2"}
DEEPSEEK = ("deepseek_v2", "deepseek_v3")
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
         "mlp.shared_expert_gate": "ffn_gate_inp_shexp",
         "mlp.shared_experts.gate_proj": "ffn_gate_shexp",
         "mlp.shared_experts.up_proj": "ffn_up_shexp",
         "mlp.shared_experts.down_proj": "ffn_down_shexp",
         "self_attn.q_a_proj": "attn_q_a", "self_attn.q_a_layernorm": "attn_q_a_norm",
         "self_attn.q_b_proj": "attn_q_b", "self_attn.kv_a_proj_with_mqa": "attn_kv_a_mqa",
         "self_attn.kv_a_layernorm": "attn_kv_a_norm"}
SCORE_BIAS = re.compile(r"model\.layers\.(\d+)\.mlp\.gate\.e_score_correction_bias$")
KV_B = re.compile(r"model\.layers\.(\d+)\.self_attn\.kv_b_proj\.weight$")
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
    bias = SCORE_BIAS.match(hf_name)
    if bias:
        return f"blk.{bias.group(1)}.exp_probs_b.bias", None
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


def split_kv_b(c, kv_b):
    """DeepSeek's kv_b_proj [heads * (nope + v), rank], each head's nope k
    rows then its v rows -> (attn_k_b [heads, rank, nope], attn_v_b [heads, v, rank])."""
    nope, v = c["qk_nope_head_dim"], c["v_head_dim"]
    per_head = kv_b.reshape(c["num_attention_heads"], nope + v, kv_b.shape[-1])
    return (np.ascontiguousarray(per_head[:, :nope, :].transpose(0, 2, 1)),
            np.ascontiguousarray(per_head[:, nope:, :]))


def gguf_tensors(c, hf):
    """(GGUF name, array) for every tensor of `hf` (name -> array)."""
    llama = c["model_type"] in ("llama", "mistral", "mixtral")
    heads = {"attn_q": c["num_attention_heads"], "attn_k": c.get("num_key_value_heads")}
    out, stacks = {}, {}
    for name, array in hf.items():
        layer = LAYER_NAME.match(name) or SCORE_BIAS.match(name)
        if c["model_type"] in DEEPSEEK and layer and int(layer.group(1)) >= c["num_hidden_layers"]:
            continue  # DeepSeek-V3's multi-token prediction, as the converter skips it
        kv_b = KV_B.match(name) if c["model_type"] in DEEPSEEK else None
        if kv_b:
            k_b, v_b = split_kv_b(c, array)
            out[f"blk.{kv_b.group(1)}.attn_k_b.weight"] = k_b
            out[f"blk.{kv_b.group(1)}.attn_v_b.weight"] = v_b
            continue
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


def write_deepseek_metadata(w, c):
    """deepseek2's keys, as the converter's DeepseekV2Model writes them: MLA
    as the one-head attention llama.cpp runs (key_length kv_lora_rank +
    rope, value_length kv_lora_rank), the heads' sizes as the _mla keys. The
    router's scoring is always written (sigmoid: V3), where the converter
    writes it only when config.json names it."""
    import gguf

    v3 = c["model_type"] == "deepseek_v3"
    if not c.get("rope_interleave", True):
        raise ValueError("rope_interleave false has no deepseek2 layout (llama.cpp ropes pairs)")
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(c.get("rms_norm_eps", 1e-6))
    w.add_vocab_size(c["vocab_size"])
    w.add_leading_dense_block_count(c.get("first_k_dense_replace") or 0)
    if c.get("q_lora_rank") is not None:
        w.add_q_lora_rank(c["q_lora_rank"])
    rank, rope_dims = c["kv_lora_rank"], c["qk_rope_head_dim"]
    w.add_kv_lora_rank(rank)
    w.add_key_length(rank + rope_dims)
    w.add_value_length(rank)
    w.add_key_length_mla(c["qk_nope_head_dim"] + rope_dims)
    w.add_value_length_mla(c["v_head_dim"])
    w.add_rope_dimension_count(rope_dims)
    w.add_expert_feed_forward_length(c["moe_intermediate_size"])
    w.add_expert_count(c["n_routed_experts"])
    w.add_expert_used_count(c["num_experts_per_tok"])
    w.add_expert_shared_count(c.get("n_shared_experts") or 0)
    if c.get("routed_scaling_factor") is not None:
        w.add_expert_weights_scale(c["routed_scaling_factor"])
    if c.get("norm_topk_prob"):
        w.add_expert_weights_norm(True)
    if c.get("n_group") is not None:
        w.add_expert_group_count(c["n_group"])
    if c.get("topk_group") is not None:
        w.add_expert_group_used_count(c["topk_group"])
    scoring = c.get("scoring_func", "sigmoid" if v3 else "softmax")
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID if scoring == "sigmoid"
                             else gguf.ExpertGatingFuncType.SOFTMAX)
    rope = rope_parameters(c)
    w.add_rope_freq_base(rope["rope_theta"])
    if rope["rope_type"] == "yarn":
        mscale, all_dim = rope.get("mscale"), rope.get("mscale_all_dim")
        if mscale is not None and all_dim is not None and mscale != all_dim:
            raise ValueError(f"yarn mscale {mscale} != mscale_all_dim {all_dim}: deepseek2 "
                             "holds one (llama.cpp takes mscale equal to mscale_all_dim)")
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(rope["factor"])
        w.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
        w.add_rope_scaling_yarn_beta_fast(rope.get("beta_fast", 32.0))
        w.add_rope_scaling_yarn_beta_slow(rope.get("beta_slow", 1.0))
        if all_dim is not None:
            w.add_rope_scaling_yarn_log_mul(0.1 * all_dim)  # the converter's factor 0.1
    elif rope["rope_type"] != "default":
        raise ValueError(f"rope type {rope['rope_type']} has no deepseek2 writer here")


def write_metadata(w, c):
    """The architecture keys of config.json `c`; returns extra tensors (rope_freqs)."""
    if c["model_type"] in DEEPSEEK:
        write_deepseek_metadata(w, c)
        write_token_ids(w, c)
        return {}
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
    write_token_ids(w, c)
    return extra


def write_token_ids(w, c):
    eos = c.get("eos_token_id")
    eos = eos if isinstance(eos, list) else [] if eos is None else [eos]
    if eos:
        w.add_eos_token_id(eos[0])
    if len(eos) > 1:  # llama.cpp's end-of-turn id: the chat's <|im_end|>
        w.add_eot_token_id(eos[1])
    if c.get("bos_token_id") is not None:
        w.add_bos_token_id(c["bos_token_id"])


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
