"""What loading and planning tell the user: an EAGLE-3 head's output layer counted over its draft vocabulary, the
names a "cannot load model" refusal lists (a draft's drafter kinds included), and transformers' GGUF conversion bar
kept off the console unless --verbose."""
import io
import json

import pytest

from actors.costs.quiet import VERBOSE_ENV, third_party_bars_off
from actors.drafter_kinds import eagle, eagle3, ngram, suffix
from actors.drafter_kinds.registry import KINDS, kind_of
from actors.drafting.eagle3_head import random_eagle3_head
from actors.loading import models
from actors.loading.models import ALIASES, DRAFT_ONLY_NAMES, ModelSpec, resolve_source, valid_names
from actors.loading.tiny_pair import llama
from actors.plan.memory_plan import model_plan
from policies.errors import SpecsweepError


# ---------------------------------------------------------------- bug 1: the EAGLE-3 head's output layer
def test_eagle3_plan_counts_the_output_head_over_the_draft_vocabulary(tmp_path):
    target = llama(vocab=12, layers=5, hidden=32, seed=5)
    h = 32
    small = model_plan(f"eagle3:{random_eagle3_head(target, tmp_path / 's', draft_vocab=5, seed=1)}", "float32",
                       None, 16)
    full = model_plan(f"eagle3:{random_eagle3_head(target, tmp_path / 'f', seed=1)}", "float32", None, 16)
    assert small.params["output head"] == 5 * h and full.params["output head"] == 12 * h   # no draft_vocab: vocab
    assert small.params["embeddings"] == 0                                                 # the target's
    assert full.weight_bytes - small.weight_bytes == (12 - 5) * h * 4                      # float32: the rows only
    assert small.weight_bytes == small.total_params * 4


def test_the_shipped_eagle3_head_plans_its_own_tensors():
    """smollm2-135m-eagle3: draft_vocab_size 8192, lm_head [8192, 576]; the plan counts every weight of its
    safetensors but the d2t/t2d index maps (9 808 128 parameters), not the target's 49 152-token vocabulary."""
    plan = model_plan("smollm2-135m-eagle3", "float32", None, 16)
    config = json.loads((eagle3.eagle3_folder("smollm2-135m-eagle3") / "config.json").read_text())
    assert config["draft_vocab_size"] == 8192 and plan.params["output head"] == 8192 * 576
    assert plan.total_params == 9_808_128


def test_draft_vocab_reads_the_config_and_falls_back_to_the_vocabulary():
    assert eagle3.draft_vocab({"vocab_size": 100, "draft_vocab_size": 7}) == 7
    for bad in (None, 0, -3, True, "7"):
        assert eagle3.draft_vocab({"vocab_size": 100, "draft_vocab_size": bad}) == 100


# ---------------------------------------------------------------- bug 2: the names a refusal lists
def test_draft_only_names_are_the_registry_kinds_names():
    """Every kind but ``model`` is named (a new kind must be added to DRAFT_ONLY_NAMES), every shipped head alias
    is, and each listed name is a draft of a kind other than ``model``."""
    spelled = {n.replace("PATH", "/some/head") for n in DRAFT_ONLY_NAMES}
    assert {kind_of(n).name for n in spelled} == {k.name for k in KINDS} - {"model"}
    assert set(eagle.EAGLE_HEADS) | set(eagle3.EAGLE3_HEADS) | {ngram.NAME, suffix.NAME} <= set(DRAFT_ONLY_NAMES)
    assert f"{eagle.EAGLE_PREFIX}PATH" in DRAFT_ONLY_NAMES and f"{eagle3.EAGLE3_PREFIX}PATH" in DRAFT_ONLY_NAMES


def test_valid_names_by_role():
    target, draft, unknown = valid_names("target"), valid_names("draft"), valid_names()
    assert all(a in s for a in ALIASES for s in (target, draft, unknown))
    assert not any(n in target for n in ("ngram", "suffix", "eagle:PATH", "eagle3:PATH", "smollm2-135m-eagle"))
    assert all(n in draft and n in unknown for n in DRAFT_ONLY_NAMES)
    assert "for a draft also" in unknown and "for a draft" not in draft
    with pytest.raises(SpecsweepError, match="model role 'drafts' is not valid: use one of target, draft or none"):
        ModelSpec("x", role="drafts")


@pytest.fixture
def no_hub(monkeypatch):
    """The hub's address is a port nothing listens on: an uncached hub id is refused at once, with no network."""
    import huggingface_hub.constants as hc

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hc, "ENDPOINT", "https://127.0.0.1:9")


@pytest.mark.parametrize("role", [None, "target", "draft"])
def test_an_unloadable_name_lists_the_valid_names_of_its_role(no_hub, role):
    with pytest.raises(SpecsweepError) as e:
        resolve_source("no-such-model-xyz", role)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("cannot load model 'no-such-model-xyz'")
    assert msg.endswith("; valid: " + valid_names(role))
    assert ("smollm2-135m-eagle3" in msg) == (role != "target")


def test_the_tokenizer_of_a_draft_spec_lists_the_draft_names(no_hub):
    with pytest.raises(SpecsweepError, match=r"valid: .*ngram, suffix, smollm2-135m-eagle, smollm2-135m-eagle3"):
        models.load_tokenizer(ModelSpec("no-such-model-xyz", role="draft"))


# ---------------------------------------------------------------- bug 3: the GGUF conversion bar
class _Stop(Exception):
    """Ends the dequantization after its bar: the test needs nothing after it."""


def _gguf_like_load(*_args, **_kw):
    """What transformers' GGUF loader does first: a plain tqdm bar over the tensors, drawn on stderr."""
    from tqdm.auto import tqdm

    for _ in tqdm(range(3), desc="Converting and de-quantizing GGUF tensors..."):
        pass
    raise _Stop


@pytest.mark.parametrize("verbose", [False, True])
def test_dequantizing_shows_its_line_and_the_bar_only_when_verbose(monkeypatch, tmp_path, capfd, verbose):
    import transformers

    monkeypatch.setenv("SPECSWEEP_CACHE", str(tmp_path))
    monkeypatch.setenv(VERBOSE_ENV, "1" if verbose else "0")
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", _gguf_like_load)
    with pytest.raises(_Stop):
        models._dequantize_smollm2(tmp_path / "out")
    err = capfd.readouterr().err
    assert "specsweep: dequantizing SmolLM2-135M once" in err
    assert ("Converting and de-quantizing" in err) == verbose


def test_bars_are_off_only_inside_the_block(monkeypatch):
    from tqdm.auto import tqdm

    monkeypatch.delenv(VERBOSE_ENV, raising=False)
    with third_party_bars_off():
        inside, chosen = tqdm(range(2), file=io.StringIO()), tqdm(range(2), file=io.StringIO(), disable=False)
    after = tqdm(range(2), file=io.StringIO())
    assert inside.disable and not chosen.disable and not after.disable
    for bar in (inside, chosen, after):
        bar.close()


def test_a_sweeps_preflight_names_the_valid_names_of_the_role(no_hub):
    from jobs.sweep.preflight import _tokenizer

    for where, draft_only_listed in (("cfg.pairs[0].target", False), ("cfg.pairs[0].draft", True)):
        with pytest.raises(SpecsweepError) as e:
            _tokenizer(where, "no-such-model-xyz", False)
        assert ("smollm2-135m-eagle3" in str(e.value)) == draft_only_listed, str(e.value)
