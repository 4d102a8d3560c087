#!/usr/bin/env python3
"""`hive quantize` read back with the gguf package (gguf-py), for the bundled
model in every type and for fixtures that exercise Llama's rope rows, Llama
3's rope_freqs, experts, shared experts and F16 fallbacks:

  - metadata: every key and value tools/gguf_mapping.py writes for the same
    directory (the test fixtures' writer) is in the file, equal and of the
    same type; general.file_type and general.quantization_version are
    llama.cpp's; general.name is the directory's name;
  - tensors: the names and shapes gguf_mapping.py gives; gguf.quants.dequantize
    of every tensor equals Hive's dequantization (gguf_dequantize_dump) bit
    for bit; F32 / F16 tensors hold the source exactly; Q8_0 and Q4_0 blocks
    (and the Q5_0 / Q5_1 of rows that are not whole 256-blocks) are byte for
    byte what gguf-py's quantizer makes of the source; K-quant
    tensors are within their type's error of the source;
  - Hive loads each file (`hive inspect --model FILE.gguf`);
  - the CLI's refusals: an existing --out without --force, an unknown
    --type, an output that cannot be created.

usage: test_quantize_gguf.py HIVE GGUF_DEQUANTIZE_DUMP"""
import json
import pathlib
import subprocess
import sys
import tempfile

import gguf
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gguf_mapping  # noqa: E402
from make_gguf_models import read_checkpoint  # noqa: E402

BUNDLED = ROOT / "models" / "hive-moe-target"
FIXTURES = ROOT / "tests" / "data" / "models"
CASES = [(BUNDLED, "q8_0"), (BUNDLED, "q4_0"), (BUNDLED, "q4_k_m"),
         (FIXTURES / "llama", "q4_k_m"), (FIXTURES / "qwen2_moe", "q8_0"),
         (FIXTURES / "mixtral", "q4_0"), (FIXTURES / "deepseek_v3", "q8_0"),
         (FIXTURES / "deepseek_v2_lite", "q4_k_m")]
FILE_TYPES = {"q8_0": 7, "q4_0": 2, "q4_k_m": 15}
Q = gguf.GGMLQuantizationType
# ||source - dequantized|| / ||source|| per tensor, trained or random weights.
K_BOUNDS = {Q.Q4_K: 0.12, Q.Q5_K: 0.06, Q.Q6_K: 0.03}


def field_value(field):
    """A metadata field's value as Python data, and its type list."""
    types = [int(t) for t in field.types]
    if types[0] == gguf.GGUFValueType.ARRAY:
        if types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode() for i in field.data], types
        return [field.parts[i].tolist()[0] for i in field.data], types
    part = field.parts[field.data[0]]
    if types[0] == gguf.GGUFValueType.STRING:
        return bytes(part).decode(), types
    return part.tolist()[0], types


def metadata(reader):
    return {name: field_value(f) for name, f in reader.fields.items()
            if not name.startswith("GGUF.")}


