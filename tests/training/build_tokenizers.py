"""Trains the small tokenizers the training tests use, on the text of `hf` export rows.

Usage: build_tokenizers.py OUT_DIR HF_JSONL...

Writes OUT_DIR/bpe.json (BPE over whitespace-split words, NFC-normalized, unknown characters as
[UNK]), OUT_DIR/bytelevel.json (byte-level BPE, GPT-2 style pre-tokenization),
OUT_DIR/split.json (byte-level BPE after a Split pattern in the style of recent model families:
NFC-normalized, letters and marks with one leading non-letter, numbers by two, a byte-level
post-processor trimming offsets, merges ignored for whole-vocabulary words), and one byte-level
BPE in the shape of each model family's `tokenizer.json` (FAMILIES: the family's pre-tokenizer
`Sequence` and Split patterns, normalizer, post-processor and `ignore_merges`), and three
SentencePiece-style BPEs with byte fallback (OUT_DIR/mistral.json: a `Metaspace` pre-tokenizer
putting `▁` before the first stretch; OUT_DIR/llama2.json: `Prepend` and `Replace` normalizers;
OUT_DIR/gemma.json: `Replace` alone; the rarer characters are left out of their vocabularies,
so they fall back to bytes). All know the control tokens of tests/fixtures/templates as special tokens; the family ones also have
non-special added tokens, normalized or not. Nothing is downloaded.
"""

import json
import sys
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

# A pre-tokenizer pattern in the style of recent byte-level models (written for these tests).
SPLIT = (
    r"(?i:'(?:[sdmt]|ll|ve|re))|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}{1,2}"
    r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# The Split patterns of model families' tokenizer.json files (their pre-tokenizers' behaviour).
LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
O200K = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
DEEPSEEK = [
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    '[!"#$%&'
    r"'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
    r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
]

# name: (Split patterns, normalizer, post-processor trims offsets, ignore_merges)
FAMILIES = {
    "llama3": ([LLAMA3], None, False, True),
    "qwen2": ([QWEN2], "nfc", False, False),
    "o200k": ([O200K], None, False, True),
    "deepseek": (DEEPSEEK, "empty", False, False),
}

# Added tokens that are not special, as the families have them (tool-call and thinking tags).
ADDED = [("<think>", False), ("</think>", False), ("<tool_call>", True), ("</tool_call>", True)]

SPECIAL = ["<|im_start|>", "<|im_end|>", "<|begin|>", "<|header|>", "<|end_header|>", "<|eot|>"]


def texts(paths):
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            for m in row["messages"]:
                yield m.get("content") or ""
                yield m.get("reasoning_content") or ""
                for c in m.get("tool_calls") or []:
                    yield json.dumps(c["function"], ensure_ascii=False)
            yield json.dumps(row.get("tools") or [], ensure_ascii=False)


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    corpus = list(texts(sys.argv[2:]))

    bpe = Tokenizer(models.BPE(unk_token="[UNK]"))
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Whitespace()
    bpe.train_from_iterator(
        corpus,
        trainers.BpeTrainer(vocab_size=600, special_tokens=["[UNK]"] + SPECIAL, show_progress=False),
    )
    bpe.save(str(out / "bpe.json"))

    byte = Tokenizer(models.BPE())
    byte.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    train_byte_level(byte, corpus, 900, out / "bytelevel.json")

    split = Tokenizer(models.BPE(ignore_merges=True))
    split.normalizer = normalizers.NFC()
    split.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    split.post_processor = processors.ByteLevel(trim_offsets=True)
    train_byte_level(split, corpus, 700, out / "split.json")

    for name, (patterns, normalizer, trim, ignore_merges) in FAMILIES.items():
        family = Tokenizer(models.BPE(ignore_merges=ignore_merges))
        if normalizer == "nfc":
            family.normalizer = normalizers.NFC()
        elif normalizer == "empty":
            family.normalizer = normalizers.Sequence([])
        family.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(p), behavior="isolated") for p in patterns]
            + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
        )
        family.post_processor = processors.ByteLevel(trim_offsets=trim)
        added = [AddedToken(t, normalized=n, special=False) for t, n in ADDED]
        train_byte_level(family, corpus, 800, out / f"{name}.json", added)

    train_pieces(corpus, out)


def train_pieces(corpus, out):
    """Trains a SentencePiece-style BPE (characters, spaces as ▁, byte tokens) and saves it in
    three shapes: OUT/mistral.json, OUT/llama2.json and OUT/gemma.json."""
    pieces = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    pieces.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    pieces.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=700,
            special_tokens=["<unk>", "<s>", "</s>"] + SPECIAL,
            limit_alphabet=120,
            show_progress=False,
        ),
    )
    config = json.loads(pieces.to_str())
    vocab = config["model"]["vocab"]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    # Encoding reads the whole text as one word, as these families' files do.
    metaspace = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False}
    config["pre_tokenizer"] = metaspace
    config["decoder"] = None
    (out / "mistral.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    config["pre_tokenizer"] = None
    config["normalizer"] = {
        "type": "Sequence",
        "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        ],
    }
    (out / "llama2.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    config["normalizer"] = config["normalizer"]["normalizers"][1]
    (out / "gemma.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")


def train_byte_level(tokenizer, corpus, vocab_size, path, added=()):
    """Trains a byte-level BPE (all 256 bytes in its alphabet), adds the `added` tokens and
    saves it to `path`."""
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=SPECIAL,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer.add_tokens(list(added))
    tokenizer.save(str(path))


if __name__ == "__main__":
    main()
