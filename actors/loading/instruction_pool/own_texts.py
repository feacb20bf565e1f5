"""Texts the target writes itself, then reads: content the pool's hand-written lists cannot supply in bulk.

The pool's reading, editing and translation families draw their passages from a few dozen hand-written texts, so a
head distilled on tens of thousands of answers meets each passage hundreds of times and learns the target's answers
about *those* passages rather than how the target reads a passage (docs/drafters.md, "Training text and
memorised content", has the measurement). Here the target first writes a short text for each of ``n`` writer
requests (``writer_prompts``: a genre × a topic, sampled by the caller, so every text differs), and each text is
then wrapped in a reading task (``wrap``: summarise, answer a question about it, extract, rewrite, translate, ...).
Both lists are written for specsweep and share no run of six words with the held-out ``sample`` questions
(``tests/test_own_texts.py``); a written text that happens to share one is dropped (``shares_six_words``).
"""
from __future__ import annotations

import random
import re

from .composer import _t
from .knowledge import EVERYDAY_CONCEPTS, HISTORY_EVENTS, STEM_CONCEPTS
from .language import LANGUAGES
from .reading import EVENTS, ORGS
from .slots import AUDIENCES, CITIES, NAMES
from .writing_roleplay import BLOG_TOPICS, TONES

__all__ = ["WRITER_TEMPLATES", "WRAPS", "writer_prompts", "wrap", "clean_text", "shares_six_words", "six_word_runs"]

# ==============================================================================================================
# Writer requests: what the target is asked to write (the caller samples its answer)
# ==============================================================================================================
PRODUCTS = ["a folding electric bicycle", "a solar-powered phone charger", "a cast-iron frying pan", "a wool hiking sock",
            "a noise-cancelling headset", "a reusable lunch box", "a children's microscope", "a smart door lock",
            "a standing desk", "a camping stove", "a language-learning app", "a robot vacuum cleaner"]
PLACES = ["an abandoned lighthouse", "a busy fish market at dawn", "a mountain village in winter", "a night train",
          "a flooded basement", "a rooftop garden", "a desert research station", "an old bookshop",
          "a hospital waiting room", "a ferry in fog", "a school on its last day before summer", "a crowded airport"]
LOCAL_CHANGES = ["new opening hours", "a price increase", "a move to a bigger building", "a recycling scheme",
                 "a free weekend bus service", "a new online booking system", "the closure of a branch",
                 "a volunteer programme", "a staff training day", "a change of management"]
OFFICE_TOPICS = ["a delayed project", "a budget that ran over", "a new hire starting next week", "a broken printer",
                 "the results of a customer survey", "a planned office move", "a change to the holiday rota",
                 "a client complaint", "a successful product launch", "a security update for every laptop"]
EXPERIENCES = ["moved to a new country", "lost a wallet on a train", "ran a first marathon", "started a new job",
               "cooked for twenty guests", "got lost in a forest", "adopted a puppy", "missed the last bus home",
               "met a famous musician by chance", "spent a week without internet", "learned to swim as an adult"]
CHORES = ["repotting a houseplant", "setting up a home wifi router", "making a simple tomato sauce",
          "changing a bicycle tyre", "cleaning a laptop keyboard", "planning a weekly food budget",
          "packing a suitcase for a long trip", "backing up photos from a phone", "painting a small room"]

NARRATORS = ["an old fisherman", "a nervous new teacher", "a ten-year-old girl", "a retired detective", "a stray cat",
             "a tired nurse", "a tourist who speaks no English", "a robot cleaner"]
BUYERS = ["students", "busy parents", "keen hikers", "small offices", "retired people", "first-time buyers"]
CUISINES = ["Vietnamese", "Italian", "Ethiopian", "Peruvian", "vegetarian", "seafood", "Georgian", "Korean"]

WRITER_TEMPLATES = [
    _t("Write a short local news report, about 80 words, on {event} held in {city}.", event=EVENTS, city=CITIES),
    _t("Write a short news item about {org} announcing {change}.", org=ORGS, change=LOCAL_CHANGES),
    _t("Write one encyclopedia-style paragraph about {concept}.", concept=STEM_CONCEPTS + EVERYDAY_CONCEPTS),
    _t("Write a short paragraph for a history textbook about {event}.", event=HISTORY_EVENTS),
    _t("Write a short work email from {name} to the team about {topic}.", name=NAMES, topic=OFFICE_TOPICS),
    _t("Write the opening paragraph of a story set in {place}, told by {narrator}.", place=PLACES,
       narrator=NARRATORS),
    _t("Write a short product description for {product}, aimed at {buyer}.", product=PRODUCTS, buyer=BUYERS),
    _t("Write a short online review of a small {cuisine} restaurant in {city}.", cuisine=CUISINES, city=CITIES),
    _t("Write a short blog paragraph about {topic} in a {tone} tone.", topic=BLOG_TOPICS, tone=TONES),
    _t("Write a diary entry by {name}, who has just {experience}.", name=NAMES, experience=EXPERIENCES),
    _t("Write a few sentences of instructions for {chore}, for {audience}.", chore=CHORES, audience=AUDIENCES),
    _t("Write a short letter to a newspaper complaining about {change} at {org}.", change=LOCAL_CHANGES, org=ORGS),
]


