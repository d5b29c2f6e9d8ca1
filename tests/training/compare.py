"""Checks `trajkit export --to tokens` against transformers' apply_chat_template, token for token.

Usage: compare.py HF_DIR CASE.json [--rendering-only]

HF_DIR is a `--to hf` export of the same inputs and options. CASE.json lists cases:
[{"template": PATH, "name": NAME or null, "tokenizer": PATH, "tokens": DIR}, ...]. For every row of
each case's `tokens` export, the matching `hf` row is rendered and tokenized by transformers:
`input_ids` must be equal; `assistant_masks` must equal transformers' own mask
(`return_assistant_tokens_mask=True`) for templates with {% generation %} blocks, and the mask
from rendered message boundaries (docs/training.md) for the others. Prints one line per case,
then loads the first case's rows with `datasets` (not with --rendering-only).
"""

import json
import re
import sys
from pathlib import Path

import pyarrow.parquet as pq
import transformers
from transformers import PreTrainedTokenizerFast
from transformers.utils.chat_template_utils import render_jinja_template

transformers.logging.set_verbosity_error()

SPECIAL = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]


def load_template(path, name):
    text = Path(path).read_text(encoding="utf-8")
    try:
        config = json.loads(text)
    except ValueError:
        return text, {}
    template = config["chat_template"]
    if isinstance(template, list):
        template = {t["name"]: t["template"] for t in template}[name or "default"]
    special = {}
    for key in SPECIAL:
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            special[key] = value
    return template, special


def rows(directory, suffix):
    return sorted((Path(directory) / "data").glob(f"*.{suffix}"))


