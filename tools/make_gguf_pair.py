#!/usr/bin/env python3
"""Writes one random-weight model twice, bit for bit the same weights: as a
Hugging Face directory (config.json, model.safetensors in bf16, the bundled
tokenizer) for Hive and as a GGUF file (the `gguf` package) for llama.cpp,
for the side-by-side benchmark (tools/bench/llama_cpp_side_by_side.py).
Nothing it writes is committed.

  .venv/bin/python tools/make_gguf_pair.py {dense,moe} [OUT_DIR]
      dense: a Llama of about 0.35B parameters  (default bench_models/pair-dense)
      moe:   a Qwen3-MoE of about 0.5B, 8 experts, top-2  (bench_models/pair-moe)
  OUT_DIR/hf/ is the Hugging Face directory, OUT_DIR/model.gguf the GGUF.

The mapping is llama.cpp's own converter's: GGUF names, 2-D weights in bf16
and 1-D ones (norms) and the router in f32 (widened exactly from bf16),
experts stacked per layer, and Llama's q/k rows permuted from Hugging Face's
rotate-half layout to GGML's adjacent pairs (Qwen3 uses the rotate-half,
NeoX, layout in both, so nothing is permuted).
"""
import argparse
import json
import pathlib
import shutil
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from make_spec_bench_model import bf16, write_safetensors  # noqa: E402

TOKENIZER = ROOT / "models" / "hive-moe-target"

COMMON = dict(vocab_size=4096, hidden_size=1024, num_attention_heads=16, num_key_value_heads=4,
              head_dim=64, max_position_embeddings=4096, rms_norm_eps=1e-6,
              tie_word_embeddings=False, hidden_act="silu", torch_dtype="bfloat16",
              bos_token_id=None, eos_token_id=[0, 2], pad_token_id=0)
CONFIGS = {
    "dense": dict(COMMON, architectures=["LlamaForCausalLM"], model_type="llama",
                  num_hidden_layers=30, intermediate_size=2816, rope_theta=10000.0,
                  attention_bias=False, mlp_bias=False),
    "moe": dict(COMMON, architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe",
                num_hidden_layers=13, intermediate_size=2816, moe_intermediate_size=1408,
                num_experts=8, num_experts_per_tok=2, norm_topk_prob=True,
                decoder_sparse_step=1, mlp_only_layers=[], rope_theta=10000.0,
                attention_bias=False),
}


def hf_shapes(c):
    """(name, shape) of every Hugging Face tensor, in file order."""
    h, d = c["hidden_size"], c["head_dim"]
    q, kv = c["num_attention_heads"] * d, c["num_key_value_heads"] * d
    yield "model.embed_tokens.weight", (c["vocab_size"], h)
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        yield p + "input_layernorm.weight", (h,)
        yield p + "post_attention_layernorm.weight", (h,)
        yield p + "self_attn.q_proj.weight", (q, h)
        yield p + "self_attn.k_proj.weight", (kv, h)
        yield p + "self_attn.v_proj.weight", (kv, h)
        yield p + "self_attn.o_proj.weight", (h, q)
        if c["model_type"] == "llama":
            i = c["intermediate_size"]
            yield p + "mlp.gate_proj.weight", (i, h)
            yield p + "mlp.up_proj.weight", (i, h)
            yield p + "mlp.down_proj.weight", (h, i)
        else:
            yield p + "self_attn.q_norm.weight", (d,)
            yield p + "self_attn.k_norm.weight", (d,)
            yield p + "mlp.gate.weight", (c["num_experts"], h)
            i = c["moe_intermediate_size"]
            for e in range(c["num_experts"]):
                yield p + f"mlp.experts.{e}.gate_proj.weight", (i, h)
                yield p + f"mlp.experts.{e}.up_proj.weight", (i, h)
                yield p + f"mlp.experts.{e}.down_proj.weight", (h, i)
    yield "model.norm.weight", (h,)
    yield "lm_head.weight", (c["vocab_size"], h)


