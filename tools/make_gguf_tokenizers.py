#!/usr/bin/env python3
"""GGUF tokenizers written from the tokenizer fixtures, with transformers'
ids for the corpus: tests/data/gguf/tokenizers/.

  .venv/bin/python tools/make_gguf_tokenizers.py

- sentencepiece.gguf: tests/data/tokenizers/sentencepiece_bpe as llama.cpp
  writes a SentencePiece vocabulary (tokenizer.ggml.model "llama"): tokens,
  scores (minus the id, as a SentencePiece BPE model ranks its pieces),
  token types (byte tokens <0xNN> 6, <unk> 2, added tokens 3 or 4) and no
  merges, which a reader recovers from the scores.
- sentencepiece_merges.gguf: the same with the fixture's merges listed, as
  llama.cpp converts a tokenizer.json.
- llama_bpe.gguf, qwen2_bpe.gguf, tekken_bpe.gguf, gpt4o_bpe.gguf:
  tests/data/tokenizers/bytelevel_bpe as "gpt2" with tokenizer.ggml.pre
  "llama-bpe", "qwen2", "tekken" and "gpt-4o".
- expected.json: per file, transformers' AutoTokenizer.from_pretrained(dir,
  gguf_file=...) ids of every corpus string and random mix, without and with
  special tokens, and its decode of the latter (its pipeline without the
  "<|endoftext|>" its GPT2Tokenizer adds to a vocabulary that lacks it).
"""
import json
import pathlib
from importlib import metadata

import gguf
from tokenizers import Tokenizer
from transformers import AutoTokenizer

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOKENIZERS = ROOT / "tests" / "data" / "tokenizers"
OUT = ROOT / "tests" / "data" / "gguf" / "tokenizers"


def vocabulary(tok):
    vocab = tok["model"]["vocab"]
    n = max([*vocab.values(), *(a["id"] for a in tok["added_tokens"])]) + 1
    tokens, types = [""] * n, [1] * n
    for text, index in vocab.items():
        tokens[index] = text
    for added in tok["added_tokens"]:
        tokens[added["id"]] = added["content"]
        types[added["id"]] = 3 if added["special"] else 4  # control, user-defined
    return tokens, types


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_sentencepiece(path, with_merges):
    tok = json.loads((TOKENIZERS / "sentencepiece_bpe" / "tokenizer.json").read_text())
    tokens, types = vocabulary(tok)
    for i, t in enumerate(tokens):
        if len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
            types[i] = 6  # byte
    types[tokens.index("<unk>")] = 2  # unknown
    scores = [0.0 if types[i] in (3, 4) else -float(i) for i in range(len(tokens))]
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    if with_merges:
        w.add_token_merges([" ".join(m) if not isinstance(m, str) else m
                            for m in tok["model"]["merges"]])
    w.add_bos_token_id(tokens.index("<s>"))
    w.add_eos_token_id(tokens.index("</s>"))
    w.add_unk_token_id(tokens.index("<unk>"))
    w.add_add_bos_token(True)
    finish(w)


def write_byte_level(path, pre):
    tok = json.loads((TOKENIZERS / "bytelevel_bpe" / "tokenizer.json").read_text())
    config = json.loads((TOKENIZERS / "bytelevel_bpe" / "tokenizer_config.json").read_text())
    tokens, types = vocabulary(tok)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges([" ".join(m) if not isinstance(m, str) else m
                        for m in tok["model"]["merges"]])
    # Both named: transformers' GPT2Tokenizer otherwise adds its default
    # "<|endoftext|>", a token the file does not have.
    w.add_bos_token_id(tokens.index(config["bos_token"]))
    w.add_eos_token_id(tokens.index(config["eos_token"]))
    w.add_add_bos_token(bool(config.get("add_bos_token", False)))
    finish(w)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    write_sentencepiece(OUT / "sentencepiece.gguf", False)
    write_sentencepiece(OUT / "sentencepiece_merges.gguf", True)
    write_byte_level(OUT / "llama_bpe.gguf", "llama-bpe")
    write_byte_level(OUT / "qwen2_bpe.gguf", "qwen2")
    write_byte_level(OUT / "tekken_bpe.gguf", "tekken")
    write_byte_level(OUT / "gpt4o_bpe.gguf", "gpt-4o")
    corpus = json.loads((TOKENIZERS / "corpus.json").read_text())
    texts = corpus["strings"] + corpus["random_mixes"]
    packages = ("transformers", "tokenizers", "gguf")
    expected = {"versions": {p: metadata.version(p) for p in packages}, "texts": texts}
    for path in sorted(OUT.glob("*.gguf")):
        t = AutoTokenizer.from_pretrained(str(OUT), gguf_file=path.name)
        # transformers' GPT2Tokenizer adds its default "<|endoftext|>" past
        # the file's tokens when the vocabulary lacks it; llama.cpp reads
        # only the file. Its pipeline without that token gives the ids.
        n = len(gguf.GGUFReader(str(path)).fields["tokenizer.ggml.tokens"].data)
        pipeline = json.loads(t.backend_tokenizer.to_str())
        pipeline["added_tokens"] = [a for a in pipeline["added_tokens"] if a["id"] < n]
        backend = Tokenizer.from_str(json.dumps(pipeline))
        assert backend.get_vocab_size(with_added_tokens=True) == n, path.name
        plain = [backend.encode(s, add_special_tokens=False).ids for s in texts]
        special = [backend.encode(s, add_special_tokens=True).ids for s in texts]
        decoded = [backend.decode(ids, skip_special_tokens=False) for ids in special]
        expected[path.name] = {"ids": plain, "ids_special": special, "decoded": decoded}
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")
    (OUT / "expected.json").write_text(json.dumps(expected, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