def common_prefix(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def boundary_spans(tok, template, messages, tools, full):
    """Each assistant message's span: the generation prompt after messages[:i] to messages[:i+1]."""

    def shared(ms, prompt):
        try:
            if ms:
                text = tok.apply_chat_template(
                    ms, tools=tools, chat_template=template, tokenize=False, add_generation_prompt=prompt
                )
            else:
                # apply_chat_template refuses an empty conversation; its renderer does not.
                rendered, _ = render_jinja_template(
                    conversations=[[]],
                    tools=tools,
                    chat_template=template,
                    add_generation_prompt=prompt,
                    **tok.special_tokens_map,
                )
                text = rendered[0]
        except Exception:
            return None
        return common_prefix(text, full)

    spans, prev_end = [], 0
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        start = shared(messages[:i], True)
        if start is None:
            start = shared(messages[:i], False)
        if start is None:
            start = prev_end
        stop = shared(messages[: i + 1], False)
        if stop is None:
            stop = len(full)
        prev_end = stop
        spans.append((min(start, stop), stop))
    return spans


def generation_blocks(tok, template, messages, tools):
    """The character spans of the template's {% generation %} blocks, in order."""
    _, indices = render_jinja_template(
        conversations=[messages],
        tools=tools,
        chat_template=template,
        return_assistant_tokens_mask=True,
        **tok.special_tokens_map,
    )
    return [tuple(span) for span in indices[0]]


def mask(offsets, spans):
    out = [0] * len(offsets)
    k = 0
    for t, (start, end) in enumerate(offsets):
        while k < len(spans) and start >= spans[k][1]:
            k += 1
        if k == len(spans):
            break
        if end > spans[k][0]:
            out[t] = 1
    return out


def main():
    # In input order (ids need not be unique): both exports keep it, tokens skipping some rows.
    hf = []
    for path in rows(sys.argv[1], "jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                hf.append(json.loads(line))
    cases = json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
    failures = 0
    # Message boundaries depend on the template, not the tokenizer: rendered once per row.
    bounds = {}
    for case in cases:
        template, special = load_template(case["template"], case.get("name"))
        generation = re.search(r"\{%-?\s*generation\s*-?%\}", template) is not None
        tok = PreTrainedTokenizerFast(tokenizer_file=case["tokenizer"], **special)
        checked = 0
        label = f"{Path(case['template']).name} + {Path(case['tokenizer']).name}"

        def reference(row):
            """transformers' input_ids and mask of an hf row (None when the template raises)."""
            messages, tools = row["messages"], row["tools"]
            try:
                out = tok.apply_chat_template(
                    messages,
                    tools=tools,
                    chat_template=template,
                    tokenize=True,
                    return_dict=True,
                    return_assistant_tokens_mask=generation,
                )
            except Exception:
                return None
            offsets = out.encodings[0].offsets
            untrained = [m.get("training") is False for m in messages if m["role"] == "assistant"]
            if generation and not any(untrained):
                return list(out["input_ids"]), list(out["assistant_masks"])
            key = (case["template"], case.get("name"), id(row))
            if key not in bounds:
                full = tok.apply_chat_template(messages, tools=tools, chat_template=template, tokenize=False)
                bounds[key] = boundary_spans(tok, template, messages, tools, full)
            want = list(out["assistant_masks"]) if generation else mask(offsets, bounds[key])
            # A turn marked not for training (`"training": false`) never trains: its tokens are
            # taken out of the mask (docs/training.md, "Which tokens train"): its generation
            # blocks (one per assistant message, in order), else its rendered boundaries.
            if any(untrained):
                spans = bounds[key]
                if generation:
                    blocks = generation_blocks(tok, template, messages, tools)
                    if len(blocks) == len(untrained):
                        spans = blocks
                dropped = mask(offsets, [b for b, u in zip(spans, untrained) if u])
                want = [0 if d else w for w, d in zip(want, dropped)]
            return list(out["input_ids"]), want

        written = set()
        at = 0
        for path in rows(case["tokens"], "parquet"):
            for r in pq.read_table(path).to_pylist():
                while at < len(hf) and hf[at]["id"] != r["id"]:
                    at += 1
                if at == len(hf):
                    failures += 1
                    print(f"FAIL {label} {r['id']}: not in the hf export, or out of order")
                    break
                written.add(at)
                ref = reference(hf[at])
                at += 1
                if ref is None:
                    failures += 1
                    print(f"FAIL {label} {r['id']}: transformers raises, trajkit wrote the row")
                    continue
                ids, want = ref
                problems = []
                if ids != r["input_ids"]:
                    k = next((i for i, (a, b) in enumerate(zip(ids, r["input_ids"])) if a != b), min(len(ids), len(r["input_ids"])))
                    problems.append(f"input_ids differ at token {k} (transformers {len(ids)} tokens, trajkit {len(r['input_ids'])})")
                elif want != r["assistant_masks"]:
                    k = next(i for i, (a, b) in enumerate(zip(want, r["assistant_masks"])) if a != b)
                    problems.append(f"assistant_masks differ at token {k}")
                labels = [t if m else -100 for t, m in zip(r["input_ids"], r["assistant_masks"])]
                if labels != r["labels"] or r["n_tokens"] != len(r["input_ids"]):
                    problems.append("labels or n_tokens do not follow input_ids and assistant_masks")
                if problems:
                    failures += 1
                    if failures <= 10:
                        print(f"FAIL {label} {r['id']}: {'; '.join(problems)}")
                checked += 1
        # A row trajkit left out must be one transformers cannot render or that trains nothing.
        left_out = 0
        for k, row in enumerate(hf):
            if k in written:
                continue
            left_out += 1
            ref = reference(row)
            if ref is not None and 1 in ref[1]:
                failures += 1
                print(f"FAIL {label} {row['id']}: transformers renders it, trajkit left it out")
        print(f"{label}: {checked} rows checked, {left_out} left out")
        if checked == 0:
            failures += 1
            print(f"FAIL {label}: no rows")
    if failures:
        print(f"{failures} rows differ")
        sys.exit(1)
    if "--rendering-only" not in sys.argv[3:]:
        check_datasets(cases[0]["tokens"])


def check_datasets(directory):
    """The tokens target loads in datasets with the columns TRL and axolotl read, typed as documented."""
    from datasets import load_dataset

    files = [str(p) for p in rows(directory, "parquet")]
    ds = load_dataset("parquet", data_files=files, split="train")
    types = {name: getattr(getattr(f, "feature", f), "dtype", None) for name, f in ds.features.items()}
    want = {
        "id": "string",
        "input_ids": "int32",
        "attention_mask": "int8",
        "assistant_masks": "int8",
        "labels": "int32",
        "n_tokens": "int32",
    }
    if types != want:
        print(f"FAIL datasets features {types}, expected {want}")
        sys.exit(1)
    first = ds[0]
    if len(first["input_ids"]) != first["n_tokens"] or set(first["attention_mask"]) != {1}:
        print("FAIL datasets row does not hold together")
        sys.exit(1)
    print(f"datasets loads tokens: {len(ds)} rows, {sorted(types)}")


if __name__ == "__main__":
    main()