def writer_prompts(n: int, seed: int = 0) -> list[str]:
    """``n`` writer requests, each a uniformly drawn template filled with uniformly drawn slot values (repeats are
    intended: the target's sampled answers make every written text different)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        t = WRITER_TEMPLATES[rng.randrange(len(WRITER_TEMPLATES))]
        out.append(t.render(rng.randrange(t.size)))
    return out


# ==============================================================================================================
# Reading tasks around a written text ({text}; {question}, {audience}, {language} drawn per wrap)
# ==============================================================================================================
QUESTIONS = ["What is the main point of the text?", "Who is mentioned, and what do they do?",
             "What happens first, and what happens last?", "What problem does the text describe?",
             "Which numbers or dates appear, and what do they refer to?", "What might happen next?",
             "How would you describe the writer's tone?"]
WRAPS = [
    ("summarization", "Sum up this text in a single sentence.\n\n{text}"),
    ("summarization", "Give me a two-sentence summary of the following:\n\n{text}"),
    ("summarization", "Write a headline and a one-line summary for this:\n\n{text}"),
    ("summarization", "Shorten this to about a third of its length, keeping the key facts.\n\n{text}"),
    ("rag", "Read the text, then answer the question.\n\nText: {text}\n\nQuestion: {question}"),
    ("rag", "{text}\n\nBased only on the text above: {question}"),
    ("rag", "Here is a document:\n{text}\n\nAnswer briefly. {question}"),
    ("extraction", "Pull out every person, place, date and number mentioned below, as a bulleted list.\n\n{text}"),
    ("extraction", "Turn this text into a short list of its key facts.\n\n{text}"),
    ("text_editing", "Rewrite the following for {audience}:\n\n{text}"),
    ("text_editing", "Make this text more formal and correct any mistakes.\n\n{text}"),
    ("text_editing", "Rewrite this text in the first person.\n\n{text}"),
    ("translation", "Translate the first two sentences of this text into {language}.\n\n{text}"),
    ("writing", "Continue this text with one more paragraph in the same style.\n\n{text}"),
    ("writing", "Write three questions a reader might ask after reading this.\n\n{text}"),
]


def wrap(texts: list[str], seed: int = 0) -> list[tuple[str, str]]:
    """One ``(family, prompt)`` per text: a seeded uniform choice of wrap, question, audience and language."""
    rng = random.Random(seed)
    out = []
    for text in texts:
        family, frame = WRAPS[rng.randrange(len(WRAPS))]
        fill = {"text": text, "question": rng.choice(QUESTIONS), "audience": rng.choice(AUDIENCES),
                "language": rng.choice(LANGUAGES)}
        out.append((family, re.sub(r"\{([a-z]+)\}", lambda m: fill[m.group(1)], frame)))
    return out


# ==============================================================================================================
# Keeping a written text: cut at its last full sentence, long enough, no six-word run shared with held-out text
# ==============================================================================================================
MIN_WORDS = 25
LIST_MARKER = re.compile(r"(?:^|\n)\s*\d+[.)]$")    # "3." opening a list item is no sentence end
MIN_DISTINCT = 0.8      # distinct three-word runs over all of them: below it a small model's text is looping


def clean_text(raw: str) -> str | None:
    """The text cut after its last sentence end (. ! ? and a closing quote or bracket; a numbered list's item marker
    is none), whitespace runs kept as written; ``None`` when fewer than
    :data:`MIN_WORDS` words remain or the text loops (under :data:`MIN_DISTINCT` of its three-word runs distinct)."""
    raw = raw.strip()
    ends = [m.end() for m in re.finditer(r"[.!?][\"')\]\u201d\u2019\u00bb]?(?=\s|$)", raw)
            if not LIST_MARKER.search(raw, 0, m.end())]
    text = raw[:ends[-1]] if ends else ""
    words = text.lower().split()
    if len(words) < MIN_WORDS:
        return None
    runs = [tuple(words[i:i + 3]) for i in range(len(words) - 2)]
    return text if len(set(runs)) >= MIN_DISTINCT * len(runs) else None


def six_word_runs(text: str) -> set[tuple[str, ...]]:
    """Every run of six consecutive lower-cased words (punctuation dropped)."""
    ws = re.findall(r"[a-z0-9']+", text.lower())
    return {tuple(ws[i:i + 6]) for i in range(len(ws) - 5)}


def shares_six_words(text: str, held: set[tuple[str, ...]]) -> bool:
    """Whether ``text`` holds any of the six-word runs ``held`` (as :func:`six_word_runs` spells them)."""
    return bool(six_word_runs(text) & held)
