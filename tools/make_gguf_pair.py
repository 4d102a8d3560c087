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
  --quantize q8_0,q4_k_m also writes OUT_DIR/model-q8_0.gguf and
      model-q4_k_m.gguf, the same weights quantized as make_gguf_models.py
      --type does (tools/gguf_kquants.py for the K-quants), for
      tools/bench/bench_gguf_quant.cpp.

The mapping is llama.cpp's own converter's (tools/gguf_mapping.py): GGUF
names, 2-D weights in bf16 and 1-D ones (norms) and the router in f32
(widened exactly from bf16), experts stacked per layer, and Llama's q/k rows
permuted from Hugging Face's rotate-half layout to GGML's adjacent pairs
(Qwen3 uses the rotate-half, NeoX, layout in both, so nothing is permuted).
"""
import argparse
import json
import pathlib
import shutil
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import gguf_mapping  # noqa: E402
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


def write_gguf(path, c, hf, kind="same"):
    import gguf

    from make_gguf_models import add_tensor

    file_types = {"same": "MOSTLY_BF16", "q8_0": "MOSTLY_Q8_0", "q4_k_m": "MOSTLY_Q4_K_M"}
    arch = gguf_mapping.ARCHITECTURES[c["model_type"]]
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"hive-pair-{arch}")
    w.add_file_type(getattr(gguf.LlamaFileType, file_types[kind]))
    extra = gguf_mapping.write_metadata(w, c)
    gguf_mapping.add_tokenizer(w, TOKENIZER, c["vocab_size"])
    for name, array in list(gguf_mapping.gguf_tensors(c, hf)) + list(extra.items()):
        if kind != "same":
            add_tensor(w, name, array, kind, c["tie_word_embeddings"])
        elif array.dtype == np.uint16:
            w.add_tensor(name, np.ascontiguousarray(array),
                         raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            w.add_tensor(name, np.ascontiguousarray(array, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shape", choices=sorted(CONFIGS))
    parser.add_argument("out", nargs="?")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quantize", default="", help="q8_0,q4_k_m: quantized GGUFs too")
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
    for kind in filter(None, args.quantize.split(",")):
        if kind not in ("q8_0", "q4_k_m"):
            parser.error(f"--quantize: unknown type {kind} (q8_0, q4_k_m)")
        write_gguf(out / f"model-{kind}.gguf", c, hf, kind)
    params = sum(a.size for a in hf.values())
    print(f"{out}: {params / 1e6:.0f}M parameters, hf/ and model.gguf")


if __name__ == "__main__":
    main()
