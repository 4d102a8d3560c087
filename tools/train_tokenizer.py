#!/usr/bin/env python3
"""Trains the byte-level BPE tokenizer shared by the bundled models.

Vocabulary of 4096: the 256 byte symbols, three special tokens for documents
and ChatML chat (<|endoftext|> = 0, <|im_start|> = 1, <|im_end|> = 2) and
BPE merges learned from the training split built by tools/make_corpus.py.
Writes tokenizer.json and tokenizer_config.json (with the chat template).

Run from the repository root:
  .venv/bin/python tools/train_tokenizer.py --corpus build-corpus --out build-corpus/tokenizer
"""
import argparse
import json
import pathlib

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

VOCAB_SIZE = 4096
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# ChatML. Generation stops at <|im_end|>; a plain-text prompt stops at <|endoftext|>.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def tokenizer_config():
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": "<|endoftext|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 512,
        "additional_special_tokens": SPECIAL_TOKENS[1:],
        "chat_template": CHAT_TEMPLATE,
    }


def texts(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)["text"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="build-corpus", help="make_corpus.py output")
    parser.add_argument("--out", default="build-corpus/tokenizer")
    args = parser.parse_args()

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  min_frequency=2, show_progress=False)
    tokenizer.train_from_iterator(texts(pathlib.Path(args.corpus) / "train.jsonl"), trainer)
    assert tokenizer.get_vocab_size() == VOCAB_SIZE, tokenizer.get_vocab_size()
    for i, token in enumerate(SPECIAL_TOKENS):
        assert tokenizer.token_to_id(token) == i, token

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(), indent=2) + "\n")
    sample = "Once upon a time, a wise man said: fortune favours the bold."
    print(f"vocab {tokenizer.get_vocab_size()}; {sample!r} ->",
          tokenizer.encode(sample).tokens)


if __name__ == "__main__":
    main()
