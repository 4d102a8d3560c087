#!/usr/bin/env python3
"""Builds the English training corpus for the bundled models from Debian packages.

Sources (installed by this script with apt-get when missing):
  fortunes, fortunes-min  /usr/share/games/fortunes/*    BSD-3-Clause (fortune-mod)
  bible-kjv, bible-kjv-text  the King James Version       text public domain (1611);
                          read with the `bible` program    package GPL-2+
  dict-devil              Bierce, The Devil's Dictionary   public domain
  debian-handbook         The Debian Administrator's       GPL-2+ or CC-BY-SA-3.0
                          Handbook, en-US HTML (tags stripped)

Each source is split into documents (one fortune, one Bible chapter, one
dictionary entry, one handbook page). Every 50th document goes to the
held-out set; the rest is training data. Output, one JSON object per line
with "source" and "text":
  <out>/train.jsonl  <out>/heldout.jsonl  <out>/stats.json (sizes, package versions)

Run from the repository root (root, or sudo for apt-get):
  .venv/bin/python tools/make_corpus.py --out build-corpus
The corpus is not committed; this script rebuilds it byte for byte.
"""
import argparse
import gzip
import hashlib
import html.parser
import json
import pathlib
import re
import shutil
import subprocess

PACKAGES = ["fortunes", "fortunes-min", "bible-kjv", "bible-kjv-text", "dict-devil", "debian-handbook"]
FORTUNE_DIR = pathlib.Path("/usr/share/games/fortunes")
DEVIL_DICT = pathlib.Path("/usr/share/dictd/devil.dict.dz")
HANDBOOK_DIR = pathlib.Path("/usr/share/doc/debian-handbook/html/en-US")
HELDOUT_EVERY = 50


def ensure_packages():
    missing = [p for p in PACKAGES
               if subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True,
                                 text=True).stdout.find("install ok installed") < 0]
    if not missing:
        return
    print("make_corpus: installing", " ".join(missing))
    sudo = [] if shutil.os.geteuid() == 0 else ["sudo"]
    subprocess.run(sudo + ["apt-get", "update", "-qq"], check=True)
    subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing,
                   check=True, env={**shutil.os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def package_versions():
    return {p: subprocess.run(["dpkg-query", "-W", "-f=${Version}", p], capture_output=True,
                              text=True, check=True).stdout for p in PACKAGES}


def fortunes():
    for path in sorted(FORTUNE_DIR.iterdir()):
        if path.suffix or path.is_symlink() or not path.is_file():
            continue  # skip .dat indexes and the .u8 links
        text = path.read_text(encoding="utf-8", errors="replace")
        for cookie in re.split(r"^%\n", text, flags=re.M):
            cookie = cookie.expandtabs(4).strip("\n")
            if cookie.strip():
                yield "fortunes/" + path.name, cookie


def bible():
    text = subprocess.run(["bible", "-l0", "Gen1:1-Rev22:21"], capture_output=True, text=True,
                          check=True).stdout
    # "Genesis 1" headings, then "  1 In the beginning ..." verse lines.
    for chapter in re.split(r"\n(?=\S[^\n]* \d+\n)", text.strip("\n")):
        lines = chapter.strip("\n").split("\n")
        verses = [re.sub(r"^\s*\d+ ", "", line) for line in lines[1:] if line.strip()]
        if verses:
            yield "bible-kjv", lines[0].strip() + "\n\n" + " ".join(verses)


def devils_dictionary():
    text = gzip.decompress(DEVIL_DICT.read_bytes()).decode("utf-8", errors="replace")
    body = text[text.index("ABASEMENT, n."):]
    # An entry starts at a line with an upper-case headword after a blank line.
    for entry in re.split(r"\n\n(?=[A-Z][A-Z' -]+[,.])", body):
        entry = entry.strip("\n")
        if entry:
            yield "dict-devil", entry


class _HandbookText(html.parser.HTMLParser):
    """Collects the text of paragraphs (div.para), list items and headings, skipping code blocks."""

    BLOCKS = {"p", "li", "h1", "h2", "h3", "h4", "dt"}
    SKIP = {"pre", "script", "style", "table"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs, self.current, self.open_blocks, self.depth_skip = [], [], [], 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.depth_skip += 1
        elif tag in self.BLOCKS or tag == "div":
            is_block = tag != "div" or ("class", "para") in attrs
            if is_block:
                self._flush()
            self.open_blocks.append(is_block)

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.depth_skip = max(0, self.depth_skip - 1)
        elif (tag in self.BLOCKS or tag == "div") and self.open_blocks:
            if self.open_blocks.pop():
                self._flush()

    def handle_data(self, data):
        if any(self.open_blocks) and not self.depth_skip:
            self.current.append(data)

    def _flush(self):
        text = re.sub(r"\s+", " ", "".join(self.current)).strip()
        if len(text.split()) >= 4:
            self.paragraphs.append(text)
        self.current = []


def handbook():
    seen = set()
    for path in sorted(HANDBOOK_DIR.glob("*.html")):
        parser = _HandbookText()
        parser.feed(path.read_text(encoding="utf-8"))
        parser.close()
        fresh = []
        for paragraph in parser.paragraphs:
            key = hashlib.sha1(paragraph.encode()).digest()
            if key not in seen:  # chapter pages repeat their sections' text
                seen.add(key)
                fresh.append(paragraph)
        if fresh:
            yield "debian-handbook/" + path.stem, "\n\n".join(fresh)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="build-corpus", help="output directory")
    parser.add_argument("--no-install", action="store_true", help="fail instead of running apt-get")
    args = parser.parse_args()
    if not args.no_install:
        ensure_packages()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stats = {}
    index = 0
    with open(out / "train.jsonl", "w", encoding="utf-8") as train, \
            open(out / "heldout.jsonl", "w", encoding="utf-8") as heldout:
        for source in (fortunes, bible, devils_dictionary, handbook):
            for name, text in source():
                split = heldout if index % HELDOUT_EVERY == HELDOUT_EVERY - 1 else train
                split.write(json.dumps({"source": name, "text": text}, ensure_ascii=False) + "\n")
                entry = stats.setdefault(source.__name__, {"documents": 0, "bytes": 0})
                entry["documents"] += 1
                entry["bytes"] += len(text.encode("utf-8"))
                index += 1
    stats["total_bytes"] = sum(v["bytes"] for v in stats.values())
    stats["packages"] = package_versions()
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
