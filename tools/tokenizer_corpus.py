"""The tokenizer test corpus: strings Hive must encode exactly like Hugging Face.

Imported by tools/make_tokenizer_fixtures.py and tools/bench_tokenizer.py.
Every string is plain text a user could send; categories are kept apart so a
failure points at what kind of input broke.
"""
import pathlib

SHARED = pathlib.Path(__file__).resolve().parent.parent.parent / "shared"
SEEDS = SHARED / "seeds"

ENGLISH = [
    "Hello world",
    "Hello, world!",
    " Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "It's a truth universally acknowledged that a model in possession of a good cache must want memory.",
    "I'm sure they'll say we've done it, but you'd know: he's not, she'd been, they're here.",
    "DON'T SHOUT, IT'S LOUD; WE'VE HEARD YOU'LL BE FINE.",
    "Dr. Smith arrived at 9:30 a.m. on Jan. 5th, 2024 (a Friday).",
    "Prices rose 3.5% to $1,234.56 per unit; the CEO said \"no comment\".",
    "Well... that was unexpected -- wasn't it?",
    "Email me at someone@example.com or visit https://example.org/path?q=1&r=2#frag.",
    "Continuous batching admits and retires requests every iteration.",
    "Paged KV wastes at most block_size - 1 slots per sequence.",
    "Decode at batch 1 is memory-bound; prefill is compute-bound.",
    "The scheduler asks the KV-manager for slots, builds a StepPlan, and sends it to every worker.",
    "A request carries num_computed_tokens and its token list.",
    "State-of-the-art, well-known, and user-friendly are hyphenated compounds.",
    "She sells sea shells by the sea shore.",
    "Numbers like 1st, 2nd, 3rd and 4th are ordinals.",
    "Mr. O'Neil's dog's bone -- the dogs' bones.",
    "UPPER lower MiXeD cAsE",
    "a",
    "A",
    "?",
    "...",
    "!!!???",
    "'s",
    "'S 'T 'RE 'VE 'M 'LL 'D",
    "rock'n'roll",
    "Tokenization is the first step; detokenization is the last.",
    "What is 2+2? It is 4.",
    "He said: 'Stop!' and then (quietly) left [for good] {forever}.",
    "Hash #tags and @mentions, ~tildes~ and ^carets^, `backticks` and |pipes|.",
    "Ellipsis\u2026 em\u2014dash en\u2013dash \u201ccurly quotes\u201d and \u2018single\u2019 ones.",
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 fa\u00e7ade co\u00f6perate",
    "The year 1984 and the number 3141592653589793.",
    "Tabs\tseparate\tthese\twords.",
    "Line one\nLine two\nLine three",
    "Windows line\r\nendings\r\nhere\r\n",
    "Old Mac\rline endings\r",
]

CODE = [
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) {\n  sum += x[i] * y[i];\n}\n",
    "#include <vector>\nint main() { std::vector<int> v{1, 2, 3}; return v.size(); }",
    "if x == 1 and not y:\n\tprint(f\"x={x!r}\")\n",
    "{\"model\": \"qwen3\", \"max_tokens\": 128, \"stream\": true}",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "$ cmake -S . -B build -G Ninja && cmake --build build -j2",
    "x = [i**2 for i in range(10) if i % 2 == 0]",
    "    indented with four spaces\n        and eight\n",
    "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
    "fn main() { let s: &str = \"hi\"; println!(\"{s}\"); }",
    "a=1;b=2;c=a+b;d=c*2;e=d/3;f=e-1",
    "// comment\n/* block\n   comment */\n",
    "git commit -m \"tokenizer: first\" && git push origin main",
    "0x7fffffff 0b1010 1e-9 3.0f 10_000",
    "lambda: None",
    "    ",
    "\t\t\tx",
    "std::unordered_map<std::string, int32_t> vocab;",
    "printf(\"%d %s\\n\", n, name);",
]

EMOJI = [
    "\U0001F600",
    "I love \U0001F355 and \U0001F37A!",
    "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466",
    "\U0001F3F3\uFE0F\u200D\U0001F308",
    "\U0001F44D\U0001F3FD \U0001F44B\U0001F3FF",
    "\U0001F1EE\U0001F1E9 \U0001F1FA\U0001F1F8 \U0001F1EF\U0001F1F5",
    "1\uFE0F\u20E3 #\uFE0F\u20E3",
    "\u2764\uFE0F\u200D\U0001F525",
    "\U0001F9D1\U0001F3FB\u200D\U0001F4BB coding",
    "\U0001F600\U0001F600\U0001F600\U0001F600\U0001F600",
    "emoji\U0001F680rocket",
    "\u263A \u2603 \u2600 \u2601",
    "\U0001F469\u200D\u2764\uFE0F\u200D\U0001F48B\u200D\U0001F468",
    "Thumbs up \U0001F44D, party \U0001F389.",
]

