#!/usr/bin/env python3
"""Writes the GGUF fixture of tests/data/gguf/ with gguf-py, the reference
Hive's reader and dequantization are checked against bit for bit
(tests/loader/test_gguf_fixture.cpp).

  .venv/bin/python tools/make_gguf_fixture.py [OUT_DIR]   (default tests/data/gguf)

OUT_DIR/fixture.gguf holds one tensor per type Hive reads (Q8_0, Q4_0, Q4_K,
Q5_K, Q6_K: random bytes, the f16 scales forced finite; F32, F16 and BF16,
with infinities, subnormals and NaNs, signalling ones included) and metadata
of every value type, arrays of each included; general.alignment is 64.
OUT_DIR/<tensor>.f32 is gguf-py's `gguf.quants.dequantize` of the tensor as
gguf-py reads it back from the file, raw little-endian f32.
The seed is fixed, so a rerun with the same gguf-py writes the same bytes.
"""
import pathlib
from importlib import metadata
import sys

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEED = 39

# name -> (type, numpy shape in elements; ggml's dims are the reverse)
QUANTIZED = {
    "q8_0": (Q.Q8_0, (3, 64)),
    "q4_0": (Q.Q4_0, (2, 64)),
    "q4_k": (Q.Q4_K, (2, 512)),
    "q5_k": (Q.Q5_K, (3, 256)),
    "q6_k": (Q.Q6_K, (2, 256)),
}
# Written after the float tensors (added later: the tensors above keep their bytes).
QUANTIZED_LATER = {
    "q5_0": (Q.Q5_0, (3, 64)),
    "q5_1": (Q.Q5_1, (2, 96)),
}
# Byte offsets of the f16 scale fields inside each type's block.
HALF_FIELDS = {Q.Q8_0: [0], Q.Q4_0: [0], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208],
               Q.Q5_0: [0], Q.Q5_1: [0, 2]}

# Every scalar type, with the value written; arrays repeat each as a list.
SCALARS = [
    ("u8", V.UINT8, 200), ("i8", V.INT8, -100), ("u16", V.UINT16, 60000),
    ("i16", V.INT16, -30000), ("u32", V.UINT32, 4000000000), ("i32", V.INT32, -2000000000),
    ("f32", V.FLOAT32, 0.1), ("bool", V.BOOL, True), ("string", V.STRING, "héllo, GGUF"),
    ("u64", V.UINT64, 2**63 + 5), ("i64", V.INT64, -(2**62) - 7), ("f64", V.FLOAT64, 0.1),
]
ARRAYS = [
    ("u8", V.UINT8, [0, 1, 255]), ("i8", V.INT8, [-128, 0, 127]), ("u16", V.UINT16, [65535, 7]),
    ("i16", V.INT16, [-32768, 32767]), ("u32", V.UINT32, [4294967295, 0]),
    ("i32", V.INT32, [-1, 0, 7]), ("f32", V.FLOAT32, [0.5, -1.25, 3.0e38]),
    ("bool", V.BOOL, [True, False, True]), ("string", V.STRING, ["a", "", "ünï"]),
    ("u64", V.UINT64, [2**64 - 1]), ("i64", V.INT64, [-(2**63), 2**63 - 1]),
    ("f64", V.FLOAT64, [1e300, -2.5]),
]


def random_blocks(rng, qtype, shape):
    """Random bytes for a quantized tensor, its f16 scales finite."""
    block_size, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    rows, cols = shape
    blocks = rng.integers(0, 256, size=(rows * cols // block_size, block_bytes), dtype=np.uint8)
    for offset in HALF_FIELDS[qtype]:
        scales = rng.normal(0.0, 0.05, size=blocks.shape[0]).astype(np.float16)
        scales[0] = np.uint16(3).view(np.float16)  # a subnormal scale in the first block
        blocks[:, offset:offset + 2] = scales.view(np.uint8).reshape(-1, 2)
    return blocks.reshape(rows, cols // block_size * block_bytes)


def special_halves(rng):
    """F16 bits: random finite values, then zeros, infinities, subnormals, NaNs."""
    finite = rng.normal(0.0, 10.0, size=24).astype(np.float16).view(np.uint16)
    special = np.array([0x0000, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x83FF, 0x7E00, 0x7C01],
                       dtype=np.uint16)
    return np.concatenate([finite, special]).view(np.float16).reshape(4, 8)


def special_bf16(rng):
    """BF16 bits as bytes: random finite values, then specials as in special_halves."""
    finite = (rng.normal(0.0, 10.0, size=8).astype(np.float32).view(np.uint32) >> 16)
    special = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x7FC0, 0x7F81, 0xFF81]
    bits = np.concatenate([finite.astype(np.uint16), np.array(special, dtype=np.uint16)])
    return bits.view(np.uint8).reshape(2, 16)  # 2 rows of 8 elements


def add_metadata(writer):
    writer.add_custom_alignment(64)
    for name, vtype, value in SCALARS:
        writer.add_key_value(f"test.{name}", value, vtype)
    for name, vtype, value in ARRAYS:
        writer.add_key_value(f"test.array.{name}", value, V.ARRAY, sub_type=vtype)
    writer.add_key_value("test.array.nested", [[1, 2], [3]], V.ARRAY)


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "data" / "gguf"
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    path = out / "fixture.gguf"
    writer = gguf.GGUFWriter(path, "hive-test")
    add_metadata(writer)
    for name, (qtype, shape) in QUANTIZED.items():
        writer.add_tensor(name, random_blocks(rng, qtype, shape), raw_dtype=qtype)
    writer.add_tensor("f32", rng.normal(0.0, 1.0, size=(2, 3, 4)).astype(np.float32))
    writer.add_tensor("f16", special_halves(rng))
    writer.add_tensor("bf16", special_bf16(rng), raw_dtype=Q.BF16)
    for name, (qtype, shape) in QUANTIZED_LATER.items():
        writer.add_tensor(name, random_blocks(rng, qtype, shape), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    for tensor in gguf.GGUFReader(path).tensors:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        values.astype("<f4", copy=False).tofile(out / f"{tensor.name}.f32")
    # Q5_0 / Q5_1 weights as gguf-py's quantizers make them, from normal
    # floats, 16 blocks of 32 (the third constant, the fourth with a zero).
    source = rng.normal(0.0, 0.05, size=(16, 32)).astype(np.float32)
    source[2] = 0.25
    source[3, 5] = 0.0
    source.tofile(out / "quantize_source.f32")
    for qtype in (Q.Q5_0, Q.Q5_1):
        gguf.quants.quantize(source, qtype).tofile(out / f"quantize_{qtype.name.lower()}.bin")
    print(f"wrote {path} ({path.stat().st_size} bytes) with gguf-py {metadata.version('gguf')}")


if __name__ == "__main__":
    main()