def random_weights(c, seed):
    """bf16 bits per name: norms 1 plus noise, everything else N(0, 0.02)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in hf_shapes(c):
        if len(shape) == 1:
            values = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
        else:
            values = 0.02 * rng.standard_normal(shape, dtype=np.float32)
        out[name] = bf16(values)
    return out


def widen(bits):
    """bf16 bits -> float32, exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def permute_rope_rows(w, n_head):
    """Hugging Face's rotate-half row order -> GGML's adjacent pairs, per head
    (as llama.cpp's converter does for Llama's q and k projections)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def gguf_tensors(c, hf):
    """(GGUF name, array, is_bf16_bits) for every tensor, from the HF ones."""
    llama = c["model_type"] == "llama"
    yield "token_embd.weight", hf["model.embed_tokens.weight"], True
    for layer in range(c["num_hidden_layers"]):
        p, b = f"model.layers.{layer}.", f"blk.{layer}."
        q, k = hf[p + "self_attn.q_proj.weight"], hf[p + "self_attn.k_proj.weight"]
        if llama:
            q = permute_rope_rows(q, c["num_attention_heads"])
            k = permute_rope_rows(k, c["num_key_value_heads"])
        yield b + "attn_norm.weight", widen(hf[p + "input_layernorm.weight"]), False
        yield b + "attn_q.weight", q, True
        yield b + "attn_k.weight", k, True
        yield b + "attn_v.weight", hf[p + "self_attn.v_proj.weight"], True
        yield b + "attn_output.weight", hf[p + "self_attn.o_proj.weight"], True
        yield b + "ffn_norm.weight", widen(hf[p + "post_attention_layernorm.weight"]), False
        if llama:
            yield b + "ffn_gate.weight", hf[p + "mlp.gate_proj.weight"], True
            yield b + "ffn_up.weight", hf[p + "mlp.up_proj.weight"], True
            yield b + "ffn_down.weight", hf[p + "mlp.down_proj.weight"], True
            continue
        yield b + "attn_q_norm.weight", widen(hf[p + "self_attn.q_norm.weight"]), False
        yield b + "attn_k_norm.weight", widen(hf[p + "self_attn.k_norm.weight"]), False
        yield b + "ffn_gate_inp.weight", widen(hf[p + "mlp.gate.weight"]), False
        experts = range(c["num_experts"])
        for gguf_name, hf_name in (("ffn_gate_exps", "gate_proj"), ("ffn_up_exps", "up_proj"),
                                   ("ffn_down_exps", "down_proj")):
            stacked = np.stack([hf[p + f"mlp.experts.{e}.{hf_name}.weight"] for e in experts])
            yield b + gguf_name + ".weight", stacked, True
    yield "output_norm.weight", widen(hf["model.norm.weight"]), False
    yield "output.weight", hf["lm_head.weight"], True


def write_gguf(path, c, hf):
    import gguf

    arch = "llama" if c["model_type"] == "llama" else "qwen3moe"
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"hive-pair-{arch}")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c["num_key_value_heads"])
    w.add_key_length(c["head_dim"])
    w.add_value_length(c["head_dim"])
    w.add_rope_dimension_count(c["head_dim"])
    w.add_rope_freq_base(c["rope_theta"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_vocab_size(c["vocab_size"])
    if arch == "qwen3moe":
        w.add_expert_count(c["num_experts"])
        w.add_expert_used_count(c["num_experts_per_tok"])
        w.add_expert_feed_forward_length(c["moe_intermediate_size"])
    add_tokenizer(w, c)
    for name, array, is_bf16 in gguf_tensors(c, hf):
        if is_bf16:
            w.add_tensor(name, np.ascontiguousarray(array),
                         raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            w.add_tensor(name, np.ascontiguousarray(array, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def add_tokenizer(w, c):
    """The bundled byte-level BPE as GGUF's "gpt2" tokenizer."""
    tok = json.loads((TOKENIZER / "tokenizer.json").read_text())
    tokens = [""] * c["vocab_size"]
    types = [1] * c["vocab_size"]  # normal
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
    w.add_eos_token_id(c["eos_token_id"][0])
    w.add_pad_token_id(c["pad_token_id"])
    w.add_add_bos_token(False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shape", choices=sorted(CONFIGS))
    parser.add_argument("out", nargs="?")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = pathlib.Path(args.out or f"bench_models/pair-{args.shape}")
    c = CONFIGS[args.shape]
    hf = random_weights(c, args.seed)
    (out / "hf").mkdir(parents=True, exist_ok=True)
    (out / "hf" / "config.json").write_text(json.dumps(c, indent=2) + "\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOKENIZER / name, out / "hf" / name)
    write_safetensors(out / "hf" / "model.safetensors", hf)
    write_gguf(out / "model.gguf", c, hf)
    params = sum(a.size for a in hf.values())
    print(f"{out}: {params / 1e6:.0f}M parameters, hf/ and model.gguf")


if __name__ == "__main__":
    main()