def reference_metadata(model_dir, c, tmp):
    """What gguf_mapping.py writes for the directory (tools/make_gguf_models.py)."""
    path = tmp / "reference.gguf"
    w = gguf.GGUFWriter(str(path), gguf_mapping.ARCHITECTURES[c["model_type"]])
    gguf_mapping.write_metadata(w, c)
    if (model_dir / "tokenizer.json").exists():
        gguf_mapping.add_tokenizer(w, model_dir, c["vocab_size"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return metadata(gguf.GGUFReader(str(path)))


def expected_tensors(model_dir, c):
    hf = read_checkpoint(model_dir)
    if c.get("tie_word_embeddings"):
        hf.pop("lm_head.weight", None)
    out = {name: gguf_mapping.as_float32(a) for name, a in gguf_mapping.gguf_tensors(c, hf)}
    rope = gguf_mapping.rope_parameters(c)
    if rope["rope_type"] == "llama3":
        head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        out["rope_freqs.weight"] = gguf_mapping.llama3_rope_factors(rope, head_dim)
    return out


def check_metadata(ours, model_dir, c, kind, tmp):
    for key, (value, types) in reference_metadata(model_dir, c, tmp).items():
        assert key in ours, f"{key} missing"
        assert ours[key][1] == types, f"{key}: types {ours[key][1]}, expected {types}"
        assert ours[key][0] == value, f"{key}: {str(ours[key][0])[:80]}, expected {str(value)[:80]}"
    assert ours["general.name"][0] == model_dir.name, ours["general.name"]
    assert ours["general.file_type"][0] == FILE_TYPES[kind]
    assert ours["general.quantization_version"][0] == 2


def check_tensors(reader, dump, expected, where):
    assert sorted(t.name for t in reader.tensors) == sorted(expected), where
    at, worst = 0, {}
    for t in reader.tensors:
        source = expected[t.name].reshape(-1)
        n = int(np.prod(t.shape))
        assert n == source.size, f"{where} {t.name}: {n} values, source has {source.size}"
        ours = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(-1)
        hive = dump[at:at + n]
        at += n
        assert np.array_equal(ours.view(np.uint32), hive.view(np.uint32)), \
            f"{where} {t.name}: gguf-py and Hive dequantize differently"
        row = int(t.shape[0])
        if t.tensor_type == Q.F32:
            assert np.array_equal(ours.view(np.uint32), source.view(np.uint32)), t.name
        elif t.tensor_type == Q.F16:
            assert np.array_equal(ours, source.astype(np.float16).astype(np.float32)), t.name
        elif t.tensor_type in (Q.Q8_0, Q.Q4_0, Q.Q5_0, Q.Q5_1):
            blocks = gguf.quants.quantize(source.reshape(-1, row), t.tensor_type)
            assert bytes(np.asarray(t.data).tobytes()) == blocks.tobytes(), \
                f"{where} {t.name}: {t.tensor_type.name} blocks differ from gguf-py's"
        else:
            error = np.linalg.norm(source - ours) / np.linalg.norm(source)
            worst[t.tensor_type.name] = max(worst.get(t.tensor_type.name, 0), error)
            assert error < K_BOUNDS[t.tensor_type], f"{where} {t.name}: relative error {error}"
    assert at == dump.size, f"{where}: the dump has {dump.size} values, the tensors {at}"
    return worst


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def check_refusals(hive, tmp):
    out = tmp / "exists.gguf"
    out.write_text("keep")
    r = run([hive, "quantize", "--model", str(BUNDLED), "--type", "q8_0", "--out", str(out)])
    assert r.returncode != 0 and "--force" in r.stderr, r.stderr
    assert out.read_text() == "keep"
    r = run([hive, "quantize", "--model", str(BUNDLED), "--type", "q5_1", "--out", str(tmp / "x")])
    assert r.returncode != 0 and "q8_0, q4_0 or q4_k_m" in r.stderr, r.stderr
    r = run([hive, "quantize", "--model", str(BUNDLED), "--type", "q8_0", "--out",
             "/proc/hive-cannot-write.gguf"])
    assert r.returncode != 0 and "cannot write" in r.stderr, r.stderr
    print("refusals: ok")


def main():
    hive, dumper = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for model_dir, kind in CASES:
            where = f"{model_dir.name} {kind}"
            out = tmp / f"{model_dir.name}-{kind}.gguf"
            # A trailing slash, as shells complete directories: the name stays the directory's.
            r = run([hive, "quantize", "--model", f"{model_dir}/", "--type", kind, "--out", str(out)])
            assert r.returncode == 0, f"{where}: {r.stderr}"
            assert not pathlib.Path(str(out) + ".tmp").exists()
            c = json.loads((model_dir / "config.json").read_text())
            reader = gguf.GGUFReader(str(out))
            check_metadata(metadata(reader), model_dir, c, kind, tmp)
            r = run([dumper, str(out), str(tmp / "dump.f32")])
            assert r.returncode == 0, r.stderr
            dump = np.fromfile(tmp / "dump.f32", dtype=np.float32)
            worst = check_tensors(reader, dump, expected_tensors(model_dir, c), where)
            r = run([hive, "inspect", "--model", str(out)])
            assert r.returncode == 0, f"{where}: hive inspect: {r.stderr}"
            errors = ", ".join(f"{k} {v:.4f}" for k, v in sorted(worst.items()))
            print(f"{where}: {len(reader.tensors)} tensors ok" + (f"; worst K error {errors}"
                                                                   if errors else ""))
        check_refusals(hive, tmp)


if __name__ == "__main__":
    main()
