#!/usr/bin/env python3
"""Renders chat-template fixtures for Hive's tests with Hugging Face transformers.

Run with the project's virtual environment (jinja2 3.1.6, transformers 5.24.0):

    .venv/bin/python tools/make_chat_template_fixtures.py

It reads, under tests/data/chat_templates/:

  conversations.json      the conversations to render, per template
  snippet_sources.json    small templates with a context, covering the Jinja
                          subset expression by expression

and writes there:

  <template>/cases.json   each conversation with the prompt transformers
                          renders for it (or the error it raises), for qwen3
                          (the real Qwen3 tokenizer_config.json, copied from
                          ../shared) and the llama3_style and mistral_style
                          templates kept next to it as chat_template.jinja
  snippets.json           each snippet with jinja2's output (or error)

Prompts come from tokenizer.apply_chat_template(..., tokenize=False) on a
tokenizer loaded by AutoTokenizer from the template's directory, so special
tokens, message normalisation and the sandboxed jinja2 environment are exactly
transformers'. Snippets are rendered by transformers' own compiled environment
(trim_blocks, lstrip_blocks, its tojson, raise_exception, loopcontrols).
The C++ tests read these files; nothing here runs at test time.
"""

import json
import lzma
import pathlib
import shutil
import tempfile

import jinja2
import transformers
from tokenizers import Tokenizer, models
from transformers import AutoTokenizer
from transformers.utils.chat_template_utils import _cached_compile_jinja_template

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "chat_templates"
SHARED_QWEN3 = ROOT.parent / "shared" / "data" / "tokenizers" / "qwen3"


def header():
    return {
        "generator": "tools/make_chat_template_fixtures.py",
        "jinja2": jinja2.__version__,
        "transformers": transformers.__version__,
    }


def load_tokenizer(name, work):
    """A tokenizer for the template in OUT/name, loaded the way transformers loads a model's."""
    directory = work / name
    directory.mkdir()
    for source in (OUT / name).iterdir():
        if source.name in ("tokenizer_config.json", "chat_template.jinja"):
            shutil.copy(source, directory / source.name)
    if name == "qwen3":
        with lzma.open(SHARED_QWEN3 / "tokenizer.json.xz") as packed:
            (directory / "tokenizer.json").write_bytes(packed.read())
    else:
        # The prompt does not depend on the vocabulary; a word-level one that
        # knows the special tokens is enough to load the tokenizer.
        config = json.loads((directory / "tokenizer_config.json").read_text())
        specials = [v for k, v in config.items() if k.endswith("_token") and isinstance(v, str)]
        vocab = {token: i for i, token in enumerate(dict.fromkeys(["<unk>", *specials]))}
        Tokenizer(models.WordLevel(vocab, unk_token="<unk>")).save(str(directory / "tokenizer.json"))
    return AutoTokenizer.from_pretrained(str(directory))


def render_case(tokenizer, case):
    kwargs = dict(case.get("kwargs", {}))
    tools = kwargs.pop("tools", None)
    result = {
        "name": case["name"],
        "messages": case["messages"],
        "add_generation_prompt": case["add_generation_prompt"],
        "kwargs": case.get("kwargs", {}),
    }
    try:
        result["expected"] = tokenizer.apply_chat_template(
            case["messages"],
            tools=tools,
            add_generation_prompt=case["add_generation_prompt"],
            tokenize=False,
            **kwargs,
        )
    except jinja2.exceptions.TemplateError as error:
        result["error"] = {"type": type(error).__name__, "message": str(error)}
    return result


def write_json(path, data):
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def read_json(path):
    return json.loads(path.read_text(encoding="utf-8"))


def make_template_fixtures(work):
    shutil.copy(SHARED_QWEN3 / "tokenizer_config.json", OUT / "qwen3" / "tokenizer_config.json")
    conversations = read_json(OUT / "conversations.json")
    for name in ("qwen3", "llama3_style", "mistral_style"):
        cases = conversations[name]
        tokenizer = load_tokenizer(name, work)
        rendered = [render_case(tokenizer, case) for case in cases]
        names = [case["name"] for case in rendered]
        assert len(names) == len(set(names)), f"{name}: duplicate case names"
        errors = sum("error" in case for case in rendered)
        write_json(OUT / name / "cases.json", {
            **header(),
            "template": name,
            "special_tokens": tokenizer.special_tokens_map,
            "cases": rendered,
        })
        print(f"{name}: {len(rendered)} conversations ({errors} raise)")


def render_snippet(snippet):
    template, context = snippet[0], snippet[1] if len(snippet) > 1 else {}
    result = {"template": template, "context": context}
    try:
        result["expected"] = _cached_compile_jinja_template(template).render(**context)
    except Exception as error:  # jinja2 and Python errors alike: the C++ side must raise too
        result["error"] = {"type": type(error).__name__, "message": str(error)}
    return result


def make_snippet_fixtures():
    rendered = [render_snippet(snippet) for snippet in read_json(OUT / "snippet_sources.json")["snippets"]]
    write_json(OUT / "snippets.json", {**header(), "snippets": rendered})
    errors = sum("error" in snippet for snippet in rendered)
    print(f"snippets: {len(rendered)} ({errors} raise)")


def main():
    with tempfile.TemporaryDirectory() as work:
        make_template_fixtures(pathlib.Path(work))
    make_snippet_fixtures()


if __name__ == "__main__":
    main()
