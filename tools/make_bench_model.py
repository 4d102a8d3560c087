#!/usr/bin/env python3
"""Writes a random-weight Llama-shaped checkpoint of about 0.5B parameters in
bf16 (Qwen2-0.5B's shape: hidden 896, 24 layers, 14 heads / 2 KV heads,
intermediate 4864, vocab 151936, tied embeddings) for the decode benchmark.
It is not committed; it needs only numpy.

  .venv/bin/python tools/make_bench_model.py [OUT_DIR]   (default bench_models/llama-0.5b)
"""
import json
import pathlib
import struct
import sys

import numpy as np

OUT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench_models/llama-0.5b")
CONFIG = dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=151936,
              hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
              num_attention_heads=14, num_key_value_heads=2, head_dim=64,
              max_position_embeddings=4096, rms_norm_eps=1e-6, rope_theta=1000000.0,
              tie_word_embeddings=True, hidden_act="silu", torch_dtype="bfloat16",
              bos_token_id=1, eos_token_id=2)


def shapes(c):
    h, i, d = c["hidden_size"], c["intermediate_size"], c["head_dim"]
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
        yield p + "mlp.gate_proj.weight", (i, h)
        yield p + "mlp.up_proj.weight", (i, h)
        yield p + "mlp.down_proj.weight", (h, i)
    yield "model.norm.weight", (h,)


def bf16_bits(shape, rng, norm):
    if norm:
        values = np.ones(shape, dtype=np.float32)
    else:
        values = rng.standard_normal(shape, dtype=np.float32) * 0.02
    return (values.view(np.uint32) >> 16).astype(np.uint16)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    entries, header, offset = list(shapes(CONFIG)), {}, 0
    for name, shape in entries:
        size = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    rng = np.random.default_rng(0)
    with open(OUT / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape in entries:
            f.write(bf16_bits(shape, rng, name.endswith("norm.weight")).tobytes())
    params = sum(int(np.prod(s)) for _, s in entries)
    print(f"wrote {OUT} ({params / 1e6:.0f}M parameters, {offset / 1e9:.2f} GB)")


if __name__ == "__main__":
    main()
