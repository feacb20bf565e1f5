"""A tiny target/draft pair saved as normal HF folders with a character tokenizer (no downloads)."""
from __future__ import annotations

import string
from pathlib import Path

from tests.models import llama, perturbed, sharpen

CHAT = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"


def char_tokenizer():
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(string.printable) - set("\r\x0b\x0c"))
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{c: i + 3 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    fast.chat_template = CHAT
    return fast


def save_tiny_pair(root: Path, noise: float = 0.3) -> tuple[str, str]:
    tok = char_tokenizer()
    vocab = len(tok)
    target = sharpen(llama(vocab=vocab, layers=2, hidden=32, seed=21))
    draft = perturbed(target, noise, seed=22)
    paths = []
    for name, model in (("target", target), ("draft", draft)):
        path = Path(root) / name
        model.config.eos_token_id = tok.eos_token_id
        model.save_pretrained(path)
        tok.save_pretrained(path)
        paths.append(str(path))
    return paths[0], paths[1]
