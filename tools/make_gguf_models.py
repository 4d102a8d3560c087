#!/usr/bin/env python3
"""Writes a Hugging Face checkpoint directory as one GGUF file, in llama.cpp's
layout (tools/gguf_mapping.py), with the `gguf` package.

  .venv/bin/python tools/make_gguf_models.py HF_DIR OUT.gguf [--type same|q8_0|q4_k_m] [--tokenizer]
      same: every tensor in the checkpoint's dtype (1-D ones and routers in
            f32, as the converter writes them); q8_0: 2-D and stacked
            weights whose rows are whole Q8_0 blocks quantized (gguf-py's
            quantizer), the rest as for same; q4_k_m: llama.cpp's Q4_K_M
            mix (tools/gguf_kquants.py's quantizers): Q4_K, with Q6_K for
            the output (the embedding when tied) and attn_v / ffn_down of
            every other layer; rows not whole 256-blocks fall back to Q8_0
            (llama.cpp would take Q5_0, which Hive does not read).
      --tokenizer: HF_DIR's tokenizer.json and chat template too.
  .venv/bin/python tools/make_gguf_models.py --fixtures
      regenerates tests/data/gguf/models/ (committed; read by
      tests/loader/test_gguf_model.cpp, which needs no Python).
"""
import argparse
import json
import pathlib
import struct
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import gguf_mapping  # noqa: E402

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}
FIXTURES = ROOT / "tests" / "data" / "gguf" / "models"
MODELS = ROOT / "tests" / "data" / "models"


def read_safetensors(path):
    """name -> array in file order; bf16 as uint16 bits."""
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        dtype = DTYPES[info["dtype"]]
        out[name] = np.frombuffer(body[start:end], dtype=dtype).reshape(info["shape"])
    return out


def read_checkpoint(hf_dir):
    index = hf_dir / "model.safetensors.index.json"
    if not index.exists():
        return read_safetensors(hf_dir / "model.safetensors")
    out = {}
    for shard in sorted(set(json.loads(index.read_text())["weight_map"].values())):
        out.update(read_safetensors(hf_dir / shard))
    return out


def q4_k_m_type(name, tied):
    """The block type llama.cpp's Q4_K_M gives a tensor (simplified)."""
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        return "Q6_K"
    parts = name.split(".")
    if parts[0] == "blk" and parts[2] in ("attn_v", "ffn_down", "ffn_down_exps",
                                          "ffn_down_shexp") and int(parts[1]) % 2 == 0:
        return "Q6_K"
    return "Q4_K"


def add_tensor(w, name, array, kind, tied=False):
    import gguf

    import gguf_kquants

    kinds = {np.dtype(np.uint16): gguf.GGMLQuantizationType.BF16}
    router = name.split(".")[-2] in gguf_mapping.ROUTERS
    quantize = kind != "same" and array.ndim >= 2 and not router
    if quantize and kind == "q4_k_m" and array.shape[-1] % 256 == 0:
        block = q4_k_m_type(name, tied)
        quantizer = gguf_kquants.q4_k if block == "Q4_K" else gguf_kquants.q6_k
        w.add_tensor(name, quantizer(gguf_mapping.as_float32(array)),
                     raw_dtype=getattr(gguf.GGMLQuantizationType, block))
    elif quantize and array.shape[-1] % 32 == 0:
        q8 = gguf.quants.quantize(gguf_mapping.as_float32(array), gguf.GGMLQuantizationType.Q8_0)
        w.add_tensor(name, q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    elif array.dtype in kinds:
        w.add_tensor(name, np.ascontiguousarray(array), raw_dtype=kinds[array.dtype])
    else:
        w.add_tensor(name, np.ascontiguousarray(array))


def write(hf_dir, out, kind="same", tokenizer=False):
    import gguf

    c = json.loads((hf_dir / "config.json").read_text())
    arch = gguf_mapping.ARCHITECTURES[c["model_type"]]
    w = gguf.GGUFWriter(str(out), arch)
    w.add_name(hf_dir.name)
    extra = gguf_mapping.write_metadata(w, c)
    if tokenizer:
        gguf_mapping.add_tokenizer(w, hf_dir, c["vocab_size"])
    tensors = read_checkpoint(hf_dir)
    tied = bool(c.get("tie_word_embeddings"))
    if tied:
        tensors.pop("lm_head.weight", None)  # tied: llama.cpp writes no output.weight
    for name, array in list(gguf_mapping.gguf_tensors(c, tensors)) + list(extra.items()):
        add_tensor(w, name, array, kind, tied)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_tokenizer_only(tokenizer_dir, out):
    """The bundled tokenizer and chat template, no tensors."""
    import gguf

    c = json.loads((tokenizer_dir / "config.json").read_text())
    w = gguf.GGUFWriter(str(out), gguf_mapping.ARCHITECTURES[c["model_type"]])
    gguf_mapping.write_metadata(w, c)
    gguf_mapping.add_tokenizer(w, tokenizer_dir, c["vocab_size"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def fixtures():
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name in ("llama", "mixtral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        write(MODELS / name, FIXTURES / f"{name}.gguf")
    write(MODELS / "llama", FIXTURES / "llama-q8_0.gguf", "q8_0")
    write(MODELS / "qwen3_moe", FIXTURES / "qwen3_moe-q8_0.gguf", "q8_0")
    # DeepSeek (deepseek2): V2-Lite's bf16 as it is; V3 (f32, over 1 MB as
    # it is) as Q8_0, its MLA weights dequantized by the reader.
    write(MODELS / "deepseek_v2_lite", FIXTURES / "deepseek_v2_lite.gguf")
    write(MODELS / "deepseek_v3", FIXTURES / "deepseek_v3-q8_0.gguf", "q8_0")
    # The bundled trained models: their logits mean something, so the
    # quantized ones can be held to the bf16 ones (test_gguf_quantized.cpp).
    write(ROOT / "models" / "hive-draft", FIXTURES / "hive-draft-q8_0.gguf", "q8_0")
    write(ROOT / "models" / "hive-moe-target", FIXTURES / "hive-moe-target-q4_k_m.gguf", "q4_k_m")
    write_tokenizer_only(ROOT / "models" / "hive-moe-target", FIXTURES / "tokenizer.gguf")
    for path in sorted(FIXTURES.glob("*.gguf")):
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("hf_dir", nargs="?", type=pathlib.Path)
    parser.add_argument("out", nargs="?", type=pathlib.Path)
    parser.add_argument("--type", choices=("same", "q8_0", "q4_k_m"), default="same")
    parser.add_argument("--tokenizer", action="store_true")
    parser.add_argument("--fixtures", action="store_true")
    args = parser.parse_args()
    if args.fixtures:
        return fixtures()
    if not args.hf_dir or not args.out:
        parser.error("give HF_DIR and OUT.gguf, or --fixtures")
    write(args.hf_dir, args.out, args.type, args.tokenizer)
    print(f"{args.out}: {args.out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
