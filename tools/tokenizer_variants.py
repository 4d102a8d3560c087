"""Pipelines rebuilt on the trained test vocabularies, one per component behaviour.

Each variant replaces top-level fields of its base tokenizer.json (and keys of
its tokenizer_config.json); tools/make_tokenizer_fixtures.py records what
Hugging Face produces with it, and tests/tokenizer checks Hive against that.
"""

SPACE = "\u2581"


def byte_level(add_prefix_space=False, use_regex=False):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": False,
            "use_regex": use_regex}


def split(pattern, behavior, invert=False, kind="Regex"):
    return {"type": "Split", "pattern": {kind: pattern}, "behavior": behavior, "invert": invert}


def seq(kind, key, items):
    return {"type": "Sequence", key: items}


def metaspace(scheme, split_words):
    return {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": scheme,
            "split": split_words}


def replace(pattern, content, kind="String"):
    return {"type": "Replace", "pattern": {kind: pattern}, "content": content}


SP_DECODER = seq("decoders", "decoders", [
    replace(SPACE, " "), {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}])


def split_variant(behavior, invert=False, pattern=r"\s+|[,.;:!?]", kind="Regex"):
    snake = "".join("_" + c.lower() if c.isupper() else c for c in behavior).lstrip("_")
    name = f"split_{snake}" + ("_invert" if invert else "") + ("_string" if kind == "String" else "")
    return {"name": name, "base": "bytelevel_bpe", "tokenizer": {
        "pre_tokenizer": seq("pretokenizers", "pretokenizers",
                             [split(pattern, behavior, invert, kind), byte_level()])}}


VARIANTS = [
    {"name": "gpt2_bytelevel_regex", "base": "bytelevel_bpe", "tokenizer": {
        "pre_tokenizer": byte_level(add_prefix_space=True, use_regex=True),
        "post_processor": byte_level(add_prefix_space=True, use_regex=True)},
     "config": {"add_bos_token": False}},
    {"name": "nfkc_lowercase_digits", "base": "bytelevel_bpe", "tokenizer": {
        "normalizer": seq("normalizers", "normalizers", [{"type": "NFKC"}, {"type": "Lowercase"}]),
        "pre_tokenizer": seq("pretokenizers", "pretokenizers", [
            {"type": "Digits", "individual_digits": True}, byte_level(use_regex=True)])}},
    {"name": "nfc_digits_contiguous", "base": "bytelevel_bpe", "tokenizer": {
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": seq("pretokenizers", "pretokenizers", [
            {"type": "Digits", "individual_digits": False}, byte_level(use_regex=True)])}},
    {"name": "nfd_strip_replace_regex", "base": "bytelevel_bpe", "tokenizer": {
        "normalizer": seq("normalizers", "normalizers", [
            {"type": "NFD"}, {"type": "Strip", "strip_left": True, "strip_right": True},
            replace(r"\s{2,}", " ", kind="Regex"), {"type": "Prepend", "prepend": " "}]),
        "pre_tokenizer": byte_level(use_regex=True)}},
    {"name": "nfkd_config_add_eos_ignored", "base": "bytelevel_bpe", "tokenizer": {
        "normalizer": {"type": "NFKD"}},
     "config": {"add_bos_token": True, "add_eos_token": True}},
    {"name": "nfd_strip_accents_lowercase", "base": "bytelevel_bpe", "tokenizer": {
        "normalizer": seq("normalizers", "normalizers", [
            {"type": "NFD"}, {"type": "StripAccents"}, {"type": "Lowercase"}])}},
    # Named special tokens: new ones are added (a model token becomes an
    # added special token), existing added tokens keep their flags, and
    # added_tokens_decoder entries replace them.
    {"name": "config_special_tokens", "base": "bytelevel_bpe", "config": {
        "mask_token": "[MASK]", "pad_token": "<|pad|>", "unk_token": "zanzibar",
        "additional_special_tokens": ["<tool>", "Kopi", "<|new|>", "apa"],
        "added_tokens_decoder": {"1504": {"content": "<tool>", "special": True, "lstrip": True,
                                          "rstrip": False, "normalized": False,
                                          "single_word": False}}}},
    {"name": "split_special_tokens", "base": "sentencepiece_bpe",
     "config": {"split_special_tokens": True}},
    split_variant("Removed"),
    split_variant("Isolated"),
    split_variant("MergedWithPrevious"),
    split_variant("MergedWithNext"),
    split_variant("Contiguous"),
    split_variant("Removed", invert=True, pattern=r"\p{L}+|\p{N}+"),
    split_variant("MergedWithNext", invert=True, pattern=r"\p{L}+"),
    split_variant("MergedWithPrevious", pattern=" ", kind="String"),
    {"name": "metaspace_first", "base": "sentencepiece_bpe", "tokenizer": {
        "normalizer": None, "pre_tokenizer": metaspace("first", False), "decoder": SP_DECODER}},
    {"name": "metaspace_always_split", "base": "sentencepiece_bpe", "tokenizer": {
        "normalizer": None, "pre_tokenizer": metaspace("always", True),
        "decoder": seq("decoders", "decoders", [{"type": "ByteFallback"},
                                                metaspace("always", True)])}},
    {"name": "metaspace_never_split", "base": "sentencepiece_bpe", "tokenizer": {
        "normalizer": None, "pre_tokenizer": metaspace("never", True),
        "decoder": seq("decoders", "decoders", [{"type": "ByteFallback"}, {"type": "Fuse"},
                                                metaspace("never", True)])}},
    {"name": "digits_then_metaspace_first", "base": "sentencepiece_bpe", "tokenizer": {
        "normalizer": None,
        "pre_tokenizer": seq("pretokenizers", "pretokenizers", [
            {"type": "Digits", "individual_digits": True}, metaspace("first", True)]),
        "decoder": SP_DECODER}},
    {"name": "nfkc_collapse_spaces_prepend", "base": "sentencepiece_bpe", "tokenizer": {
        "normalizer": seq("normalizers", "normalizers", [
            {"type": "NFKC"}, replace(" {2,}", " ", kind="Regex"),
            {"type": "Prepend", "prepend": SPACE}, replace(" ", SPACE)])}},
    {"name": "no_post_processor", "base": "sentencepiece_bpe", "tokenizer": {
        "post_processor": None}, "config": {"add_bos_token": None, "add_eos_token": None}},
    # transformers 5 drops add_bos_token / add_eos_token when tokenizer.json exists.
    {"name": "config_add_eos_ignored", "base": "sentencepiece_bpe",
     "config": {"add_eos_token": True}},
]
