"""The bundled model pair: configurations and the training data stream.

Shared by tools/train_model.py and tools/eval_models.py (not run directly).

  hive-moe-target  Qwen3MoeForCausalLM, 4 layers, 8 experts, top-2
  hive-draft       LlamaForCausalLM, 2 layers, dense

Both use the tokenizer of tools/train_tokenizer.py and a context of 512.
"""
import json
import pathlib
import random

import torch
import transformers

CONTEXT = 512
VOCAB_SIZE = 4096
ENDOFTEXT, IM_START, IM_END = 0, 1, 2

COMMON = dict(vocab_size=VOCAB_SIZE, max_position_embeddings=CONTEXT, rope_theta=10000.0,
              rms_norm_eps=1e-6, tie_word_embeddings=True, initializer_range=0.02,
              bos_token_id=None, eos_token_id=[ENDOFTEXT, IM_END], pad_token_id=ENDOFTEXT)

MODELS = {
    "hive-moe-target": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", dict(
        hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        head_dim=64, intermediate_size=512, num_experts=8, num_experts_per_tok=2,
        moe_intermediate_size=96, norm_topk_prob=True, decoder_sparse_step=1,
        mlp_only_layers=[], router_aux_loss_coef=0.01)),
    "hive-draft": ("LlamaConfig", "LlamaForCausalLM", dict(
        hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=32, intermediate_size=256)),
}


def make_config(name):
    config_class, model_class, extra = MODELS[name]
    config = getattr(transformers, config_class)(**{**COMMON, **extra})
    config.architectures = [model_class]
    return config


def make_model(name, seed):
    torch.manual_seed(seed)
    config = make_config(name)
    return getattr(transformers, MODELS[name][1])._from_config(
        config, attn_implementation="sdpa", dtype=torch.float32)


def load_model(directory):
    """A saved model in float32 (bf16 weights upcast exactly), eager attention."""
    return transformers.AutoModelForCausalLM.from_pretrained(
        directory, dtype=torch.float32, attn_implementation="eager").eval()


def count_parameters(model):
    """Total and per-token active parameters (tied embeddings counted once)."""
    total = model.num_parameters()
    config = model.config
    experts = getattr(config, "num_experts", 0) or 0
    if not experts:
        return total, total
    expert_params = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    return total, total - expert_params * (experts - config.num_experts_per_tok) // experts


def chat_wrap(document, index):
    """Some fortunes and dictionary entries become one-turn ChatML conversations,
    so that `--chat` prompts land on text the model has seen in that form."""
    source, text = document["source"], document["text"]
    if source.startswith("fortunes/") and index % 4 == 0:
        topic = source.split("/", 1)[1].replace("-", " and ")
        question = f"Tell me a fortune about {topic}."
    elif source == "dict-devil" and index % 2 == 0 and ", " in text.split("\n")[0]:
        word, _, definition = text.partition(", ")
        text = definition.split("  ", 1)[-1].strip() if "  " in definition else definition
        question = f"What is {word.strip().capitalize()}?"
    else:
        return text
    return f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n{text}<|im_end|>\n"


def token_stream(corpus_dir, tokenizer, split, seed, chat=True):
    """All documents of a split, shuffled with `seed`, each followed by <|endoftext|>."""
    with open(pathlib.Path(corpus_dir) / f"{split}.jsonl", encoding="utf-8") as f:
        documents = [json.loads(line) for line in f]
    random.Random(seed).shuffle(documents)
    texts = [chat_wrap(d, i) if chat else d["text"] for i, d in enumerate(documents)]
    ids = []
    for encoding in tokenizer.encode_batch(texts):
        ids.extend(encoding.ids)
        ids.append(ENDOFTEXT)
    return torch.tensor(ids, dtype=torch.long)


def batches(stream, batch_size, seed):
    """Random windows of CONTEXT + 1 tokens, forever (inputs and shifted labels)."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        starts = torch.randint(0, len(stream) - CONTEXT - 1, (batch_size,), generator=generator)
        yield torch.stack([stream[s:s + CONTEXT + 1] for s in starts.tolist()])
