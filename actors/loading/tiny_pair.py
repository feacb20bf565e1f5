"""A tiny random-weight target/draft pair, built from configs in a second and saved as ordinary model folders
with a character tokenizer — no downloads. Tests and benches (``bench/mlflow_overhead.py``,
``bench/sweep_scaling.py``) use it wherever a trained model does not matter.

``sharpen`` scales the output layer so the random model has peaked, deterministic-looking
distributions; ``perturbed`` adds weight noise to make a draft that agrees with its target
only sometimes.
"""
from __future__ import annotations

import copy
import string
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast


def llama(vocab: int = 96, layers: int = 2, hidden: int = 32, seed: int = 0):
    """Rotary positions, grouped-query attention (4 heads, 2 KV heads)."""
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                      tie_word_embeddings=False)
    return LlamaForCausalLM(cfg).eval()


def gpt2(vocab: int = 96, layers: int = 2, hidden: int = 32, seed: int = 0):
    """Learned absolute positions."""
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=vocab, n_embd=hidden, n_layer=layers, n_head=4, n_positions=1024)
    return GPT2LMHeadModel(cfg).eval()


def sharpen(model, scale: float = 4.0):
    """Scale the output head so the random model's distributions are peaked (more realistic acceptance)."""
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(scale)
    return model


def perturbed(model, noise: float, seed: int = 1):
    """A draft: the target's weights plus Gaussian noise (agrees often but not always)."""
    torch.manual_seed(seed)
    draft = copy.deepcopy(model)
    with torch.no_grad():
        for p in draft.parameters():
            p.add_(noise * torch.randn_like(p) * p.std().clamp_min(1e-3))
    return draft.eval()


CHAT = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"


def char_tokenizer():
    """A character-level fast tokenizer over printable ASCII with <unk>, <s>, </s> and a plain chat template."""
    chars = sorted(set(string.printable) - set("\r\x0b\x0c"))
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{c: i + 3 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    fast.chat_template = CHAT
    return fast


def save_tiny_pair(root: Path, noise: float = 0.3) -> tuple[str, str]:
    """A 2-layer Llama target and a perturbed copy as its draft, saved with :func:`char_tokenizer` under ``root``
    as ordinary model folders (``target``, ``draft``); returns their paths."""
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
