"""Token view (GammaTune Fig. 2b style): one HTML page per generation showing prompt tokens,
draft tokens the target accepted, and tokens the target produced itself (the correction or
bonus token of each step), in three colours, with per-step details on hover."""
from __future__ import annotations

import html
import sys
from pathlib import Path

from jobs.store.output import record_written

COLOURS = {"prompt": "#d9d9d9", "draft": "#2ca02c", "target": "#ff7f0e"}


def token_classes(accepted: list[int], emitted: list[int]) -> list[tuple[str, int]]:
    """(class, step) per generated token: each step emits its n accepted drafts, then one target token."""
    out = []
    for step, (n, e) in enumerate(zip(accepted, emitted)):
        for j in range(e):
            out.append(("draft" if j < n else "target", step))
    return out


def render_html(prompt_pieces: list[str], pieces: list[str], accepted: list[int], emitted: list[int],
                drafted: list[int], k_max: list[int], title: str) -> str:
    """The token view's HTML page: prompt, accepted-draft and target-produced tokens in three colours."""
    classes = token_classes(accepted, emitted)
    spans = [f'<span class="tok prompt">{html.escape(p)}</span>' for p in prompt_pieces]
    for piece, (cls, step) in zip(pieces, classes):
        tip = f"step {step + 1}: k_max={k_max[step]}, drafted {drafted[step]}, accepted {accepted[step]}"
        spans.append(f'<span class="tok {cls}" title="{html.escape(tip)}">{html.escape(piece)}</span>')
    legend = "".join(f'<span class="tok {k}">{label}</span> ' for k, label in
                     (("prompt", "prompt"), ("draft", "draft, accepted"), ("target", "target-produced")))
    css = "".join(f".{k}{{background:{c};}}" for k, c in COLOURS.items())
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:monospace;font-size:15px;margin:24px;}} .tok{{white-space:pre-wrap;border-radius:3px;
padding:1px 0;line-height:1.9;}} {css} .legend{{margin:12px 0 18px 0;}}</style></head><body>
<h3>{html.escape(title)}</h3><div class="legend">{legend}</div><div class="text">{''.join(spans)}</div></body></html>"""


def write_token_view(path: Path, tokenizer, prompt_ids: list[int], token_ids: list[int], accepted, emitted, drafted,
                     k_max, title: str) -> Path:
    """Write one generation's token view to ``path`` (noted first in a sweep output's manifest)."""
    dec = lambda ids: [tokenizer.decode([t]) for t in ids]
    path.parent.mkdir(parents=True, exist_ok=True)
    record_written(path)
    path.write_text(render_html(dec(prompt_ids), dec(token_ids), list(accepted), list(emitted), list(drafted),
                                list(k_max), title))
    return path


def token_views(pairs, ok, folder: Path, per_pair: int = 2) -> list[Path]:
    """HTML token views of the first generations of adaptive policies (skipped if the tokenizer cannot load)."""
    from actors.loading.models import ModelSpec, load_tokenizer  # heavy: torch

    paths = []
    for p in pairs:
        rows = ok[(ok["pair"] == p.label) & (ok["policy"] != "ar")]
        rows = rows[rows["token_ids"].map(lambda x: x is not None and len(x) > 0)]
        if rows.empty:
            continue
        try:
            tok = load_tokenizer(ModelSpec(p.target, trust_remote_code=p.trust_remote_code))
        except Exception as e:
            print(f"token views for {p.label} skipped: {e}", file=sys.stderr)
            continue
        pick = rows.sort_values(["policy", "gamma"]).drop_duplicates("policy").head(per_pair)
        for _, r in pick.iterrows():
            name = f"{p.label}_{r['policy']}_g{r['gamma']}_q{r['question_id']}_t{r['turn']}".replace("/", "_")
            paths.append(write_token_view(folder / f"{name}.html", tok, list(r["prompt_ids"]), list(r["token_ids"]),
                                          r["accepted"], r["accept_lengths"], r["drafted"], r["k_max"],
                                          f"{p.label} · {r['policy_spec']} · γ0={r['gamma']} · question {r['question_id']} turn {r['turn']}"))
    return paths
