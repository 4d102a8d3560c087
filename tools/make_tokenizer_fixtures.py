#!/usr/bin/env python3
"""Generates the tokenizer fixtures under tests/data/tokenizers/.

Hugging Face `tokenizers` (pinned in tools/requirements.txt) is the reference:

  qwen3/              the Qwen3 tokenizer from ../shared/data (Apache-2.0)
  bytelevel_bpe/      a byte-level BPE (Llama-3 style) trained here on the seeds
  sentencepiece_bpe/  a SentencePiece-style BPE with byte fallback (Llama-2 style)
  corpus.json         the test strings (tools/tokenizer_corpus.py), invalid UTF-8
                      inputs and random mixes
  <name>/expected.json  ids with and without special tokens, decodes, stream chunks
  variants.json       pipelines rebuilt on the trained vocabularies, one per
                      normalizer / pre-tokenizer / decoder / post-processor
                      behaviour, with their expected ids and decodes

Run from the repository root: .venv/bin/python tools/make_tokenizer_fixtures.py
"""
import collections
import copy
import json
import lzma
import pathlib
import random
import sys
import tempfile

import tokenizers
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import tokenizer_corpus  # noqa: E402
from tokenizer_variants import VARIANTS  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "tokenizers"
QWEN3_SRC = tokenizer_corpus.SHARED / "data" / "tokenizers" / "qwen3"
SPACE = "\u2581"
VERSIONS = {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__,
            "python": sys.version.split()[0]}
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def added(content, special, normalized=False, lstrip=False, rstrip=False, single_word=False):
    return {"content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


def training_text():
    docs = [(tokenizer_corpus.SHARED / name).read_text(encoding="utf-8")
            for name in ("DESIGN.md", "STYLE.md")]
    return tokenizer_corpus.seed_texts() + docs + tokenizer_corpus.ENGLISH + tokenizer_corpus.CODE


def train_bytelevel():
    """Llama-3 style: regex split, byte-level alphabet, ignore_merges, BOS template."""
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(LLAMA3_REGEX), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=1500, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_text(), trainer)
    data = json.loads(tok.to_str())
    data["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                       "use_regex": True}
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    tokens = [added(s, True) for s in specials]
    tokens += [added("[MASK]", True, lstrip=True, rstrip=True), added("<tool>", False),
               added("zanzibar", False, normalized=True, single_word=True),
               added("Kopi", False, normalized=True)]
    data["added_tokens"] = with_ids(tokens, len(data["model"]["vocab"]))
    data["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        template("<|begin_of_text|>", len(data["model"]["vocab"]), eos=None)]}
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
              "eos_token": "<|end_of_text|>", "clean_up_tokenization_spaces": False,
              "model_max_length": 131072}
    return data, config


def template(bos, bos_id, eos=None, eos_id=None):
    single = [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]
    special_tokens = {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}
    if eos is not None:
        single.append({"SpecialToken": {"id": eos, "type_id": 0}})
        special_tokens[eos] = {"id": eos, "ids": [eos_id], "tokens": [eos]}
    pair = single + [{"Sequence": {"id": "B", "type_id": 1}}]
    return {"type": "TemplateProcessing", "single": single, "pair": pair,
            "special_tokens": special_tokens}


def with_ids(tokens, first_id):
    return [dict(id=first_id + i, **t) for i, t in enumerate(tokens)]


def train_sentencepiece():
    """Llama-2 style: Prepend + Replace normalizer, no pre-tokenizer, byte fallback."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always")
    # The 120 most frequent characters, chosen here with a fixed tie-break: the
    # trainer's own limit_alphabet breaks ties in hash order, run to run.
    counts = collections.Counter(c for text in training_text() for c in text.replace(" ", SPACE))
    alphabet = sorted(sorted(counts, key=lambda c: (-counts[c], c))[:120])
    trainer = trainers.BpeTrainer(vocab_size=1800, min_frequency=2, show_progress=False,
                                  initial_alphabet=alphabet, limit_alphabet=len(alphabet))
    tok.train_from_iterator(training_text(), trainer)
    trained = json.loads(tok.to_str())["model"]
    # Vocabulary layout as in Llama-2: <unk> <s> </s>, the 256 byte tokens, then pieces.
    head = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    pieces = sorted(trained["vocab"].items(), key=lambda kv: kv[1])
    vocab = {t: i for i, t in enumerate(head)}
    for piece, _ in pieces:
        vocab.setdefault(piece, len(vocab))
    model = dict(trained, vocab=vocab, unk_token="<unk>", fuse_unk=True, byte_fallback=True,
                 ignore_merges=False, dropout=None)
    tokens = [added("<unk>", True), added("<s>", True), added("</s>", True)]
    data = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [dict(id=i, **t) for i, t in enumerate(tokens)]
        + with_ids([added("[INST]", True), added("[/INST]", True)], len(vocab)),
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": template("<s>", 1),
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": model,
    }
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": True,
              "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
              "unk_token": "<unk>", "clean_up_tokenization_spaces": False}
    return data, config


def write_tokenizer(directory, data, config):
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, ensure_ascii=False, indent=1)
    Tokenizer.from_str(text)  # the reference must accept what we commit
    (directory / "tokenizer.json").write_text(text + "\n", encoding="utf-8")
    (directory / "tokenizer_config.json").write_text(
        json.dumps(config, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def load_pair(directory):
    """The `tokenizers` object and the transformers AutoTokenizer of one directory."""
    raw = Tokenizer.from_file(str(directory / "tokenizer.json"))
    auto = transformers.AutoTokenizer.from_pretrained(str(directory))
    return raw, auto


def stream_chunks(raw, ids, skip):
    """DecodeStream's chunk per id (None: held back), or None where it raises: it
    fails on byte-fallback ids that are not valid UTF-8 ("Invalid prefix")."""
    stream = decoders.DecodeStream(skip_special_tokens=skip)
    try:
        return [stream.step(raw, i) for i in ids]
    except Exception as error:  # noqa: BLE001 - the reference's own failure is the datum
        assert "Invalid prefix" in str(error), error
        return None


def expected_for(auto, text, with_stream, raw=None):
    """transformers' ids and its backend's decodes; `raw` (tokenizers alone, no
    tokenizer_config.json) must agree on the ids without special tokens."""
    backend = auto.backend_tokenizer
    ids = auto(text, add_special_tokens=False)["input_ids"]
    assert backend.encode(text, add_special_tokens=False).ids == ids, text
    if raw is not None:
        assert raw.encode(text, add_special_tokens=False).ids == ids, f"disagree on {text!r}"
    ids_special = auto(text, add_special_tokens=True)["input_ids"]
    row = {"ids": ids, "ids_special": ids_special,
           "decode": backend.decode(ids_special, skip_special_tokens=False),
           "decode_skip": backend.decode(ids_special, skip_special_tokens=True)}
    for skip in (False, True):
        assert auto.decode(ids_special, skip_special_tokens=skip) == backend.decode(
            ids_special, skip_special_tokens=skip), f"decode differs on {text!r}"
    if with_stream:
        row["stream"] = stream_chunks(backend, ids_special, False)
        row["stream_skip"] = stream_chunks(backend, ids_special, True)
    return row


def random_decodes(raw, count=60, seed=7):
    """Id sequences a model could sample: byte pieces, specials, out-of-range ids."""
    rng = random.Random(seed)
    size = raw.get_vocab_size(with_added_tokens=True)
    specials = sorted(raw.get_added_tokens_decoder())
    rows = []
    for _ in range(count):
        ids = []
        for _ in range(rng.randint(1, 24)):
            roll = rng.random()
            if roll < 0.1:
                ids.append(rng.choice(specials))
            elif roll < 0.13:
                ids.append(size + rng.randint(0, 50))
            elif roll < 0.5:
                ids.append(rng.randint(0, min(size, 300)))
            else:
                ids.append(rng.randint(0, size - 1))
        rows.append({"ids": ids, "decode": raw.decode(ids, skip_special_tokens=False),
                     "decode_skip": raw.decode(ids, skip_special_tokens=True),
                     "stream": stream_chunks(raw, ids, False)})
    return rows


def write_expected(directory, strings, invalid, mixes):
    raw, auto = load_pair(directory)
    rows = [expected_for(auto, s, True, raw) for s in strings]
    mix_rows = [{k: v for k, v in expected_for(auto, s, False, raw).items()
                 if k in ("ids", "ids_special")} for s in mixes]
    invalid_rows = [expected_for(auto, b.decode("utf-8", errors="replace"), False, raw)
                    for b in invalid]
    info = {"bos_token_id": auto.bos_token_id, "eos_token_id": auto.eos_token_id,
            "vocab_size": raw.get_vocab_size(with_added_tokens=True)}
    data = {"versions": VERSIONS, "info": info, "corpus": rows, "invalid_utf8": invalid_rows,
            "random_mixes": mix_rows,
            "random_decode": random_decodes(auto.backend_tokenizer)}
    (directory / "expected.json").write_text(
        json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")


def variant_rows(base_dir, variant, strings):
    data = json.loads((base_dir / "tokenizer.json").read_text(encoding="utf-8"))
    config = json.loads((base_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    for key, value in variant.get("tokenizer", {}).items():
        data[key] = copy.deepcopy(value)
    for key, value in variant.get("config", {}).items():
        if value is None:
            config.pop(key, None)  # null means "absent": the default path
        else:
            config[key] = value
    with tempfile.TemporaryDirectory() as tmp:
        write_tokenizer(pathlib.Path(tmp), data, config)
        _, auto = load_pair(pathlib.Path(tmp))
        return [expected_for(auto, s, False) for s in strings]


def main():
    strings = tokenizer_corpus.corpus()
    mixes = tokenizer_corpus.random_mixes()
    OUT.mkdir(parents=True, exist_ok=True)
    invalid_hex = [b.hex() for b in tokenizer_corpus.INVALID_UTF8]
    (OUT / "corpus.json").write_text(json.dumps(
        {"versions": VERSIONS, "strings": strings, "invalid_utf8_hex": invalid_hex,
         "random_mixes": mixes},
        ensure_ascii=False, indent=0) + "\n", encoding="utf-8")

    qwen3 = OUT / "qwen3"
    qwen3.mkdir(parents=True, exist_ok=True)
    with lzma.open(QWEN3_SRC / "tokenizer.json.xz") as f:
        (qwen3 / "tokenizer.json").write_bytes(f.read())
    (qwen3 / "tokenizer_config.json").write_bytes(
        (QWEN3_SRC / "tokenizer_config.json").read_bytes())
    write_tokenizer(OUT / "bytelevel_bpe", *train_bytelevel())
    write_tokenizer(OUT / "sentencepiece_bpe", *train_sentencepiece())

    for name in ("qwen3", "bytelevel_bpe", "sentencepiece_bpe"):
        write_expected(OUT / name, strings, tokenizer_corpus.INVALID_UTF8, mixes)
        print(f"{name}: {len(strings)} strings, {len(invalid_hex)} invalid UTF-8 inputs, "
              f"{len(mixes)} random mixes")

    # Every other string below 2000 characters: every category, a smaller file.
    indices = [i for i in range(0, len(strings), 2) if len(strings[i]) < 2000]
    subset = [strings[i] for i in indices]
    variants = []
    for variant in VARIANTS:
        rows = variant_rows(OUT / variant["base"], variant, subset)
        variants.append(dict(variant, expected=rows))
        print(f"variant {variant['name']}: {len(rows)} strings")
    (OUT / "variants.json").write_text(json.dumps(
        {"versions": VERSIONS, "corpus_indices": indices, "variants": variants},
        ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
