#!/usr/bin/env python3
"""Builds the demo's tiny base model: a random-weight Llama and its tokenizer.

The model is a 2-layer, 64-wide `LlamaForCausalLM` with random weights (fixed seed). Its
tokenizer is a 512-token byte-level BPE trained here on the demo data with the `tokenizers`
library, with a ChatML-like chat template that renders each assistant turn's
`reasoning_content` between `<think>` and `</think>`. Both are written with
`save_pretrained`, so Axolotl loads the directory as a local base model: nothing is
downloaded.

Idempotent: when OUTPUT_DIR already holds a finished model (its `.complete` marker), it
does nothing. The model is built in a temporary sibling directory and renamed into place,
so an interrupted build never leaves a half model behind.

Run it with the Python of the Axolotl venv (it needs torch, transformers and tokenizers):
    <venv>/bin/python scripts/build-tiny-model.py OUTPUT_DIR DATA_JSONL...
"""

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

VOCAB_SIZE = 512
SPECIAL_TOKENS = ["<|endoftext|>", "<|pad|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' and message['reasoning_content'] is defined"
    " and message['reasoning_content'] %}"
    "{{ '<think>\\n' + message['reasoning_content'] + '\\n</think>\\n\\n' }}"
    "{% endif %}"
    "{{ message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def texts(paths):
    """Every message text and reasoning of the JSONL chat files, one string each."""
    for path in paths:
        with open(path, encoding="utf-8") as file:
            for line in file:
                if not line.strip():
                    continue
                for message in json.loads(line)["messages"]:
                    yield message["content"]
                    if message.get("reasoning_content"):
                        yield message["reasoning_content"]


def build(out, data):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts(data), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
        unk_token=None,
        model_max_length=2048,
    )
    tokenizer.chat_template = CHAT_TEMPLATE

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: build-tiny-model.py OUTPUT_DIR DATA_JSONL...")
    out = Path(sys.argv[1])
    data = [Path(p) for p in sys.argv[2:]]
    if (out / ".complete").exists():
        print(f"tiny model already built in {out}")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    try:
        build(work, data)
        work.chmod(0o755)
        (work / ".complete").write_text("built by scripts/build-tiny-model.py\n")
        if out.exists():
            shutil.rmtree(out)
        os.rename(work, out)
    finally:
        if work.exists():
            shutil.rmtree(work)
    print(f"built the tiny model in {out}")


if __name__ == "__main__":
    main()
