"""Getting models, tokenizers and prompts ready: files, caches, placement on devices, reduced draft
vocabularies, templates, the tiny test pair."""