CJK = [
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01",
    "\u6211\u7231\u81ea\u7136\u8bed\u8a00\u5904\u7406\u3002",
    "\u5927\u8bed\u8a00\u6a21\u578b\u7684\u63a8\u7406\u5f15\u64ce\u9700\u8981\u5206\u9875\u7684KV\u7f13\u5b58\u3002",
    "\u3053\u3093\u306b\u3061\u306f\u4e16\u754c",
    "\u30c8\u30fc\u30af\u30ca\u30a4\u30b6\u30fc\u306f\u91cd\u8981\u3067\u3059\u3002",
    "\u6771\u4eac\u30bf\u30ef\u30fc\u306f333\u30e1\u30fc\u30c8\u30eb\u3067\u3059",
    "\uc548\ub155\ud558\uc138\uc694 \uc138\uacc4",
    "\ud55c\uad6d\uc5b4 \ud1a0\ud06c\ub098\uc774\uc800 \ud14c\uc2a4\ud2b8",
    "\uff21\uff22\uff23\uff11\uff12\uff13",
    "\uff76\uff80\uff76\uff85",
    "\u4e2d\u6587English\u6df7\u5408text",
    "\u3000\u5168\u89d2\u7a7a\u683c\u3000",
    "\u300c\u5f15\u7528\u300d\u3001\u300e\u4e8c\u91cd\u300f",
    "\u9f8d\u9f98\u9f49",
    "\U00020000\U0002A6D6",
]

COMBINING = [
    "e\u0301",
    "Cafe\u0301 vs Caf\u00e9",
    "A\u030A and \u00C5 and \u212B",
    "\u1E9B\u0323",
    "o\u0308\u0304",
    "\u1100\u1161\u11A8",
    "\ufb01le \ufb02ow",
    "\u2460\u2461\u2462",
    "x\u00b2 + y\u00b3",
    "\u00bd \u00bc \u2153",
    "\u2126 \u03a9",
    "n\u0303 \u00f1",
    "a\u0300\u0301\u0302\u0303\u0304",
    "\u0915\u094d\u0937",
    "\u0e01\u0e34\u0e19\u0e02\u0e49\u0e32\u0e27",
    "\u0627\u0644\u0633\u0644\u0627\u0645 \u0639\u0644\u064a\u0643\u0645",
    "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd",
    "\u0130stanbul \u0131\u015f\u0131k",
    "\u03a3\u0391\u03a3 \u03c3\u03b1\u03c2",
    "\u1e9e Stra\u00dfe",
    "\u212a\u0065lvin",
    "\u2168 \u216b",
]

WHITESPACE = [
    "",
    " ",
    "  ",
    "a  b",
    "a   b    c",
    "   leading",
    "trailing   ",
    "\t",
    "\n",
    "\n\n\n",
    "a\n\nb",
    "a \n b",
    " \n ",
    "\r\n",
    "\r\n\r\n",
    "\r\r\n\n",
    "line\r\n  indented\r\n",
    "a\u00a0b",
    "a\u3000b",
    "a\u2028b\u2029c",
    "a\u0085b",
    "a\u2003\u2009b",
    "\u200b",
    "zero\u200bwidth\u200cjoin\u200dhere",
    "\ufeffBOM",
    "\x00\x01\x02",
    "\x7f\x1b[0m",
    "  \t \n \r\n  ",
    "x" + " " * 40 + "y",
    "\n" * 20,
]

DIGITS = [
    "1234567890",
    "12345678901234567890123456789012345678901234567890",
    "3.14159265358979323846",
    "2024-01-01T12:34:56Z",
    "+62 812-3456-7890",
    "1,000,000",
    "\u0661\u0662\u0663 \u0967\u0968\u0969",
    "\u00b9\u00b2\u00b3",
    "v1.2.3-rc4",
    "abc123def456",
    "0000000000",
    "9" * 100,
]

