"""Trains the two small tokenizers the training tests use, on the text of `hf` export rows.

Usage: build_tokenizers.py OUT_DIR HF_JSONL...

Writes OUT_DIR/bpe.json (BPE over whitespace-split words, NFC-normalized, unknown characters as
[UNK]), OUT_DIR/bytelevel.json (byte-level BPE, GPT-2 style pre-tokenization) and
OUT_DIR/split.json (byte-level BPE after a Split pattern in the style of recent model families:
NFC-normalized, letters and marks with one leading non-letter, numbers by two, a byte-level
post-processor trimming offsets, merges ignored for whole-vocabulary words). Both know the
control tokens of tests/fixtures/templates as special tokens. Nothing is downloaded.
"""

import json
import sys
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

# A pre-tokenizer pattern in the style of recent byte-level models (written for these tests).
SPLIT = (
    r"(?i:'(?:[sdmt]|ll|ve|re))|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}{1,2}"
    r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

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


def train_byte_level(tokenizer, corpus, vocab_size, path):
    """Trains a byte-level BPE (all 256 bytes in its alphabet) and saves it to `path`."""
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
    tokenizer.save(str(path))


if __name__ == "__main__":
    main()
