#!/usr/bin/env python3
"""Writes tests/data/rope_inv_freq.json: transformers' rotary inverse
frequencies (Llama's rotary embedding, in f32) for default, linear and llama3
scaling at several bases and head sizes, for runtime/model/rope.cpp to match.

Run from the repository root after `tools/setup --torch`:
  .venv/bin/python tools/make_rope_fixture.py
"""
import json
import pathlib

import torch
import transformers
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = [
    {"type": "default", "theta": 10000.0, "head_dim": 64},
    {"type": "default", "theta": 500000.0, "head_dim": 128},
    {"type": "default", "theta": 1000000.0, "head_dim": 128},
    {"type": "default", "theta": 10000.0, "head_dim": 80},
    {"type": "linear", "theta": 10000.0, "head_dim": 64, "factor": 4.0},
    {"type": "llama3", "theta": 500000.0, "head_dim": 128, "factor": 8.0,
     "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    {"type": "llama3", "theta": 500000.0, "head_dim": 64, "factor": 32.0,
     "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
]


def inv_freq(case):
    params = {"rope_type": case["type"], "rope_theta": case["theta"]}
    for key in ("factor", "low_freq_factor", "high_freq_factor",
                "original_max_position_embeddings"):
        if key in case:
            params[key] = case[key]
    config = LlamaConfig(hidden_size=case["head_dim"] * 4, num_attention_heads=4,
                         head_dim=case["head_dim"], rope_parameters=params,
                         max_position_embeddings=131072)
    return LlamaRotaryEmbedding(config).inv_freq.to(torch.float32).tolist()


def main():
    out = {"transformers": transformers.__version__, "torch": torch.__version__,
           "cases": [dict(case, inv_freq=inv_freq(case)) for case in CASES]}
    path = ROOT / "tests" / "data" / "rope_inv_freq.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