SPECIAL = [
    "<|im_start|>user\nHello<|im_end|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>",
    "<|endoftext|><|endoftext|>",
    "x<|im_end|>y",
    "<think>\nLet me think.\n</think>\n\nAnswer.",
    "<|im_",
    "<|im_start",
    "<tool_call>{\"name\": \"f\"}</tool_call>",
    "<s>",
    "</s>",
    "<s>Hello</s>",
    "<unk>",
    "a <s> b </s> c",
    "[INST] Hi [/INST]",
    "[INST]Hi[/INST]",
    "<|begin_of_text|>Hello",
    "<|begin_of_text|><|eot_id|>",
    "text <|eot_id|> more",
    "[MASK]",
    "a [MASK] b",
    "a   [MASK]   b",
    "a[MASK]b",
    "<tool>call</tool>",
    "zanzibar",
    "Zanzibar zanzibars zanzibar.",
    "xzanzibar zanzibar_",
    "Kopi kopi KOPI",
    "<|fim_prefix|>def f(<|fim_suffix|>)<|fim_middle|>",
    "<|vision_start|><|image_pad|><|vision_end|>",
]

MISC = [
    "\u2581",
    "\u2581\u2581hello\u2581world",
    "\u0120hello",
    "\ufffd",
    "replacement \ufffd char",
    "\u00ff\u00fe",
    "a" * 300,
    "ab" * 200,
    "supercalifragilisticexpialidocious",
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "\u00e0\u00e1\u00e2\u00e3\u00e4\u00e5\u00e6\u00e7\u00e8\u00e9",
    "\u0416\u0438\u0432\u0438 \u0438 \u0443\u0447\u0438\u0441\u044c",
    "\u10d0\u10d1\u10d2",
    "\u2200x\u2208\u211d: x\u00b2 \u2265 0",
    "\u20ac100 \u00a3200 \u00a5300",
    "\U0001D400\U0001D401\U0001D402",
    "\u00a9 \u00ae \u2122",
    "---",
    "___init___",
    "...\n...\n",
    "\"quoted\"",
    "'single'",
    "l'homme l\u2019\u00e9t\u00e9",
    "Tr\u00e8s bien, merci beaucoup!",
    "Gr\u00fc\u00dfe aus M\u00fcnchen",
    "\u00bfQu\u00e9 tal? \u00a1Muy bien!",
]

INVALID_UTF8 = [
    b"\xff",
    b"abc\xc3",
    b"\xed\xa0\x80",
    b"x\xed\xbf\xbfy",
    b"\xe4\xb8",
    b"\xe4\xb8 ok",
    b"\xc0\xaf",
    b"\xf4\x90\x80\x80",
    b"\xf0\x9f\x98",
    b"\x80\x80hello",
    b"caf\xe9",
    b"\xfe\xfe\xff\xff",
]


def seed_paragraphs(limit=70):
    paragraphs = []
    for path in sorted(SEEDS.glob("*.txt")):
        for block in path.read_text(encoding="utf-8").split("\n\n"):
            block = block.strip("\n")
            if block:
                paragraphs.append(block)
    return paragraphs[:limit]


def seed_texts():
    return [p.read_text(encoding="utf-8") for p in sorted(SEEDS.glob("*.txt"))]


def corpus():
    """The strings every tokenizer is checked on, in a fixed order."""
    strings = ENGLISH + CODE + EMOJI + CJK + COMBINING + WHITESPACE + DIGITS + SPECIAL + MISC
    strings += seed_paragraphs()
    strings.append(seed_texts()[0])  # one whole article, ~12 KB
    strings.append(" ".join(ENGLISH) * 3)
    return strings


# Random mixes of the hard parts (special-token strings glued to text,
# combining marks after anything, odd spaces), fixed by the seed.
MIX_POOLS = ["abcxyzABCXYZ", "0123456789", " \t\n\r  ", "'\".,;:!?-_()[]{}<>|/\\@#",
             "\u00e9\u00fc\u00f1\u00e7\u00e5\u00f8\u00df\u0130\u0131\u017f\u03a3\u03c3\u03c2",
             "\u4f60\u597d\u4e16\u754c\u304b\u306a\u30ab\u30ca\ud55c\uad6d\uc5b4",
             "\u0301\u0308\u0323\u0338", "\u00a0\u3000\u2028\u200b\u200d\ufeff\x85",
             "\U0001F600\U0001F44D\U0001F3FD\U0001F1EE\U0001F1E9\u200d", "\u2581\u0120",
             "\u2460\u00b2\u00bd\ufb01\uff21", "\u0663\u0969"]
MIX_TOKENS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "<s>", "</s>", "[MASK]",
              "<tool>", "zanzibar", "Kopi", "[INST]", "<|begin_of_text|>", "<|eot_id|>"]


def random_mixes(count=200, seed=20240601):
    import random
    rng = random.Random(seed)
    strings = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.12:
                parts.append(rng.choice(MIX_TOKENS))
            else:
                pool = rng.choice(MIX_POOLS)
                parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 6))))
        strings.append("".join(parts))
    return strings
