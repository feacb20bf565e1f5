"""Small random-weight causal LMs built from configs (no downloads)."""
from __future__ import annotations

import copy

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM


def llama(vocab: int = 96, layers: int = 2, hidden: int = 32, seed: int = 0):
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
