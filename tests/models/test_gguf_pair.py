#!/usr/bin/env python3
"""tools/make_gguf_pair.py writes the same weights twice: every GGUF tensor,
read back with the gguf package, holds the Hugging Face tensor it maps to,
bit for bit. Llama's q/k rows are checked against GGML's rope layout written
out index by index (row h*d + 2i + j of a head holds the rotate-half row
h*d + j*d/2 + i), not against the generator's own permutation; DeepSeek's
kv_b_proj split (gguf_mapping.split_kv_b) likewise against its layout
written out index by index."""
import pathlib
import sys
import tempfile

import gguf
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gguf_mapping  # noqa: E402
import make_gguf_pair as pair  # noqa: E402

SMALL = dict(vocab_size=4096, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
             head_dim=16, num_hidden_layers=2, intermediate_size=96, moe_intermediate_size=32,
             num_experts=4)


def ggml_rope_rows(w, n_head):
    d = w.shape[0] // n_head
    out = np.empty_like(w)
    for h in range(n_head):
        for i in range(d // 2):
            for j in range(2):
                out[h * d + 2 * i + j] = w[h * d + j * (d // 2) + i]
    return out


def split_kv_b_by_index(c, kv_b):
    """DeepSeek's kv_b_proj split as llama.cpp's converter lays it out,
    element by element: attn_k_b[h][a][d] = kv_b[h*(nope+v) + d][a],
    attn_v_b[h][e][a] = kv_b[h*(nope+v) + nope + e][a]."""
    heads, nope, v = c["num_attention_heads"], c["qk_nope_head_dim"], c["v_head_dim"]
    rank = kv_b.shape[1]
    k_b = np.empty((heads, rank, nope), kv_b.dtype)
    v_b = np.empty((heads, v, rank), kv_b.dtype)
    for h in range(heads):
        for a in range(rank):
            for d in range(nope):
                k_b[h, a, d] = kv_b[h * (nope + v) + d, a]
            for e in range(v):
                v_b[h, e, a] = kv_b[h * (nope + v) + nope + e, a]
    return k_b, v_b


def expected(c, hf):
    """GGUF name -> (float32 values, stored as bf16?)."""
    def f32(bits):
        return (bits.astype(np.uint32) << 16).view(np.float32)
    out = {"token_embd.weight": (hf["model.embed_tokens.weight"], True),
           "output_norm.weight": (f32(hf["model.norm.weight"]), False),
           "output.weight": (hf["lm_head.weight"], True)}
    llama = c["model_type"] == "llama"
    for layer in range(c["num_hidden_layers"]):
        p, b = f"model.layers.{layer}.", f"blk.{layer}."
        q, k = hf[p + "self_attn.q_proj.weight"], hf[p + "self_attn.k_proj.weight"]
        if llama:
            q = ggml_rope_rows(q, c["num_attention_heads"])
            k = ggml_rope_rows(k, c["num_key_value_heads"])
        out[b + "attn_q.weight"] = (q, True)
        out[b + "attn_k.weight"] = (k, True)
        out[b + "attn_v.weight"] = (hf[p + "self_attn.v_proj.weight"], True)
        out[b + "attn_output.weight"] = (hf[p + "self_attn.o_proj.weight"], True)
        out[b + "attn_norm.weight"] = (f32(hf[p + "input_layernorm.weight"]), False)
        out[b + "ffn_norm.weight"] = (f32(hf[p + "post_attention_layernorm.weight"]), False)
        if llama:
            for g, h in (("ffn_gate", "gate_proj"), ("ffn_up", "up_proj"), ("ffn_down", "down_proj")):
                out[b + g + ".weight"] = (hf[p + f"mlp.{h}.weight"], True)
            continue
        out[b + "attn_q_norm.weight"] = (f32(hf[p + "self_attn.q_norm.weight"]), False)
        out[b + "attn_k_norm.weight"] = (f32(hf[p + "self_attn.k_norm.weight"]), False)
        out[b + "ffn_gate_inp.weight"] = (f32(hf[p + "mlp.gate.weight"]), False)
        for g, h in (("ffn_gate_exps", "gate_proj"), ("ffn_up_exps", "up_proj"),
                     ("ffn_down_exps", "down_proj")):
            experts = [hf[p + f"mlp.experts.{e}.{h}.weight"] for e in range(c["num_experts"])]
            out[b + g + ".weight"] = (np.stack(experts), True)
    return out


def check(shape):
    c = dict(pair.CONFIGS[shape], **SMALL)
    hf = pair.random_weights(c, seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "model.gguf"
        pair.write_gguf(path, c, hf)
        reader = gguf.GGUFReader(str(path))
        want = expected(c, hf)
        got = {t.name: t for t in reader.tensors}
        assert sorted(got) == sorted(want), sorted(set(got) ^ set(want))
        for name, (values, is_bf16) in want.items():
            t = got[name]
            kind = gguf.GGMLQuantizationType.BF16 if is_bf16 else gguf.GGMLQuantizationType.F32
            assert t.tensor_type == kind, (name, t.tensor_type)
            data = np.asarray(t.data)
            if is_bf16:
                data = data.view(np.uint16)
            assert data.reshape(values.shape).shape == values.shape, name
            assert np.array_equal(data.reshape(values.shape), values), f"{shape}: {name} differs"
            # GGUF lists dimensions innermost first.
            assert list(t.shape) == list(reversed(values.shape)), (name, t.shape)
        arch = reader.fields["general.architecture"]
        arch = bytes(arch.parts[arch.data[0]]).decode()
        def field(key):
            f = reader.fields[f"{arch}.{key}"]
            return int(f.parts[f.data[0]][0])
        assert field("block_count") == c["num_hidden_layers"]
        assert field("attention.head_count_kv") == c["num_key_value_heads"]
        if shape == "moe":
            assert field("expert_count") == c["num_experts"]
            assert field("expert_used_count") == c["num_experts_per_tok"]
    print(f"{shape}: {len(want)} tensors equal")


def main():
    # The check itself must fail on a wrong layout: the identity is not GGML's.
    w = np.arange(32, dtype=np.uint16).reshape(8, 4)
    assert not np.array_equal(ggml_rope_rows(w, 2), w)
    assert np.array_equal(ggml_rope_rows(w, 2), gguf_mapping.permute_rope_rows(w, 2))
    deepseek = {"num_attention_heads": 3, "qk_nope_head_dim": 4, "v_head_dim": 5}
    kv_b = np.arange(3 * 9 * 6, dtype=np.uint16).reshape(27, 6)
    for got, want in zip(gguf_mapping.split_kv_b(deepseek, kv_b),
                         split_kv_b_by_index(deepseek, kv_b)):
        assert got.shape == want.shape and np.array_equal(got, want), "kv_b split differs"
    print("deepseek kv_b split: equal to the index-by-index layout")
    for shape in ("dense", "moe"):
        check(shape)


if __name__ == "__main__":
    main()
