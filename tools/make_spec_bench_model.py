#!/usr/bin/env python3
"""Writes the speculative-decoding benchmark's target: the bundled
hive-moe-target with N dense layers appended whose output projections
(o_proj, down_proj) are zero. Their residual contributions are exactly
zero, so the logits, and so the agreement with the bundled hive-draft, are
the bundled target's bit for bit; but every token pays for them (about
0.3B parameters at the defaults), so the cost ratio of target to draft is
that of a real pair. It is not committed; it needs only numpy.

  .venv/bin/python tools/make_spec_bench_model.py [OUT_DIR] [--layers N] [--intermediate N]
  (default bench_models/hive-moe-target-0.3b, 24 layers, intermediate 16384)
"""
import argparse
import json
import pathlib
import shutil
import struct

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "models" / "hive-moe-target"


def read_safetensors(path):
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        assert info["dtype"] == "BF16", f"{name}: expected BF16"
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(body[start:end], dtype=np.uint16).reshape(info["shape"])
    return tensors


def write_safetensors(path, tensors):
    header, offset, chunks = {}, 0, []
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array, dtype=np.uint16).tobytes()
        header[name] = {"dtype": "BF16", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        chunks.append(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in chunks:
            f.write(raw)


def bf16(array):
    """float32 -> bf16 bits, round to nearest even."""
    bits = array.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default=str(ROOT / "bench_models" / "hive-moe-target-0.3b"))
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--intermediate", type=int, default=16384)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    config = json.loads((SOURCE / "config.json").read_text())
    tensors = read_safetensors(SOURCE / "model.safetensors")
    h, hd = config["hidden_size"], config["head_dim"]
    q, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    inter = args.intermediate
    rng = np.random.default_rng(1234)
    first = config["num_hidden_layers"]
    one = lambda *shape: bf16(np.ones(shape))
    zero = lambda *shape: np.zeros(shape, dtype=np.uint16)
    rand = lambda *shape: bf16(0.02 * rng.standard_normal(shape, dtype=np.float32))
    for layer in range(first, first + args.layers):
        p = f"model.layers.{layer}."
        tensors[p + "input_layernorm.weight"] = one(h)
        tensors[p + "post_attention_layernorm.weight"] = one(h)
        tensors[p + "self_attn.q_proj.weight"] = rand(q, h)
        tensors[p + "self_attn.k_proj.weight"] = rand(kv, h)
        tensors[p + "self_attn.v_proj.weight"] = rand(kv, h)
        tensors[p + "self_attn.o_proj.weight"] = zero(h, q)
        tensors[p + "self_attn.q_norm.weight"] = one(hd)
        tensors[p + "self_attn.k_norm.weight"] = one(hd)
        tensors[p + "mlp.gate_proj.weight"] = rand(inter, h)
        tensors[p + "mlp.up_proj.weight"] = rand(inter, h)
        tensors[p + "mlp.down_proj.weight"] = zero(h, inter)
    config["num_hidden_layers"] = first + args.layers
    config["mlp_only_layers"] = list(range(first, first + args.layers))
    config["intermediate_size"] = inter
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    write_safetensors(out / "model.safetensors", tensors)
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(SOURCE / name, out / name)
    params = sum(int(np.prod(t.shape)) for t in tensors.values())
    print(f"{out}: {config['num_hidden_layers']} layers, {params / 1e6:.0f}M parameters")


if __name__ == "__main__":
    main()
