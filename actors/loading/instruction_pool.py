"""A chat-instruction pool written for specsweep: millions of distinct requests composed from hand-written
templates and slot lists, spanning the Spec-Bench task families (writing, roleplay, reasoning, maths, maths word
problems, coding, extraction, STEM, humanities, translation, summarization, retrieval-augmented QA and factual QA)
plus code editing and text editing, so that a draft head distilled on the target's answers sees the breadth of
requests it will be evaluated on; every line of text (templates, snippets, passages, foreign sentences) was written
for this module, and none of it shares a run of six words with the held-out ``sample`` questions
(``jobs/data/sample_questions.jsonl``), which ``tests/test_instruction_pool.py`` checks.
"""
from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Callable, Sequence

__all__ = ["FAMILIES", "CAPACITY", "CODE_SNIPPETS", "labelled_prompts", "template_count", "varied_prompts"]

# --------------------------------------------------------------------------------------------------------------
# The composer's building block: a template is a text with ``{slot}`` fields plus one value list per slot. Its
# prompts are numbered 0 .. size-1 (a mixed-radix number over the slot lists), so the pool can draw distinct prompts
# without generating them all. Fields are filled in one regex pass over the template text only: inserted values are
# never scanned again, so code snippets with braces (JavaScript, dict literals) are safe.
# --------------------------------------------------------------------------------------------------------------
_SLOT = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def _sub(text: str, fill: dict) -> str:
    return _SLOT.sub(lambda m: str(fill[m.group(1)]), text)


class _Template:
    __slots__ = ("text", "slots", "derive", "post", "size", "family")

    def __init__(self, text: str, slots: dict, derive: Callable | None = None, post: Callable | None = None):
        self.text, self.slots, self.derive, self.post = text, tuple(slots.items()), derive, post
        self.size = math.prod(len(values) for _, values in self.slots)
        self.family = ""

    def render(self, index: int) -> str:
        fill = {}
        for name, values in self.slots:
            index, i = divmod(index, len(values))
            fill[name] = values[i]
        if self.derive is not None:
            fill.update(self.derive(fill))
        text = _sub(self.text, fill)
        return self.post(text, fill) if self.post is not None else text


def _t(text: str, derive: Callable | None = None, post: Callable | None = None, **slots: Sequence) -> _Template:
    return _Template(text, slots, derive, post)


class _Composed(Sequence):
    """A lazy list of every text the ``frames`` compose, each frame filled only over the slots it uses (so no two
    indices give the same text)."""

    def __init__(self, frames: Sequence[str], **slots: Sequence):
        self.parts = []
        for frame in frames:
            names = list(dict.fromkeys(_SLOT.findall(frame)))
            self.parts.append((frame, [(n, slots[n]) for n in names], math.prod(len(slots[n]) for n in names)))
        self.size = sum(size for *_, size in self.parts)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> str:
        for frame, slots, size in self.parts:
            if index < size:
                fill = {}
                for name, values in slots:
                    index, i = divmod(index, len(values))
                    fill[name] = values[i]
                text = _sub(frame, fill)
                return text[0].upper() + text[1:]
            index -= size
        raise IndexError(index)


def _lc(s: str) -> str:
    return s[0].lower() + s[1:]


def _join(values) -> str:
    return ", ".join(str(v) for v in values)


# --------------------------------------------------------------------------------------------------------------
# Shared slot lists
# --------------------------------------------------------------------------------------------------------------
NAMES = ["Amira", "Bruno", "Chloe", "Diego", "Elena", "Felix", "Hassan", "Ingrid", "Jamal", "Keiko", "Liam", "Maya",
         "Nikhil", "Olivia", "Pablo", "Quinn", "Rosa", "Samir", "Tara", "Umar", "Vera", "Wei", "Yusuf", "Zoe", "Kofi",
         "Lena", "Marco", "Nora", "Oscar", "Priya"]
WOMEN = ["Amira", "Chloe", "Elena", "Ingrid", "Keiko", "Maya", "Olivia", "Rosa", "Tara", "Vera", "Zoe", "Lena", "Nora",
         "Priya"]
AUDIENCES = ["a curious ten-year-old", "a high school student", "a first-year university student", "a retired engineer",
             "a busy parent", "someone with no science background", "a new colleague", "my grandmother",
             "a group of teenagers", "a journalist on a deadline"]
CITIES = ["Nairobi", "Toronto", "Krakow", "Osaka", "Melbourne", "Lyon", "Valparaíso", "Edinburgh", "Marrakesh",
          "Hanoi", "Bergen", "Cusco", "Ghent", "Tbilisi", "Dublin", "Montreal", "Accra", "Kyoto", "Bologna",
          "Vancouver", "Cape Town", "Singapore", "Istanbul", "Reykjavik", "Salzburg", "Auckland", "Chicago", "Mumbai",
          "Seoul", "Buenos Aires"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
DATES = [f"{d} {m}" for m in MONTHS for d in (2, 5, 9, 11, 14, 18, 21, 23, 27)]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
NUMBER_WORDS = ["two", "three", "four", "five"]


def _perms(values, k):
    return list(itertools.permutations(values, k))


PAIRS = _perms(NAMES[:12], 2)
TRIOS = _perms(NAMES[:12], 3)

# ==============================================================================================================
# Writing
# ==============================================================================================================
BLOG_TOPICS = [
    "learning to bake sourdough at home", "commuting by bicycle through the winter",
    "starting a herb garden on a balcony",
    "training for a first half marathon", "living without a car for a month", "adopting an older rescue cat",
    "decluttering a small apartment", "learning a new language after forty", "a rainy week of camping by a lake",
    "building a bookshelf from scrap wood", "hosting a monthly board game night", "switching to a four-day work week",
    "visiting a night market for the first time", "teaching a parent to use a smartphone",
    "volunteering at an animal shelter", "a budget road trip along the coast", "mending your own clothes",
    "keeping a daily journal for a year", "cooking one new recipe every week", "moving to a new city alone",
]
TONES = ["friendly", "formal", "warm but brief", "apologetic", "enthusiastic", "firm but polite"]
WRITING_LENGTHS = ["short", "300-word", "five-paragraph", "light-hearted", "practical", "personal"]
EMAIL_PURPOSES = [
    "to a landlord asking for a broken heater to be repaired",
    "to a teacher explaining that your child will miss school on Friday",
    "to a colleague asking them to review a report before Thursday",
    "to a customer apologizing for a delayed delivery",
    "to a hiring manager following up after an interview",
    "to your team announcing a new project lead",
    "to a hotel asking whether a late check-in is possible",
    "to an old friend you have not spoken to in years",
    "to a client proposing a new time for a call",
    "to a supplier asking for a discount on a large order",
    "to conference organizers declining an invitation to speak",
    "to a professor asking for an extension on an essay",
    "to a gym cancelling a membership",
    "to a volunteer group thanking them for their help at a charity run",
    "to a software vendor reporting a mistake on an invoice",
    "to a coworker congratulating them on a promotion",
    "to the city council asking about a residential parking permit",
    "to a venue asking for a quote for a fiftieth birthday party",
]
POEM_FORMS = ["a haiku", "a sonnet", "a limerick", "a short free-verse poem", "a rhyming poem of three stanzas",
              "a poem in rhyming couplets", "a six-line poem", "a short ballad"]
POEM_SUBJECTS = [
    "the first snowfall of the year", "an old bicycle", "a city at midnight", "a cat watching the rain",
    "autumn leaves", "a crowded train station", "the smell of fresh coffee", "a childhood friend",
    "the ocean at dawn", "a forgotten umbrella", "a garden after a storm", "the last day of summer",
    "a noisy kitchen on a holiday", "a long drive home", "the moon over a quiet field", "an empty classroom",
    "migrating geese", "a grandmother's hands",
]
POEM_MOODS = ["hopeful", "gentle", "playful", "bittersweet", "quiet and reflective", "joyful"]
STORY_PREMISES = [
    "a robot that learns to paint", "two strangers stuck in an elevator",
    "a girl who finds a map inside a library book",
    "a town where it never stops snowing", "a dog that gets lost at a music festival",
    "an inventor whose machine only works on Tuesdays", "a letter delivered fifty years late",
    "a child who befriends a shy dragon", "a time traveller who keeps missing the bus",
    "a chess match between two old rivals", "a night guard at a dinosaur museum",
    "a gardener who grows a talking sunflower", "an astronaut coming home after a year in orbit",
    "a mystery at a village fair", "a key that opens every door except one", "a retired pilot's final flight",
    "twins who swap jobs for a day", "a street musician who plays only one song",
]
STORY_TAILS = ["", " Keep it under 300 words.", " End with a surprising twist.", " Tell it in the first person.",
               " Make it suitable for young children.", " Include at least three lines of dialogue.",
               " Write it in exactly five paragraphs."]
SPEECH_OCCASIONS = [
    "the best man at a wedding", "a student speaking at a high school graduation",
    "a manager at a retirement party for a long-serving colleague", "the captain of a football team before a final",
    "a mayor opening a new public park", "a teacher on the first day of the school year",
    "a volunteer coordinator thanking the helpers", "a scientist accepting an award",
    "a founder celebrating the company's tenth anniversary", "a coach at an end-of-season dinner",
]
SPEECH_TAILS = ["", " It should take about two minutes to read aloud.", " Include one funny moment.",
                " Keep it under 200 words.", " End with a toast."]
PRODUCTS = [
    "a reusable water bottle that keeps drinks cold all day", "a folding electric bicycle",
    "noise-cancelling headphones for children", "a solar-powered phone charger", "a cast-iron frying pan",
    "a smart plant pot that reminds you to water it", "a waterproof hiking backpack",
    "a mechanical keyboard with quiet keys", "a board game about building bridges", "a set of bamboo toothbrushes",
    "an alarm clock that wakes you with light", "a compact espresso machine", "a weighted blanket",
    "a handmade leather notebook",
]
PRODUCT_TAILS = ["", " Keep it under 80 words.", " Aim it at busy parents.",
                 " List three key features as bullet points.",
                 " Make it sound playful.", " Write it for an online shop."]
JOBS = [
    "a junior data analyst position at a logistics company", "a part-time barista job",
    "an education assistant role at a natural history museum", "a graduate software engineering program",
    "a nursing assistant position", "a summer job at a national park",
    "a marketing coordinator role at a small publisher", "a laboratory technician position",
    "an apprenticeship with an electrician", "a customer support role at a travel agency",
    "a teaching assistant position at a primary school",
]
EXPERIENCE = ["two years of experience in retail", "no formal experience but a lot of enthusiasm",
              "a degree in biology", "experience volunteering with young people", "five years in a similar role"]
REVIEW_ITEMS = [
    "a science fiction novel", "a neighbourhood Italian restaurant", "a pair of running shoes", "a budget smartphone",
    "a weekend yoga retreat", "a museum exhibition about old maps", "a family-friendly animated film",
    "a history podcast", "a hotel near the airport", "a cooking class", "a guided city tour by bike",
    "a wireless speaker",
]
STARS = ["one-star", "two-star", "three-star", "four-star", "five-star"]
THANKS = [("my aunt", "a hand-knitted scarf"), ("a colleague", "covering my shifts while I was ill"),
          ("a neighbour", "watering my plants during my holiday"), ("my teacher", "a year of encouragement"),
          ("a friend", "helping me move house"), ("my grandparents", "a birthday cheque"),
          ("a stranger", "returning my lost wallet"), ("my team", "a surprise farewell lunch")]
ANNOUNCEMENTS = ["the opening of a small bookshop", "a charity bake sale at the school",
                 "a new weekly yoga class in the park", "the launch of a podcast about local history",
                 "a change in a café's opening hours", "a free coding workshop for teenagers",
                 "the winners of a photography contest", "a neighbourhood clean-up day"]
POVS = ["a house cat", "a city pigeon", "an old oak tree", "a lost sock", "a library book", "a snowman",
        "a goldfish", "a tired alarm clock"]
DIARY_DAYS = ["a rainy Monday", "the first day of spring", "moving day", "a birthday", "a heatwave afternoon"]
LETTER_THEMES = ["the goals you have this year", "what you are worried about right now", "a lesson you just learned",
                 "the people who matter most to you", "a habit you hope to keep"]
SETTINGS = ["a floating city above the clouds", "a fishing village in the 1920s", "a research station in Antarctica",
            "a busy hospital at night", "a desert town after a sandstorm", "a school for young magicians",
            "a space colony on Mars", "a crowded market in an ancient port"]
CLAIMS = ["every school should teach cooking", "cities should ban cars from their centres on Sundays",
          "teenagers should have a part-time job", "public transport should be free",
          "reading fiction makes people more empathetic", "homework should be optional",
          "everyone should learn basic first aid", "museums should be open late at night"]

WRITING_TAILS = ["", " Keep it under 200 words.", " Use simple, clear language.", " Add a short title.",
                 " Write it for a general audience.", " Make the ending memorable."]
EMAIL_TAILS = ["", " Keep it under 120 words.", " Include a clear subject line.", " End with a specific request."]
CHILDREN = ["a four-year-old", "a six-year-old who loves animals", "an eight-year-old who is afraid of the dark",
            "two sleepy twins"]
GENRES = ["mystery", "science fiction", "historical", "fantasy", "comic", "romance"]

WRITING_TEMPLATES = [
    _t("Write a {length} blog post about {blog}.{tail}", length=WRITING_LENGTHS, blog=BLOG_TOPICS, tail=WRITING_TAILS),
    _t("Could you write a blog post about {blog}? Use a {tone} tone and give it a catchy title.", blog=BLOG_TOPICS,
       tone=TONES),
    _t("Give me three possible titles and an opening paragraph for a blog post about {blog}.", blog=BLOG_TOPICS),
    _t("Write a {tone} email {purpose}.{tail}", tone=TONES, purpose=EMAIL_PURPOSES, tail=EMAIL_TAILS),
    _t("Please draft an email {purpose}. Keep the tone {tone}.", purpose=EMAIL_PURPOSES, tone=TONES),
    _t("Write {form} about {subject}.", form=POEM_FORMS, subject=POEM_SUBJECTS),
    _t("I need {form} about {subject}. Make it {mood}.", form=POEM_FORMS, subject=POEM_SUBJECTS, mood=POEM_MOODS),
    _t("Write a short story about {premise}.{tail}", premise=STORY_PREMISES, tail=STORY_TAILS),
    _t("Tell me a bedtime story about {premise}. It is for {child}.", premise=STORY_PREMISES, child=CHILDREN),
    _t("Write a {tone} speech for {occasion}.{tail}", tone=["short", "heartfelt", "funny", "rousing"],
       occasion=SPEECH_OCCASIONS, tail=SPEECH_TAILS),
    _t("Write a product description for {product}.{tail}", product=PRODUCTS, tail=PRODUCT_TAILS),
    _t("I sell {product}. Write an online listing that highlights three benefits for the buyer.", product=PRODUCTS),
    _t("Write a cover letter for {job}. I have {exp}.", job=JOBS, exp=EXPERIENCE),
    _t("Help me write a short, confident cover letter applying for {job}.", job=JOBS),
    _t("Write a {stars} review of {item}, explaining what worked and what did not.", stars=STARS, item=REVIEW_ITEMS),
    _t("Write a balanced review of {item} in about {words} words.", item=REVIEW_ITEMS, words=[80, 120, 150, 200, 250]),
    _t("Write a thank-you note to {who} for {what}.", derive=lambda f: dict(zip(("who", "what"), f["pair"])),
       pair=THANKS),
    _t("Write a social media post announcing {news}. Keep it under 60 words.", news=ANNOUNCEMENTS),
    _t("Write a diary entry from the point of view of {pov} on {day}.{tail}", pov=POVS, day=DIARY_DAYS,
       tail=WRITING_TAILS),
    _t("Write a short letter to your future self about {theme}.", theme=LETTER_THEMES),
    _t("Write the opening paragraph of a {genre} novel set in {setting}.", genre=GENRES, setting=SETTINGS),
    _t("Write a persuasive paragraph arguing that {claim}.{tail}", claim=CLAIMS, tail=WRITING_TAILS),
    _t("Write two short paragraphs: one arguing that {claim}, and one arguing against it.", claim=CLAIMS),
]

# ==============================================================================================================
# Roleplay
# ==============================================================================================================
ROLES = [
    "a ship's navigator on a sailing voyage in 1780", "a medieval blacksmith", "a museum guard on the night shift",
    "an astronaut on a space station", "a librarian at a very old university", "a zookeeper who looks after penguins",
    "a park ranger in a huge national park", "a taxi driver in a busy city", "a detective in 1920s London",
    "a wizard who runs a small potion shop", "a tour guide at an ancient Roman site", "a personal fitness coach",
    "a travel agent", "a wise old owl in an enchanted forest", "a news reporter at a county fair",
    "a farmer in the year 1850", "a customer service agent for an internet provider",
    "a pirate captain searching for buried treasure", "a hotel concierge in Paris", "a mountain guide",
    "a kindergarten teacher", "a robot butler in the year 2200", "an ancient Greek philosopher",
    "a barista in a busy café", "a deep-sea diver", "a conductor on an overnight train", "a beekeeper",
    "a veterinarian in a small town", "a knight guarding a castle gate", "an airline pilot", "a career counsellor",
    "a gardener at a royal palace", "a court jester", "a marine biologist",
]
ROLE_TASKS = [
    "Describe a typical day at work.", "Tell me about the strangest thing that has happened to you on the job.",
    "Give some advice to a young person who wants to follow in your footsteps.",
    "Describe the tool you rely on most and explain why.", "Describe what you can see from where you are right now.",
    "Welcome a newcomer and explain the three rules they must never break.",
    "Describe the most difficult decision you have ever had to make.",
    "Tell a short story about a mistake you learned from.", "Explain how your work has changed over the years.",
    "Describe your proudest moment.", "Convince me to spend a day helping you.", "Describe the people you work with.",
]
ROLE_QUESTIONS = [
    "What do you enjoy most about your work?", "What is the hardest part of your day?",
    "How did you end up doing this job?", "What is the most important lesson you have learned?",
    "What would you change about your job if you could?", "Can you tell me about a day you will never forget?",
    "What do people usually get wrong about what you do?", "What advice would you give to someone starting out?",
    "What does a perfect day look like for you?", "Are you ever afraid at work?",
    "Which tools could you not live without?", "How do you relax after a long day?",
]
VISITORS = ["curious child", "journalist", "tourist", "new apprentice", "sceptical inspector"]
ROLE_PARTNERS = ["a nervous trainee on their first day", "a lost traveller", "a journalist writing a profile",
                 "a customer with a complaint", "an old friend you have not seen in years"]
TIP_TOPICS = ["staying calm under pressure", "getting up early", "working well with others", "saving money",
              "learning a new skill quickly", "dealing with difficult people"]
MONOLOGUES = ["the best day of your life", "a storm you once survived", "the day everything went wrong",
              "your greatest achievement", "something you wish people understood about your work"]
COMPLAINTS = ["I have been waiting for an hour and nobody has helped me.", "This is not what I asked for.",
              "Why is everything so expensive here?", "I think you made a mistake with my order.",
              "Nobody told me about these rules before I came."]
ROLE_REPLY_LIMITS = ["", " Keep your reply under 80 words.", " Answer in three sentences or fewer.",
                     " Use the kind of language your character would use."]

ROLEPLAY_TEMPLATES = [
    _t("Pretend you are {role}. {task}", role=ROLES, task=ROLE_TASKS),
    _t("You are {role}. {task}{limit}", role=ROLES, task=ROLE_TASKS, limit=ROLE_REPLY_LIMITS),
    _t("Imagine you are {role}. {question}", role=ROLES, question=ROLE_QUESTIONS),
    _t("Act as {role}. Stay in character and answer this: {question}", role=ROLES, question=ROLE_QUESTIONS),
    _t("Play the role of {role}. A {visitor} asks you: \"{question}\" Reply as your character would.", role=ROLES,
       visitor=VISITORS, question=ROLE_QUESTIONS),
    _t("Let's do a role-play. You are {role}, and I am {partner}. Start the conversation.", role=ROLES,
       partner=ROLE_PARTNERS),
    _t("Speaking as {role}, give me three tips for {topic}.", role=ROLES, topic=TIP_TOPICS),
    _t("You are {role}. Deliver a short monologue about {mono}.", role=ROLES, mono=MONOLOGUES),
    _t("Pretend to be {role} writing a letter home. Describe {mono}.", role=ROLES, mono=MONOLOGUES),
    _t("Respond as {role} would if someone said to you: \"{complaint}\"", role=ROLES, complaint=COMPLAINTS),
    _t("Role-play {role}. In under 100 words, introduce yourself to a class of schoolchildren on a trip.", role=ROLES),
    _t("I want to practise interviewing people. You are {role}. Introduce yourself and describe your work in a few "
       "sentences.", role=ROLES),
    _t("Imagine you are {role}, and a {visitor} asks what skills your work needs. What do you say?", role=ROLES,
       visitor=VISITORS),
    _t("Become {role} for a moment. Describe what you can hear, see and smell around you.", role=ROLES),
    _t("Pretend you are {role} giving a short speech at your own retirement party.", role=ROLES),
    _t("You are {role}. Answer in character: {question}{limit}", role=ROLES, question=ROLE_QUESTIONS,
       limit=ROLE_REPLY_LIMITS),
    _t("Stay in character as {role} and explain to {partner} what they should do first.", role=ROLES,
       partner=ROLE_PARTNERS),
    _t("From now on you are {role}. Describe, in the first person, {mono}.", role=ROLES, mono=MONOLOGUES),
]

# ==============================================================================================================
# Reasoning
# ==============================================================================================================
COMPARATIVES = [("older", "younger", "oldest"), ("heavier", "lighter", "heaviest"), ("faster", "slower", "fastest"),
                ("richer", "poorer", "richest"), ("stronger", "weaker", "strongest")]
REASON_TAILS = ["", " Explain your answer.", " Show how you worked it out.", " Give a short justification.",
                " Answer in one sentence, then explain."]
NONSENSE = ["zorbs", "plinks", "tovs", "grems", "wumps", "flarns", "quibs", "dreels"]
PETS = ["cat", "dog", "parrot", "rabbit", "goldfish"]
SNAIL_STEPS = [(u, d) for u in range(3, 8) for d in range(2, u)]


def _trio(f: dict) -> dict:
    return dict(zip("abc", f["trio"]))


def _sequence(start: int, step: int, terms: int = 4, ratio: bool = False) -> str:
    return _join(start * step ** i if ratio else start + step * i for i in range(terms))


REASONING_TEMPLATES = [
    _t("{a} is {more} than {b}, and {c} is {less} than {b}. Who is the {most} of the three?{tail}",
       derive=lambda f: _trio(f) | dict(zip(("more", "less", "most"), f["comp"])), trio=TRIOS, comp=COMPARATIVES,
       tail=REASON_TAILS),
    _t("In a race, {a} finished ahead of {b}, {c} finished behind {d}, and {d} finished behind {b}. List the four "
       "runners from first to last.", derive=lambda f: dict(zip("abcd", f["quad"])), quad=_perms(NAMES[:10], 4)),
    _t("Today is {day}. What day of the week will it be {k} days from now?{tail}", day=WEEKDAYS, k=range(8, 120),
       tail=REASON_TAILS),
    _t("If it was {day} {k} days ago, what day is it today?{tail}", day=WEEKDAYS, k=range(9, 80), tail=REASON_TAILS),
    _t("At a party, each of the {k} guests shakes hands with every other guest exactly once. How many handshakes are "
       "there?{tail}", k=range(4, 61), tail=REASON_TAILS),
    _t("What number comes next in the sequence {seq}?{tail}", derive=lambda f: dict(seq=_sequence(f["s"], f["d"])),
       s=range(1, 31), d=range(2, 16), tail=REASON_TAILS),
    _t("Find the pattern and give the next two numbers: {seq}, ...",
       derive=lambda f: dict(seq=_sequence(f["s"], f["r"], ratio=True)), s=range(1, 8), r=range(2, 6)),
    _t("{g} has {k} sisters, and each of her sisters has {j} brothers. How many children are in the family?{tail}",
       g=WOMEN, k=range(2, 6), j=range(2, 6), tail=REASON_TAILS),
    _t("On an island, knights always tell the truth and knaves always lie. {a} says, \"{b} is a knave.\" {b} says, "
       "\"{a} and I are both knights.\" Which of them is a knight and which is a knave?{tail}",
       derive=lambda f: dict(zip("ab", f["pair"])), pair=PAIRS, tail=REASON_TAILS),
    _t("All {x} are {y}, and some {y} are {z}. Does it follow that some {x} are {z}?{tail}",
       derive=lambda f: dict(zip("xyz", f["words"])), words=_perms(NONSENSE, 3), tail=REASON_TAILS),
    _t("You have {k} coins that look identical, but one is slightly heavier than the others. Using a balance scale, "
       "what is the smallest number of weighings that guarantees you can find the heavy coin?{tail}", k=range(3, 82),
       tail=REASON_TAILS),
    _t("A drawer contains {r} red socks and {b} blue socks, all mixed up. In the dark, how many socks must you take "
       "out to be sure of getting two of the same colour? How many to be sure of getting two blue ones?",
       r=range(2, 21), b=range(2, 21)),
    _t("{a} is {k} years older than {b}, and together their ages add up to {s}. How old is each of them?{tail}",
       derive=lambda f: dict(zip("ab", f["pair"]), s=2 * f["young"] + f["k"]), pair=PAIRS, k=range(2, 16),
       young=range(4, 30), tail=REASON_TAILS),
    _t("{a}, {b} and {c} sit side by side on a bench. {a} is not at either end, and {b} sits to the right of {a}. "
       "Who sits at the left end?{tail}", derive=_trio, trio=TRIOS, tail=REASON_TAILS),
    _t("If {k} machines take {k} minutes to make {k} widgets, how long would {j} machines take to make {j} "
       "widgets?{tail}", k=range(2, 21), j=range(25, 501, 25), tail=REASON_TAILS),
    _t("{a} is standing in a queue. There are {k} people in front of {a} and {j} people behind. How many people are "
       "in the queue?{tail}", a=NAMES, k=range(2, 30), j=range(2, 30), tail=REASON_TAILS),
    _t("A snail is at the bottom of a well that is {h} metres deep. Each day it climbs {u} metres, and each night it "
       "slips back {d} metres. On which day does it reach the top?{tail}",
       derive=lambda f: dict(zip("ud", f["step"])), step=SNAIL_STEPS, h=range(8, 31), tail=REASON_TAILS),
    _t("{a}, {b} and {c} each own exactly one pet: a {p1}, a {p2} or a {p3}. {a} does not own the {p2}. {b} owns the "
       "{p3}. Who owns the {p1}, and who owns the {p2}?",
       derive=lambda f: dict(zip("abc", f["trio"])) | dict(zip(("p1", "p2", "p3"), f["pets"])),
       trio=_perms(NAMES[12:20], 3), pets=_perms(PETS, 3)),
    _t("A clock gains {g} minutes every hour. It is set to the correct time at noon. What time will it show when the "
       "correct time is {h} pm?{tail}", g=range(2, 11), h=range(1, 12), tail=REASON_TAILS),
    _t("I am thinking of a number. If I double it and then add {a}, I get {r}. What is my number?{tail}",
       derive=lambda f: dict(r=2 * f["x"] + f["a"]), x=range(2, 60), a=range(1, 21), tail=REASON_TAILS),
    _t("I am thinking of a number. If I multiply it by three and subtract {a}, the result is {r}. What number am I "
       "thinking of?{tail}", derive=lambda f: dict(r=3 * f["x"] - f["a"]), x=range(5, 50), a=range(1, 15),
       tail=REASON_TAILS),
]

# ==============================================================================================================
# Maths
# ==============================================================================================================
UNIT_PAIRS = [("kilometres", "miles"), ("miles", "kilometres"), ("kilograms", "pounds"), ("pounds", "kilograms"),
              ("litres", "US gallons"), ("inches", "centimetres"), ("feet", "metres"), ("metres", "feet"),
              ("ounces", "grams"), ("hours", "seconds"), ("days", "minutes"), ("square metres", "square feet")]
UNIT_VALUES = [2, 3, 5, 7, 8, 10, 12, 15, 20, 25, 30, 42, 50, 65, 80, 100]
PERCENTS = [5, 10, 12, 15, 20, 25, 30, 40, 45, 60, 75, 80, 120, 150]
TRIPLES = [(3, 4), (5, 12), (8, 15), (7, 24), (20, 21)]
COPRIME = [(p, q) for q in range(2, 13) for p in range(1, q) if math.gcd(p, q) == 1]
ROOT_PAIRS = [(r, s) for r, s in itertools.combinations_with_replacement([*range(-9, 0), *range(1, 10)], 2)]
_DATA_RNG = random.Random(20240611)
DATA_SETS = sorted({tuple(_DATA_RNG.randint(2, 60) for _ in range(_DATA_RNG.choice((5, 6, 7)))) for _ in range(400)})
DECIMALS = sorted({round(_DATA_RNG.uniform(1, 999), 3) for _ in range(300)})
PLACES = ["the nearest whole number", "one decimal place", "two decimal places", "the nearest ten",
          "the nearest hundred"]
DENOMINATORS = [2, 4, 5, 8, 10, 16, 20, 25, 40, 50]


def _quadratic(f: dict) -> dict:
    r, s = f["roots"]
    b, c = -(r + s), r * s
    text = "x^2"
    if b:
        text += f" {'+' if b > 0 else '-'} {abs(b) if abs(b) != 1 else ''}x"
    if c:
        text += f" {'+' if c > 0 else '-'} {abs(c)}"
    return dict(poly=text)


MATH_TEMPLATES = [
    _t("What is {x} + {y}?", x=range(113, 990, 17), y=range(27, 900, 23)),
    _t("Calculate {x} × {y} and show how you did it.", x=range(12, 100), y=range(3, 30)),
    _t("What is {x} minus {y}?", x=range(200, 1000, 13), y=range(17, 200, 11)),
    _t("Divide {n} by {d}.", derive=lambda f: dict(n=f["d"] * f["q"]), d=range(3, 26), q=range(11, 100)),
    _t("Solve for x: {a}x + {b} = {c}.", derive=lambda f: dict(c=f["a"] * f["x"] + f["b"]), a=range(2, 10),
       x=range(-10, 21), b=range(1, 26)),
    _t("Find x if {a}x - {b} = {c}.", derive=lambda f: dict(c=f["a"] * f["x"] - f["b"]), a=range(2, 10),
       x=range(1, 25), b=[2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 18, 20]),
    _t("Solve the system of equations x + y = {s} and x - y = {d}.",
       derive=lambda f: dict(s=f["x"] + f["y"], d=f["x"] - f["y"]), x=range(1, 41), y=range(1, 41)),
    _t("Find the area and the circumference of a circle with a radius of {r} {unit}.", r=range(1, 41),
       unit=["cm", "m", "inches"]),
    _t("A round table has a diameter of {d} cm. What is the area of its top?", d=range(40, 201, 5)),
    _t("A triangle has a base of {b} cm and a height of {h} cm. What is its area?", b=range(3, 41), h=range(2, 31)),
    _t("The two shorter sides of a right triangle are {a} and {b} units long. How long is the longest side?",
       derive=lambda f: dict(a=f["t"][0] * f["k"], b=f["t"][1] * f["k"]), t=TRIPLES, k=range(1, 13)),
    _t("What is {p}% of {x}?", p=PERCENTS, x=range(20, 1001, 20)),
    _t("A price goes up from {old} dollars to {new} dollars. By what percentage did it rise?",
       derive=lambda f: dict(new=f["old"] * (100 + f["pct"]) // 100), old=range(20, 501, 20),
       pct=[5, 10, 15, 20, 25, 30, 40, 50]),
    _t("Convert {v} {u1} to {u2}.", derive=lambda f: dict(zip(("u1", "u2"), f["units"])), v=UNIT_VALUES,
       units=UNIT_PAIRS),
    _t("How many {u2} are there in {v} {u1}? Show the conversion.",
       derive=lambda f: dict(zip(("u1", "u2"), f["units"])),
       v=UNIT_VALUES, units=UNIT_PAIRS),
    _t("What is {c} degrees Celsius in degrees Fahrenheit?", c=range(-20, 46)),
    _t("Convert {t} °F to Celsius, rounding to one decimal place.", t=range(0, 111, 2)),
    _t("Simplify the fraction {n}/{d}.", derive=lambda f: dict(n=f["pq"][0] * f["g"], d=f["pq"][1] * f["g"]),
       pq=COPRIME, g=range(2, 13)),
    _t("What is the least common multiple of {a} and {b}?", derive=lambda f: dict(zip("ab", f["ab"])),
       ab=list(itertools.combinations(range(2, 31), 2))),
    _t("Use the Euclidean algorithm to find the greatest common divisor of {a} and {b}.",
       derive=lambda f: dict(zip("ab", f["ab"])), ab=list(itertools.combinations(range(12, 301, 6), 2))),
    _t("Is {n} a prime number? Explain how you can tell.", n=range(51, 1000, 2)),
    _t("Find the mean, the median and the range of these numbers: {nums}.",
       derive=lambda f: dict(nums=_join(f["data"])),
       data=DATA_SETS),
    _t("Factor the quadratic {poly}.", derive=_quadratic, roots=ROOT_PAIRS),
    _t("Expand and simplify (x + {a})(x - {b}).", a=range(1, 13), b=range(1, 13)),
    _t("What is the volume of a box that measures {l} cm by {w} cm by {h} cm?", l=range(5, 31), w=range(3, 21),
       h=range(2, 16)),
    _t("Evaluate {a} to the power of {b}.", a=range(2, 13), b=range(2, 7)),
    _t("Estimate the square root of {n} to one decimal place without a calculator.",
       n=[k for k in range(2, 301) if math.isqrt(k) ** 2 != k]),
    _t("Write {n}/{d} as a decimal and as a percentage.", derive=lambda f: dict(zip("nd", f["nd"])),
       nd=[(n, d) for d in DENOMINATORS for n in range(1, d)]),
    _t("What is the probability of rolling a total of {t} with two fair six-sided dice?", t=range(2, 13)),
    _t("If you roll two fair dice, what is the probability that the total is at least {t}?", t=range(3, 13)),
    _t("Round {x} to {place}.", x=DECIMALS, place=PLACES),
]

# ==============================================================================================================
# Maths word problems, worked step by step
# ==============================================================================================================
STEPS = ["Show your working.", "Explain each step.", "Work through it step by step.",
         "Please show every step of the calculation.", "Walk me through the solution one step at a time.",
         "Lay out your reasoning before giving the final answer.", "Solve it step by step and check your answer."]
SHOP_ITEMS = ["pencils", "apples", "notepads", "postcards", "tennis balls", "coffee mugs", "plant pots",
              "bus tickets", "cupcakes", "paintbrushes"]
FRACTIONS = [("One third", 3), ("Two fifths", 5), ("Three eighths", 8), ("One quarter", 4), ("Five sixths", 6),
             ("Seven tenths", 10)]
CLUBS = [("school choir", "are altos"), ("hiking club", "are beginners"), ("chess club", "are under twelve"),
         ("swimming team", "train in the mornings"), ("book club", "prefer mysteries")]
GOALS = [("a new bike", 240), ("a guitar", 180), ("a tablet", 320), ("a school trip", 150),
         ("a pair of hiking boots", 120), ("a telescope", 280)]
GARMENTS = ["jacket", "pair of trainers", "winter coat", "backpack", "dress", "suitcase"]
FILM_STARTS = ["6:15 pm", "6:40 pm", "7:05 pm", "7:30 pm", "8:10 pm", "8:45 pm"]
VENUES = ["zoo", "science museum", "aquarium", "theme park", "theatre"]


def _change(f: dict) -> dict:
    cost = f["k"] * f["p"]
    return dict(bill=next(b for b in (20, 50, 100) if b > cost))


def _test_average(f: dict) -> dict:
    (s1, s2, s3), avg = f["scores"]
    return dict(s1=s1, s2=s2, s3=s3, avg=avg)


TEST_SCORES = [(s, avg) for s in itertools.product(range(55, 100, 6), repeat=3) for avg in (75, 80, 85)
               if 50 <= 4 * avg - sum(s) <= 100]
RATIOS = [(a, b) for a in range(1, 6) for b in range(1, 6) if a != b and math.gcd(a, b) == 1]

WORD_PROBLEM_TEMPLATES = [
    _t("{name} buys {k} {items} that cost {p} dollars each and gives the cashier {bill} dollars. How much change is "
       "due? {step}", derive=_change, name=NAMES, items=SHOP_ITEMS, k=range(2, 10), p=range(2, 10), step=STEPS),
    _t("A cyclist rides at {v1} km/h for {t1} hours and then at {v2} km/h for {t2} hours. How far does she travel in "
       "total, and what is her average speed? {step}", v1=range(12, 31, 2), t1=range(2, 6), v2=range(10, 29, 3),
       t2=range(2, 6), step=STEPS),
    _t("A {club} has {n} members. {frac} of them {trait}. How many members do not? {step}",
       derive=lambda f: dict(club=f["c"][0], trait=f["c"][1], frac=f["fr"][0], n=f["fr"][1] * f["m"]), c=CLUBS,
       fr=FRACTIONS, m=range(3, 13), step=STEPS),
    _t("{a} can paint a fence in {x} hours, and {b} can paint the same fence in {y} hours. How long will it take "
       "them working together? {step}", derive=lambda f: dict(zip("ab", f["pair"])), pair=PAIRS, x=range(2, 9),
       y=range(2, 9), step=STEPS),
    _t("{name} is saving for {thing}, which costs {goal} dollars. She already has {have} dollars and saves {s} "
       "dollars a week. How many weeks will it take? {step}",
       derive=lambda f: dict(thing=f["g"][0], goal=f["g"][1]), name=WOMEN, g=GOALS, have=range(10, 70, 10),
       s=[5, 8, 10, 12, 15, 20], step=STEPS),
    _t("A {garment} costs {p} dollars. It is reduced by {d1}% in a sale, and at the till a further {d2}% is taken off "
       "the sale price. What is the final price? {step}", garment=GARMENTS, p=range(40, 201, 20),
       d1=[10, 20, 25, 30, 40], d2=[5, 10, 15, 20], step=STEPS),
    _t("A recipe for {s1} people uses {g} grams of flour. How much flour is needed for {s2} people? {step}",
       s1=[2, 4, 6, 8], g=range(150, 601, 50), s2=[3, 5, 10, 12, 15, 20], step=STEPS),
    _t("A water tank holds {cap} litres. A pipe fills it at {r} litres per minute, but a leak lets out {l} litres "
       "per minute. Starting from empty, how long does it take to fill the tank? {step}",
       derive=lambda f: dict(cap=(f["r"] - f["l"]) * f["t"]), r=range(8, 21), l=range(2, 7), t=range(20, 121, 10),
       step=STEPS),
    _t("{name} puts {p} dollars into a savings account that pays {r}% simple interest per year. How much interest "
       "does the account earn in {y} years? {step}", name=NAMES, p=range(500, 5001, 500), r=[2, 3, 4, 5, 6],
       y=range(2, 11), step=STEPS),
    _t("You invest {p} dollars at {r}% interest, compounded once a year. How much will you have after {y} years? "
       "{step}", p=range(1000, 10001, 1000), r=[2, 3, 4, 5, 6, 8], y=range(2, 6), step=STEPS),
    _t("A room is {l} metres long and {w} metres wide. Floor tiles come in boxes that cover {c} square metres each. "
       "How many boxes are needed to tile the whole floor? {step}", l=range(3, 13), w=range(2, 9),
       c=[1.5, 2, 2.5, 3], step=STEPS),
    _t("A car uses {f} litres of fuel per 100 km, and fuel costs {price} dollars per litre. How much does the fuel "
       "for a {d} km trip cost? {step}", f=[5, 6, 7, 8, 9], price=["1.20", "1.50", "1.80", "2.10"],
       d=range(150, 901, 50),
       step=STEPS),
    _t("A film starts at {start} and lasts {dur} minutes. Getting home afterwards takes {t} minutes. At what time "
       "does {name} get home? {step}", start=FILM_STARTS, dur=range(95, 181, 5), t=[15, 20, 25, 35, 40], name=NAMES,
       step=STEPS),
    _t("{a} and {b} share {total} dollars in the ratio {r1}:{r2}. How much does each of them get? {step}",
       derive=lambda f: dict(zip("ab", f["pair"]), r1=f["ratio"][0], r2=f["ratio"][1],
                            total=sum(f["ratio"]) * f["m"]), pair=PAIRS, ratio=RATIOS, m=[10, 20, 25, 50], step=STEPS),
    _t("Adult tickets for the {venue} cost {pa} dollars and child tickets cost {pc} dollars. How much does a group "
       "of {na} adults and {nc} children pay in total? {step}", venue=VENUES, pa=range(12, 31, 2), pc=range(5, 13),
       na=range(2, 7), nc=range(2, 8), step=STEPS),
    _t("{name} earns {w} dollars an hour. Hours above 40 in a week are paid at one and a half times the normal rate. "
       "How much does {name} earn in a week of {h} hours? {step}", name=NAMES, w=range(12, 31, 2), h=range(41, 56),
       step=STEPS),
    _t("A rectangular garden is {l} m long and {w} m wide. Fence posts are placed every {s} m around the edge, "
       "including one at each corner. How many posts are needed? {step}",
       derive=lambda f: dict(l=f["s"] * f["a"], w=f["s"] * f["b"]), s=[2, 3, 4, 5], a=range(3, 13), b=range(2, 9),
       step=STEPS),
    _t("{name} scored {s1}, {s2} and {s3} on three tests. What score is needed on the fourth test for an average of "
       "{avg}? {step}", derive=_test_average, name=NAMES[:10], scores=TEST_SCORES, step=STEPS),
    _t("A book has {p} pages. {name} reads {k} pages on each weekday and {j} pages on each day of the weekend. "
       "Starting on a Monday, on which day will the book be finished? {step}", p=range(180, 481, 30), name=NAMES,
       k=[10, 15, 20, 25], j=[30, 40, 50], step=STEPS),
    _t("Which is the better deal: {g1} grams of rice for {p1} dollars, or {g2} grams for {p2} dollars? {step}",
       g1=[500, 750, 1000], p1=["1.20", "1.50", "1.90", "2.40"], g2=[2000, 2500, 5000],
       p2=["3.80", "4.50", "6.20", "9.50", "11.00"],
       step=STEPS),
]

# ==============================================================================================================
# Coding
# ==============================================================================================================
FUNCTION_TASKS = [
    "checks whether a number is prime", "finds the second largest value in a list",
    "removes duplicates from a list while keeping the original order", "converts Celsius to Fahrenheit",
    "counts how often each character appears in a string", "flattens a list of lists",
    "checks whether two strings are anagrams of each other", "computes the factorial of a number recursively",
    "finds the longest word in a sentence", "capitalizes the first letter of every word in a sentence",
    "computes the greatest common divisor of two integers", "merges two dictionaries, adding the values of shared keys",
    "rotates a list by k positions", "computes the running total of a list of numbers",
    "splits a list into chunks of a given size", "checks whether a string looks like a valid email address",
    "converts a Roman numeral to an integer", "converts an integer to its binary representation by hand",
    "lists all prime numbers below a given limit", "transposes a matrix stored as a list of rows",
    "finds the most common element in a list", "checks whether the brackets in a string are balanced",
    "reverses the order of the words in a sentence", "computes the median of a list of numbers",
    "computes the dot product of two vectors", "groups a list of words by their first letter",
    "finds all pairs of numbers in a list that add up to a target", "builds the nth row of Pascal's triangle",
    "checks whether a year is a leap year", "compresses a string such as 'aaabcc' into 'a3b1c2'",
    "converts a camelCase name to snake_case", "performs a binary search on a sorted list",
    "sorts a list of records by a given field", "finds the items that two lists have in common",
    "computes a moving average with a window of size k", "generates a random password of a given length",
    "checks whether a number is a perfect square", "adds up the digits of an integer",
    "counts the days between two dates", "parses a string like 'a=1;b=2' into key-value pairs",
    "finds the first character in a string that does not repeat", "lists every Fibonacci number below a limit",
    "converts a number of seconds into hours, minutes and seconds",
    "masks all but the last four digits of a card number",
    "checks whether a list is sorted in ascending order", "interleaves the items of two lists",
    "counts the vowels and the consonants in a string separately", "strips all punctuation from a string",
    "calculates compound interest for a number of years", "converts a decimal number to a fraction in lowest terms",
]
PROGRAMMING_LANGUAGES = ["Python", "JavaScript", "TypeScript", "Go", "Rust", "Java"]
JS_TASKS = [
    "debounces another function", "fetches JSON from a URL and handles network errors", "deep-clones a plain object",
    "formats a number as a price in euros", "toggles a CSS class when a button is clicked",
    "throttles another function",
    "reads the query parameters of the current page URL", "shuffles an array with the Fisher-Yates algorithm",
    "groups an array of objects by one of their properties", "counts down from ten in the console, once per second",
    "validates a simple sign-up form before it is submitted", "copies a piece of text to the clipboard",
]
SQL_TASKS = [
    "lists each department with its average salary, given an employees table",
    "finds the employees who earn more than their managers", "counts the orders placed in each month of 2023",
    "removes duplicate email addresses from a subscribers table", "returns the products that have never been ordered",
    "finds the second highest salary in an employees table", "shows total sales per region, highest first",
    "lists the students who are enrolled in more than three courses",
    "finds the users who signed up but never logged in", "computes a running total of daily revenue",
    "returns the three best-selling products in each category", "finds all bookings that overlap a given date range",
]
SHELL_TASKS = [
    "finds every .log file larger than 10 MB under the current directory",
    "counts the lines in all Python files of a project", "renames every .jpeg file in a folder to .jpg",
    "prints the ten most common words in a text file",
    "backs up a folder into a tar.gz archive named with today's date",
    "shows which process is listening on port 8080", "deletes files older than 30 days from a cache folder",
    "replaces one word with another in every .txt file of a directory",
    "checks whether a website answers with HTTP status 200", "prints a warning when the disk is more than 90% full",
]
CODE_CONCEPTS = [
    "recursion", "closures", "generators", "decorators", "exception handling", "object-oriented inheritance",
    "dependency injection", "big-O notation", "hash tables", "memoization", "the call stack", "database indexes",
    "regular expressions", "unit testing", "lambda functions", "immutability", "linked lists", "stacks and queues",
    "dynamic programming", "variable scope", "polymorphism", "binary trees", "event-driven programming",
    "string formatting", "iterators", "higher-order functions", "pure functions", "caching",
]
CODE_PAIRS = [
    "a list and a tuple in Python", "let, const and var in JavaScript", "an abstract class and an interface",
    "a process and a thread", "the WHERE and HAVING clauses in SQL", "a shallow copy and a deep copy",
    "compiled and interpreted languages", "a stack and a queue", "GET and POST requests", "INNER JOIN and LEFT JOIN",
    "null and undefined in JavaScript", "passing by value and passing by reference",
    "a class method and a static method in Python", "synchronous and asynchronous code",
    "unit tests and integration tests", "a set and a list in Python", "== and === in JavaScript",
]
PY_CLASSES = ["a to-do list", "a library book that can be borrowed and returned", "a shopping cart", "a 2D point",
              "a deck of playing cards", "a simple stopwatch", "a bank account with an overdraft limit",
              "a queue built from two stacks", "a small matrix with addition and multiplication",
              "a temperature sensor that keeps its last ten readings"]
PY_SCRIPTS = [
    "reads a CSV file of expenses and prints the total for each category",
    "renames every file in a folder to lowercase",
    "counts word frequencies in a text file and prints the top twenty",
    "asks for a birth date and prints the age in days",
    "plays a number-guessing game in the terminal", "converts a JSON file into a CSV file",
    "prints a multiplication table up to twelve",
    "simulates rolling two dice ten thousand times and prints the results",
    "finds duplicate files in a folder by comparing their hashes", "reads a log file and counts the errors per hour",
]
PY_EXPRESSIONS = [
    "[x * 2 for x in range(5) if x % 2]", "'-'.join(sorted('banana'))", "sum(range(1, 11))", "len(set('mississippi'))",
    "list(zip('abc', [1, 2, 3]))", "3 * 'ab'", "list(range(10))[::3]", "bool([])", "'Hello'.center(11, '*')",
    "round(2.675, 2)", "divmod(17, 5)", "list(map(str.upper, ['a', 'b']))", "sorted([3, 1, 2], reverse=True)",
    "'python'[1:4]", "[1, 2, 3] + [4]", "'a,b,,c'.split(',')", "max('apple', 'pear', key=len)", "0.1 + 0.2 == 0.3",
]
REGEX_TARGETS = ["a US ZIP code", "a date in the format YYYY-MM-DD", "a hexadecimal colour code such as #1a2b3c",
                 "a 24-hour time such as 23:59", "an IPv4 address", "words that start with a capital letter",
                 "a simple email address", "a phone number written like 555-123-4567"]
PY_HOWTOS = ["read a file line by line", "sort a dictionary by its values", "measure how long some code takes to run",
             "parse command-line arguments", "send an HTTP request", "work with dates and time zones",
             "write data to a JSON file", "run two functions at the same time", "create a virtual environment",
             "handle a missing dictionary key gracefully", "format a float with two decimal places",
             "remove items from a list while looping over it"]
RECURSIVE_TASKS = ["computes n factorial", "adds up the digits of a number", "reverses a string",
                   "computes the nth Fibonacci number", "computes x to the power n", "flattens a nested list",
                   "finds the largest number in a list", "counts the occurrences of a letter in a word"]
CODE_TAILS = ["", " Include a short docstring.", " Add two example calls.", " Explain how it works.",
              " Handle invalid input sensibly.", " Keep it short and readable."]

CODING_TEMPLATES = [
    _t("Write a Python function that {task}.{tail}", task=FUNCTION_TASKS, tail=CODE_TAILS),
    _t("Write a {lang} function that {task}.{tail}", lang=PROGRAMMING_LANGUAGES[1:], task=FUNCTION_TASKS,
       tail=CODE_TAILS),
    _t("Could you write a {lang} function that {task}? Include a couple of test cases.", lang=PROGRAMMING_LANGUAGES,
       task=FUNCTION_TASKS),
    _t("Write a function in {lang} that {task}, and state its time complexity.", lang=PROGRAMMING_LANGUAGES,
       task=FUNCTION_TASKS),
    _t("I need a JavaScript helper that {task}. Please explain how it works.", task=JS_TASKS),
    _t("Write a SQL query that {task}.{tail}", task=SQL_TASKS, tail=CODE_TAILS[3:]),
    _t("Using standard SQL, write a query that {task}. Explain each clause.", task=SQL_TASKS),
    _t("Write a shell command or a short Bash script that {task}.{tail}", task=SHELL_TASKS, tail=CODE_TAILS[3:]),
    _t("Give me a one-line shell command that {task}, and explain each part of it.", task=SHELL_TASKS),
    _t("Explain {concept} and give a short example in {lang}.", concept=CODE_CONCEPTS, lang=PROGRAMMING_LANGUAGES),
    _t("Explain {concept} to a beginner programmer, using an analogy and a small code example.",
       concept=CODE_CONCEPTS),
    _t("What is the difference between {pair}? Show a short code example of each.", pair=CODE_PAIRS),
    _t("Write pytest unit tests for a Python function that {task}.{tail}", task=FUNCTION_TASKS,
       tail=["", " Cover at least one edge case.", " Use parametrized tests."]),
    _t("Write a Python class that represents {cls}, with sensible methods and a short usage example.{tail}",
       cls=PY_CLASSES, tail=CODE_TAILS[3:]),
    _t("Write a Python script that {script}.{tail}", script=PY_SCRIPTS, tail=CODE_TAILS),
    _t("What does this Python expression evaluate to, and why? {expr}", expr=PY_EXPRESSIONS),
    _t("Write a regular expression that matches {target}, and show how to use it in Python.", target=REGEX_TARGETS),
    _t("How do I {howto} in Python? Show an example.", howto=PY_HOWTOS),
    _t("Write a recursive and an iterative version of a Python function that {task}, and compare the two.",
       task=RECURSIVE_TASKS),
    _t("Give a {lang} example that shows {concept}, with a comment on each line.", lang=PROGRAMMING_LANGUAGES,
       concept=CODE_CONCEPTS),
    _t("When should I use {concept}, and when should I avoid it? Give a code example.", concept=CODE_CONCEPTS),
    _t("Review this plan: I want to write a {lang} function that {task}. What edge cases should I test?",
       lang=PROGRAMMING_LANGUAGES, task=FUNCTION_TASKS),
]

# ==============================================================================================================
# Code editing: a snippet plus an instruction. Each snippet carries its language, a variable to rename (with new
# names), and tags saying which instructions make sense for it.
# ==============================================================================================================
class _Snippet:
    __slots__ = ("lang", "code", "old", "new", "tags")

    def __init__(self, lang: str, code: str, old: str, new: tuple[str, ...], tags: str = ""):
        self.lang, self.code, self.old, self.new, self.tags = lang, code.strip("\n"), old, new, set(tags.split())


SNIPPETS = [
    _Snippet("python", """
def count_long(words, limit):
    count = 0
    for w in words:
        if len(w) > limit:
            count += 1
    return count
""", "w", ("word", "item"), "loop"),
    _Snippet("python", """
def squares(n):
    result = []
    for i in range(n):
        result.append(i * i)
    return result
""", "result", ("values", "squared"), "loop"),
    _Snippet("python", """
def last_items(items, k):
    # should return the last k items
    return items[len(items) - k - 1:]
""", "items", ("elements", "seq"), "bug"),
    _Snippet("python", """
def sum_to(n):
    # should return 1 + 2 + ... + n
    acc = 0
    for i in range(1, n):
        acc += i
    return acc
""", "acc", ("running_sum", "result"), "bug"),
    _Snippet("python", """
def mean(values):
    return sum(values) / len(values)
""", "values", ("numbers", "samples"), "empty"),
    _Snippet("python", """
def find_max(nums):
    best = nums[0]
    for n in nums:
        if n > best:
            best = n
    return best
""", "best", ("largest", "top"), "empty"),
    _Snippet("python", """
def word_lengths(text):
    lengths = {}
    for word in text.split():
        lengths[word] = len(word)
    return lengths
""", "lengths", ("sizes", "length_by_word"), "loop"),
    _Snippet("python", """
def is_palindrome(s):
    cleaned = s.lower().replace(" ", "")
    for i in range(len(cleaned)):
        if cleaned[i] != cleaned[len(cleaned) - i]:
            return False
    return True
""", "cleaned", ("letters", "normalized"), "bug"),
    _Snippet("python", """
def evens(numbers):
    out = []
    for x in numbers:
        if x % 2 == 0:
            out.append(x)
    return out
""", "out", ("even_numbers", "kept"), "loop"),
    _Snippet("python", """
class Counter:
    def __init__(self):
        self.count = 0

    def increment(self):
        self.count += 1

    def reset(self):
        self.count = 0
""", "count", ("value", "clicks"), ""),
    _Snippet("python", """
def read_scores(path):
    scores = []
    with open(path) as f:
        for line in f:
            scores.append(int(line))
    return scores
""", "f", ("handle", "score_file"), "loop empty"),
    _Snippet("python", """
def c_to_f(c):
    return c * 9 / 5 + 32

def f_to_c(f):
    return f - 32 * 5 / 9
""", "c", ("celsius", "degrees_c"), "bug"),
    _Snippet("python", """
def chunk(items, size):
    chunks = []
    for i in range(0, len(items), size):
        chunks.append(items[i:i + size])
    return chunks
""", "chunks", ("groups", "batches"), "loop"),
    _Snippet("python", """
def middle(items):
    mid = len(items) / 2
    return items[mid]
""", "mid", ("center", "half"), "bug empty"),
    _Snippet("python", """
def greet_all(names):
    for i in range(len(names)):
        print("Hello, " + names[i] + "!")
""", "names", ("guests", "people"), "empty"),
    _Snippet("python", """
def total_price(cart):
    price = 0
    for item, qty, unit in cart:
        price += qty * unit
    return round(price, 2)
""", "price", ("amount", "cart_total"), "loop"),
    _Snippet("javascript", """
function sumArray(arr) {
  let total = 0;
  for (const x of arr) {
    total = total + x;
  }
  return total;
}
""", "arr", ("numbers", "values"), "loop"),
    _Snippet("javascript", """
function lastElement(list) {
  return list[list.length];
}
""", "list", ("items", "arr"), "bug empty"),
    _Snippet("javascript", """
function countVowels(str) {
  let count = 0;
  for (const ch of str) {
    if ("aeiou".includes(ch)) count++;
  }
  return count;
}
""", "ch", ("letter", "c"), "bug"),
    _Snippet("javascript", """
function capitalizeAll(words) {
  const result = [];
  for (let i = 0; i < words.length; i++) {
    result.push(words[i][0].toUpperCase() + words[i].slice(1));
  }
  return result;
}
""", "result", ("capitalized", "out"), "loop empty"),
    _Snippet("javascript", """
function range(start, end) {
  // should include end
  const out = [];
  for (let i = start; i < end; i++) {
    out.push(i);
  }
  return out;
}
""", "out", ("numbers", "values"), "bug loop"),
    _Snippet("javascript", """
const users = [
  { name: "Ravi", age: 31 },
  { name: "Ines", age: 24 },
  { name: "Tomas", age: 45 },
];

function namesOf(list) {
  return list.map(u => u.name);
}
""", "u", ("user", "person"), ""),
    _Snippet("javascript", """
function maxValue(nums) {
  let max = 0;
  for (const n of nums) {
    if (n > max) max = n;
  }
  return max;
}
""", "max", ("largest", "best"), "bug empty"),
    _Snippet("javascript", """
async function loadUser(id) {
  const res = await fetch("/api/users/" + id);
  const data = await res.json();
  return data;
}
""", "res", ("response", "reply"), ""),
    _Snippet("javascript", """
function isEven(n) {
  if (n % 2 == 0) {
    return true;
  } else {
    return false;
  }
}
""", "n", ("value", "num"), ""),
    _Snippet("javascript", """
function repeatString(s, times) {
  let out = "";
  for (let i = 1; i < times; i++) {
    out += s;
  }
  return out;
}
""", "out", ("result", "repeated"), "bug loop"),
    _Snippet("sql", """
SELECT name, salary
FROM employees
WHERE department = 'Sales'
ORDER BY salary;
""", "employees", ("staff", "workers"), ""),
    _Snippet("sql", """
SELECT c.name, COUNT(o.id)
FROM customers c
JOIN orders o ON o.customer_id = c.id
GROUP BY c.name;
""", "c", ("cust", "cu"), ""),
    _Snippet("sql", """
SELECT product, SUM(quantity) AS units
FROM sales
WHERE sale_date >= '2024-01-01'
GROUP BY product
HAVING SUM(quantity) > 100;
""", "units", ("units_sold", "total_units"), ""),
    _Snippet("sql", """
SELECT title, published_year
FROM books
WHERE published_year > 1990 AND author = 'Okafor'
ORDER BY title;
""", "books", ("titles", "catalog"), ""),
    _Snippet("sql", """
UPDATE accounts
SET balance = balance - 50
WHERE id = 7;
""", "accounts", ("wallets", "bank_accounts"), ""),
]
CODE_SNIPPETS = tuple(s.code for s in SNIPPETS)
_LANG_NAMES = {"python": "Python", "javascript": "JavaScript", "sql": "SQL"}
CODE_WRAPS = [
    "{instr}\n\n{code}",
    "{instr}\n\n```{fence}\n{code}\n```",
    "Here is some {lang} code:\n\n{code}\n\n{instr}",
    "```{fence}\n{code}\n```\n\n{instr}",
    "I wrote this {lang}:\n\n{code}\n\nCould you help? {instr}",
]
SHOW_TAILS = ["", " Show the complete code afterwards.", " Return the full, updated code.",
              " Keep everything else unchanged."]


def _snippets(*, langs: str = "python javascript sql", tag: str = "") -> list:
    return [s for s in SNIPPETS if s.lang in langs.split() and (not tag or tag in s.tags)]


def _code_fill(f: dict) -> dict:
    if "rn" in f:
        snip, new = f["rn"]
        out = dict(old=snip.old, new=new)
    else:
        snip, out = f["snip"], {}
    return out | dict(code=snip.code, lang=_LANG_NAMES[snip.lang], fence=snip.lang)


def _code_post(instr: str, f: dict) -> str:
    return _sub(f["wrap"], dict(instr=instr, code=f["code"], lang=f["lang"], fence=f["fence"]))


def _edit(text: str, snippets: list | None = None, rename: bool = False, tails: bool = True) -> _Template:
    slots = dict(rn=[(s, new) for s in SNIPPETS for new in s.new]) if rename else dict(snip=snippets)
    slots |= dict(wrap=CODE_WRAPS)
    if tails:
        slots |= dict(tail=SHOW_TAILS)
        text += "{tail}"
    return _Template(text, slots, _code_fill, _code_post)


CODE_EDIT_TEMPLATES = [
    _edit("Rename `{old}` to `{new}` throughout the code.", rename=True),
    _edit("Please change the name `{old}` to `{new}` everywhere it appears and print the result.", rename=True,
          tails=False),
    _edit("Add type hints to this Python code.", _snippets(langs="python")),
    _edit("Add a docstring to each function in the code.", _snippets(langs="python")),
    _edit("Rewrite the loop as a comprehension where that makes the code clearer.",
          _snippets(langs="python", tag="loop")),
    _edit("Replace the loop with a suitable array method such as map, filter or reduce.",
          _snippets(langs="javascript", tag="loop")),
    _edit("There is an off-by-one or logic bug in this code. Find it, explain it, and fix it.", _snippets(tag="bug")),
    _edit("Make this code handle empty input without crashing.", _snippets(tag="empty")),
    _edit("Translate this Python code into JavaScript, keeping the same behaviour.", _snippets(langs="python"),
          tails=False),
    _edit("Translate this JavaScript into idiomatic Python.", _snippets(langs="javascript"), tails=False),
    _edit("Add a comment above each step explaining what it does.", _snippets()),
    _edit("Write three unit tests for this code, including one edge case.", _snippets(langs="python javascript"),
          tails=False),
    _edit("Explain what this code does, line by line.", _snippets(), tails=False),
    _edit("Refactor this code to make it easier to read without changing its behaviour.", _snippets()),
    _edit("Add input validation that raises a clear error for invalid arguments.", _snippets(langs="python")),
    _edit("Convert this code to TypeScript with explicit types.", _snippets(langs="javascript")),
    _edit("Change the query so that it sorts the rows in descending order and returns at most 10 of them.",
          _snippets(langs="sql")),
    _edit("Explain what this SQL statement does, and suggest an index that would make it faster.",
          _snippets(langs="sql"), tails=False),
    _edit("Rewrite this query using a common table expression (a WITH clause).", _snippets(langs="sql")),
    _edit("Give the variables and functions more descriptive names.", _snippets()),
    _edit("What happens if this code receives unusual input, such as an empty value or a very large number? "
          "Suggest fixes.", _snippets(langs="python javascript"), tails=False),
]

# ==============================================================================================================
# Text editing: a short text plus an instruction. Tags: typos (deliberate misspellings), present / past (tense),
# passive, first (first person), rude (could be more polite).
# ==============================================================================================================
TEXTS = [
    ("Hi all, just a heads-up that the printer on the second floor is broken again. IT says they'll fix it by "
     "Wednesday. Until then please use the one near the kitchen, and grab your pages right away, because people keep "
     "taking the wrong ones.", "present rude"),
    ("Dear Mr. Okoro, thank you for you're letter from last week. We have recieved the documents and our team will "
     "reveiw them before the end of the month. If anything is mising, we will contact you imediately. Kind regards, "
     "Helen Marsh", "typos first"),
    ("The new bus route starts on Monday. Buses will run every fifteen minutes during the day and every half hour "
     "after eight in the evening. The stop outside the hospital has moved fifty metres up the road, next to the "
     "pharmacy.", "present"),
    ("things to pack for the trip: sunscreen, a warm jaket, two pairs of hiking boots, the camera charger, snacks for "
     "the train, and the pasports", "typos"),
    ("Hey Sam, thanks so much for lending me the tent last weekend! It held up great even when it poured on Saturday "
     "night. I'll drop it back at your place on Thursday evening if that works. Let me know if you need anything in "
     "return.", "first"),
    ("We regret to inform you that the annual garden show has been postponed due to the expected heavy rain. A new "
     "date will be announced within two weeks. Tickets already purchased will remain valid, and refunds are "
     "available on request.", "passive"),
    ("Maria walks into the old bookshop and shakes the snow off her coat. The owner looks up from his crossword and "
     "smiles. She asks about a cookbook her mother used to own, and he disappears into the back room for a long "
     "time.", "present"),
    ("Our team has been working very hard on the new website. We beleive it will be ready by the end of Febuary, but "
     "there are still a few problms with the payment page. Please be paitent with us while we finish the last "
     "tests.", "typos first"),
    ("Notes from Tuesday: budget for the school fair approved. Jonas will order the tables and chairs. Priya is in "
     "charge of the raffle prizes. We still need volunteers for the face-painting stand and someone to collect the "
     "cash box at the end of the day.", "first"),
    ("I ordered a blue sweater three weeks ago and got a green one instead. I sent it back right away, but I still "
     "haven't gotten my money back. Nobody answers the phone and nobody replies to my emails. This is really "
     "frustrating.", "past first rude"),
    ("First, heat some oil in a large pan. Then add the chopped onion and cook it until it is soft. After that, stir "
     "in the rice and the stock, cover the pan, and let everything simmer for about twenty minutes.", "present"),
    ("This backpack is made from recyled plastic bottles and has a padded sleve for a laptop up to 15 inches. The "
     "straps are adjustible and the side pockets are big enough for a water botle.", "typos present"),
    ("Bats find their way in the dark by making high-pitched sounds and listening for the echoes. The time it takes "
     "for an echo to return tells them how far away an object is. Some bats can even detect insects as thin as a "
     "human hair.", "present"),
    ("Guess what? Our running club finally hit one hundred members! To celebrate, we're doing a slow fun run around "
     "the lake on Sunday morning, followed by pancakes at the café. Bring a friend, everyone's welcome.", "first"),
    ("Last summer we rented a small cabin near the coast. Every morning we walked along the cliffs, and in the "
     "afternoons we read on the porch. On the final evening a storm knocked out the power, so we cooked dinner on "
     "the camping stove.", "past first"),
    ("Reminder: all class reading books are due back on Friday. Please check under your beds and in your backpaks. "
     "Any book that is returned late will cost fifty cents a day, and lost books must be payed for.", "typos"),
    ("We are looking for a friendly person to help in our flower shop on Saturdays. You will water the plants, serve "
     "customers, and help prepare bouquets. No experience is needed, but you must be reliable and able to lift heavy "
     "buckets.", "present first"),
    ("running late, train stuck outside the station. prob 20 mins. start without me, and can someone save me a seat "
     "near the front? sorry!!", "first"),
    ("Employees are reminded that the use of personal devices during safety training is not permitted. Attendance at "
     "all sessions is mandatory, and any absence must be reported to a supervisor in advance.", "passive present"),
    ("Hi Dr. Reyes, I wanted to ask wether it would be possible to move my apointment from Tuesday to Thursday. I "
     "have a conflict with a work trainning that I can't reschedule. Thank you for your understaning.",
     "typos first"),
    ("I used to think running was boring. Then a friend convinced me to join her for a short jog before work. Three "
     "months later, I look forward to those quiet mornings more than anything else in my week.", "first"),
    ("To reset the router, unplug it from the wall and wait thirty seconds. Plug it back in and wait until the green "
     "light stops blinking. If the light turns red, hold the small button on the back for ten seconds.", "present"),
    ("Honestly the hotel was fine but nothing special. The bed was comfy and the staff were nice, but the walls were "
     "super thin and the breakfast was kind of sad. For the price I expected a lot more.", "past first rude"),
    ("The comittee has desided to extend the deadline for project proposals by one week. All submisions must now be "
     "sent before midnight on the 14th. Late proposals will not be considerd.", "typos"),
    ("The canal was dug by hand over a period of seven years. Thousands of workers moved soil with shovels and "
     "wheelbarrows. When it opened, boats could carry goods between the two rivers in a single day instead of a "
     "week.", "past passive"),
    ("The report was written by the research team and was reviewed by two outside experts. Several errors were found "
     "and were corrected before the final version was published.", "past passive"),
    ("Dear Grandpa, I hope you are feeling better. School is going well and I got a good mark on my science project "
     "about volcanoes. Mum says we might visit you in the spring holidays. I can't wait to play chess with you "
     "again.", "first"),
    ("shopping: oat milk, bananas, brocoli, dish soap, coffee beans, toilet paper, birthday candels, AA bateries",
     "typos"),
    ("Visitors must sign in at the front desk and wear their badge at all times. Guests may not enter the laboratory "
     "without an escort. Please return your badge when you leave the building.", "present"),
    ("What a game! The home team was down by two goals at halftime, but they came storming back in the second half. "
     "The winning goal came in the very last minute, and the crowd went absolutely wild.", "past"),
    ("Your parcel could not be delivered today because nobody was home. It has been taken to the collection point "
     "on Mill Street, where it will be kept for seven days. Please bring photo ID when you collect it.",
     "passive"),
    ("i think we should maybe move the party to saturday because alot of people cant come on friday, also the "
     "weather is suposed to be better. what do you guys think", "typos first"),
]
TEXT_WRAPS = [
    "{instr}\n\n{text}",
    "{instr}\n\n\"{text}\"",
    "Here is a short text:\n\n{text}\n\n{instr}",
    "{instr}\n\nText: {text}",
    "Please help me edit this. {instr}\n\n{text}",
    "{text}\n\n{instr}",
]


def _text_post(instr: str, f: dict) -> str:
    return _sub(f["wrap"], dict(instr=instr, text=f["text"]))


def _rewrite(instr: str, tag: str = "", **slots) -> _Template:
    texts = [text for text, tags in TEXTS if not tag or tag in tags.split()]
    return _Template(instr, slots | dict(text=texts, wrap=TEXT_WRAPS), None, _text_post)


EDIT_READERS = ["a seven-year-old", "a non-native speaker", "a busy executive", "a teenager",
                "someone who is new to the topic"]

TEXT_EDIT_TEMPLATES = [
    _rewrite("Rewrite this so that it sounds more formal."),
    _rewrite("Make this text sound more casual and friendly."),
    _rewrite("Shorten this to a single sentence without losing the key information."),
    _rewrite("Cut this text down to about half its length."),
    _rewrite("Fix all the spelling mistakes in this text and list the words you corrected.", "typos"),
    _rewrite("Correct the spelling, grammar and punctuation in the text below.", "typos"),
    _rewrite("Turn this into a numbered list of the main points."),
    _rewrite("Turn this into a bulleted list."),
    _rewrite("Rewrite this text in the past tense.", "present"),
    _rewrite("Rewrite this text in the present tense.", "past"),
    _rewrite("Rewrite this so that {reader} could easily understand it.", reader=EDIT_READERS),
    _rewrite("Rewrite this in the active voice.", "passive"),
    _rewrite("Make this message more polite and constructive.", "rude"),
    _rewrite("Give this text a short, catchy title, then repeat the text underneath it."),
    _rewrite("Expand this into a longer paragraph with more detail, keeping the same facts."),
    _rewrite("Rewrite this as a short, friendly text message."),
    _rewrite("Replace every name, date and number in this text with a placeholder in square brackets, such as [NAME]."),
    _rewrite("Rewrite this text so that no sentence is longer than twelve words."),
    _rewrite("Rewrite this as a social media post of under 280 characters."),
    _rewrite("Rewrite the text in the third person.", "first"),
    _rewrite("Proofread this, point out anything that sounds awkward, and then give an improved version."),
    _rewrite("Rewrite this in a {tone} tone.", tone=["cheerful", "neutral", "urgent", "apologetic", "humorous"]),
]

# ==============================================================================================================
# Extraction
# ==============================================================================================================
ORGS = ["Harbour Logistics", "Green Valley Foods", "Northwind Bank", "Brightpath Software", "the Riverside Clinic",
        "Atlas Engineering", "Bluebird Travel", "Kestrel Media"]
MONEY = ["€1,200", "$350", "£4,800", "$12,500", "€75", "£960", "$2.3 million", "€18,000"]
TIMES = ["9:30 am", "noon", "2:15 pm", "6 pm", "8:45 am", "4:30 pm"]
YEARS = [1968, 1975, 1983, 1991, 1999, 2004, 2010, 2017]
EVENTS = ["a book fair", "a jazz concert", "a science workshop", "a charity run", "a film festival",
          "a farmers' market", "a chess tournament", "a design conference"]
ARRIVAL_REASONS = ["a job interview", "a family wedding", "a medical appointment", "a football match",
                   "a week of sightseeing"]
ORDER_ITEMS = ["desk chairs", "USB cables", "coffee filters", "notebooks", "printer cartridges", "water bottles",
               "table lamps", "extension cords"]
EVENT_SENTENCES = [
    "{n1} flew from {c1} to {c2} on {date} to meet {n2} at the office of {org}.",
    "On {date}, {n1} and {n2} signed a contract in {c1} worth {money}.",
    "The conference in {c1} starts on {date} at {time}; {n1} will give the opening talk and {n2} will chair the "
    "first panel.",
    "{n1}, who was born in {c1} in {year}, moved to {c2} to work for {org}.",
    "{org} opened a new branch in {c1} on {date}, and {n1} was named its first manager.",
    "After the match in {c1} on {date}, {n1} said the team would travel to {c2} the next morning.",
    "{n1} paid {money} for two train tickets from {c1} to {c2} for a trip on {date}.",
    "A parcel that {n1} posted in {c1} on {date} reached {n2} in {c2} nine days later.",
    "At {time} on {date}, {n2} called {n1} from {c1} to say the shipment for {org} had arrived.",
    "{n1} and {n2} will host a fundraising dinner for {org} in {c1} on {date}, hoping to raise {money}.",
]


SENTENCES = _Composed(EVENT_SENTENCES, n1=NAMES[10:18], n2=NAMES[20:24], c1=CITIES[:8], c2=CITIES[8:12],
                      date=DATES[::8], org=ORGS, money=MONEY, time=TIMES, year=YEARS)


def _x(text: str) -> _Template:
    """An extraction instruction over one composed event sentence ``{sent}``."""
    return _t(text, sent=SENTENCES)


def _people(f: dict) -> dict:
    return dict(zip(("n1", "n2", "n3"), f["trio"])) | dict(zip(("c1", "c2", "c3"), f["cities"]))


EXTRACTION_TEMPLATES = [
    _x("Extract all the people, places and dates from this sentence and return them as JSON: \"{sent}\""),
    _x("List every person mentioned in the following text: {sent}"),
    _x("From the text below, pull out each city and each date. Format the answer as a bulleted list.\n\n{sent}"),
    _x("Read this sentence and return a JSON object with the keys \"people\", \"places\", \"dates\" and "
       "\"amounts\": {sent}"),
    _x("Which dates, times and years appear in this text? {sent}"),
    _x("Identify the organizations and the people in this sentence, and say how they are connected: {sent}"),
    _x("Find all the numbers in the following text, including money amounts, and say what each one refers to: "
       "{sent}"),
    _x("Pull the key facts out of this sentence (who, what, where and when): {sent}"),
    _x("Return only the place names from this sentence, separated by commas: {sent}"),
    _t("Extract the names and ages from this text as a two-column table: {n1} is {a1} years old, {n2} is {a2}, and "
       "their cousin {n3} has just turned {a3}.", derive=lambda f: dict(zip(("n1", "n2", "n3"), f["trio"])),
       trio=TRIOS, a1=range(20, 60, 7), a2=range(18, 70, 9), a3=range(5, 17, 2)),
    _t("Make a CSV with the columns name, city and year from this text: {n1} moved to {c1} in {y1}, {n2} settled "
       "in {c2} in {y2}, and {n3} has lived in {c3} since {y3}.",
       derive=lambda f: _people(f) | dict(zip(("y1", "y2", "y3"), f["years"])), trio=TRIOS[::7],
       cities=_perms(CITIES[8:16], 3), years=[(1998, 2005, 2016), (2001, 1994, 2012), (2019, 2008, 1987)]),
    _t("Write one sentence for each of these people, saying where they live and when their birthday is: {n1} "
       "({c1}, {d1}); {n2} ({c2}, {d2}); {n3} ({c3}, {d3}).",
       derive=lambda f: _people(f) | dict(zip(("d1", "d2", "d3"), f["dates"])), trio=TRIOS[::5],
       cities=_perms(CITIES[16:22], 3), dates=[(DATES[i], DATES[i + 40], DATES[i + 80]) for i in range(0, 28, 3)]),
    _t("Using the names {n1}, {n2} and {n3} and the cities {c1}, {c2} and {c3}, write three short sentences that "
       "each pair one person with one city.", derive=_people, trio=TRIOS[::3], cities=_perms(CITIES[22:28], 3)),
    _t("Here is a list of events. Turn it into a JSON array of objects with the keys \"event\", \"date\" and "
       "\"place\": {e1} in {c1} on {d1}; {e2} in {c2} on {d2}; {e3} in {c3} on {d3}.",
       derive=lambda f: dict(zip(("e1", "e2", "e3"), f["events"])) | dict(zip(("c1", "c2", "c3"), f["cities"]))
       | dict(d1=DATES[f["k"]], d2=DATES[f["k"] + 30], d3=DATES[f["k"] + 61]),
       events=_perms(EVENTS, 3), cities=_perms(CITIES[:5], 3), k=range(0, 40, 4)),
    _t("Extract the email addresses and phone numbers from this message: \"Hi, this is {n1}. You can reach me at "
       "{e1} or on {phone}. My colleague {n2} is at {e2}.\"",
       derive=lambda f: dict(n1=f["pair"][0], n2=f["pair"][1], e1=f"{f['pair'][0].lower()}@{f['domain']}",
                             e2=f"{f['pair'][1].lower()}.work@{f['domain']}"),
       pair=PAIRS, domain=["example.org", "mailbox.net", "studio-nine.com"],
       phone=["555-0142", "+44 20 7946 0018", "(555) 201-7733", "+61 2 5550 1234"]),
    _t("From this order confirmation, extract each item with its quantity and unit price as JSON: \"Order for {n1}: "
       "{q1} x {i1} at {p1} each and {q2} x {i2} at {p2} each, delivered to {c1} on {d1}.\"",
       derive=lambda f: dict(i1=f["items"][0], i2=f["items"][1]), n1=NAMES[:8], q1=[2, 3, 5],
       items=_perms(ORDER_ITEMS, 2), p1=["$4.50", "$12.00"], q2=[1, 4, 10], p2=["$7.25", "$19.99"],
       c1=CITIES[:4], d1=DATES[::30]),
    _t("Turn this information into one natural sentence: name: {n1}; city: {c1}; date of arrival: {d1}; reason: "
       "{reason}.", n1=NAMES, c1=CITIES[:10], d1=DATES[::12], reason=ARRIVAL_REASONS),
    _t("Which of these sentences mention a date, and which mention a sum of money? 1) {s1} 2) {s2}",
       derive=lambda f: dict(s1=_sub(EVENT_SENTENCES[1], f["fill"]), s2=_sub(EVENT_SENTENCES[4], f["fill"])),
       fill=[dict(n1=a, n2=b, c1=c, date=d, money=m, org=o) for a, b in PAIRS[::11] for c in CITIES[:6]
             for d in DATES[::20] for m in MONEY[3:6] for o in ORGS[4:6]]),
]

# ==============================================================================================================
# STEM explanations
# ==============================================================================================================
STEM_CONCEPTS = [
    "photosynthesis", "osmosis", "plate tectonics", "natural selection", "entropy", "the greenhouse effect",
    "nuclear fission", "nuclear fusion", "the Doppler effect", "electromagnetic induction", "black holes",
    "the Big Bang theory", "DNA replication", "mitosis", "the immune response", "antibiotic resistance", "enzymes",
    "the carbon cycle", "the nitrogen cycle", "ocean currents", "the Coriolis effect", "static electricity",
    "superconductivity", "semiconductors", "transistors", "lasers", "radioactive decay", "half-life",
    "acids and bases", "the pH scale", "catalysts", "oxidation", "covalent bonds", "isotopes",
    "Newton's laws of motion", "friction", "inertia", "momentum", "kinetic energy", "gravity", "orbits",
    "buoyancy", "air pressure", "sound waves", "refraction", "the electromagnetic spectrum",
    "special relativity", "quantum tunnelling", "the photoelectric effect", "thermal conductivity", "heat engines",
    "combustion", "electric circuits", "Ohm's law", "magnetism", "rechargeable batteries", "solar cells",
    "wind turbines", "sorting algorithms", "public-key encryption", "machine learning", "neural networks",
    "data compression", "packet switching on the internet", "satellite navigation", "blood circulation",
    "the nervous system", "hormones", "kidney function", "digestion", "sleep cycles", "viruses", "gut bacteria",
    "food webs", "biodiversity", "erosion", "volcanic eruptions", "earthquakes", "the water cycle",
    "cloud formation", "lightning", "hurricanes", "rainbows", "the seasons", "the phases of the Moon",
    "solar eclipses", "exoplanets", "probability", "prime numbers", "infinity", "fractals", "random sampling",
    "the Pythagorean theorem", "derivatives in calculus", "exponential growth", "logarithms", "vectors",
    "matrices", "CRISPR gene editing", "stem cells", "3D printing", "vaccination", "the speed of light",
]
WHY_QUESTIONS = [
    "Why does ice float on water?", "Why do we have leap years?", "Why does metal feel colder than wood in the same "
    "room?", "Why do aeroplanes leave white trails in the sky?", "Why does salt help melt ice on roads?",
    "Why do stars twinkle?", "Why do we see lightning before we hear thunder?", "Why can fish breathe underwater "
    "but people cannot?", "Why do leaves change colour in autumn?", "Why does bread dough rise?",
    "Why is the sea salty?", "Why do we get goosebumps?", "Why does a spoon look bent in a glass of water?",
    "Why do batteries drain faster in the cold?", "Why do some materials conduct electricity while others do not?",
    "Why does the Moon always show the same face to Earth?", "Why do steel ships float?", "Why does popcorn pop?",
    "Why do bubbles form when water boils?", "Why does Mars look red?", "Why do our ears pop on a plane?",
    "Why do a feather and a hammer fall at the same rate on the Moon?", "Why does a compass needle point north?",
    "Why do some animals hibernate?", "Why is glass transparent?", "Why does hot air rise?",
    "Why do onions make your eyes water?", "Why does the Earth have seasons?", "Why do cats' eyes shine in the dark?",
    "Why does a bicycle stay upright when it is moving?",
]
HOW_QUESTIONS = [
    "How does a refrigerator keep food cold?", "How do noise-cancelling headphones work?",
    "How does a vaccine train the immune system?", "How does a touchscreen detect a finger?",
    "How does satellite navigation work out where I am?", "How do solar panels turn sunlight into electricity?",
    "How does a heat pump work?", "How do aeroplane wings produce lift?", "How does the heart pump blood?",
    "How does a microwave oven heat food?", "How do antibiotics kill bacteria?",
    "How does a nuclear power station produce electricity?", "How do bees make honey?",
    "How does a camera lens focus light?", "How do seismologists measure earthquakes?",
    "How does an electric motor work?", "How does the body control its temperature?",
    "How does a search engine decide which pages to show first?", "How do hurricanes form?",
    "How does a 3D printer build an object?", "How do plants move water from their roots to their leaves?",
    "How is steel made?", "How does a lithium-ion battery store energy?", "How do tides work?",
    "How does a thermostat keep a room at a steady temperature?",
]
DIFF_PAIRS = [
    "weather and climate", "a virus and a bacterium", "mass and weight", "an atom and a molecule",
    "mitosis and meiosis", "nuclear fission and nuclear fusion", "AC and DC electricity", "heat and temperature",
    "a comet and an asteroid", "an element and a compound", "RAM and storage", "accuracy and precision",
    "correlation and causation", "a meteor and a meteorite", "evaporation and boiling",
    "a series circuit and a parallel circuit", "genotype and phenotype", "a hypothesis and a theory",
    "conduction and convection", "an acid and a base", "DNA and RNA", "a planet and a dwarf planet",
    "mean and median", "kinetic and potential energy", "a tsunami and an ordinary wave", "arteries and veins",
    "a solution and a suspension", "renewable and non-renewable energy", "innate and adaptive immunity",
    "endothermic and exothermic reactions",
]
STEM_TAILS = ["", " Keep it under 100 words.", " Please use an everyday example.", " Answer for a twelve-year-old.",
              " Use three short paragraphs.", " Avoid technical jargon.", " Finish with a one-line summary."]

STEM_TEMPLATES = [
    _t("Explain {concept} in simple terms.", concept=STEM_CONCEPTS),
    _t("Give a clear explanation of {concept} and say why the topic matters.{tail}", concept=STEM_CONCEPTS,
       tail=STEM_TAILS),
    _t("Explain {concept} to {audience}.", concept=STEM_CONCEPTS, audience=AUDIENCES),
    _t("Give me a short overview of {concept} in {n} sentences.", concept=STEM_CONCEPTS, n=NUMBER_WORDS),
    _t("Describe {concept} as a bulleted list of key points.", concept=STEM_CONCEPTS),
    _t("What are the most common misconceptions about {concept}?", concept=STEM_CONCEPTS),
    _t("How would you explain {concept} using an everyday analogy?", concept=STEM_CONCEPTS),
    _t("{why}{tail}", why=WHY_QUESTIONS, tail=STEM_TAILS),
    _t("My child asked me: \"{why}\" How should I answer?", why=WHY_QUESTIONS),
    _t("{how}{tail}", how=HOW_QUESTIONS, tail=STEM_TAILS),
    _t("Explain step by step: {how}", how=HOW_QUESTIONS),
    _t("What is the difference between {pair}?{tail}", pair=DIFF_PAIRS, tail=STEM_TAILS),
    _t("Compare {pair}, and give one example of each.", pair=DIFF_PAIRS),
    _t("Can you explain the difference between {pair} to {audience}?", pair=DIFF_PAIRS, audience=AUDIENCES),
    _t("Give a brief history of how scientists came to understand {concept}.", concept=STEM_CONCEPTS),
    _t("Suggest a simple demonstration or thought experiment that illustrates {concept}.", concept=STEM_CONCEPTS),
    _t("Write a short quiz with three questions and answers about {concept}.", concept=STEM_CONCEPTS),
    _t("What are some real-world applications of {concept}?", concept=STEM_CONCEPTS),
    _t("I have an exam tomorrow. What are the key facts about {concept} that I should remember?",
       concept=STEM_CONCEPTS),
    _t("Summarize what scientists currently know about {concept} in one paragraph.", concept=STEM_CONCEPTS),
]

# ==============================================================================================================
# Humanities and social science
# ==============================================================================================================
HISTORY_EVENTS = [
    "the French Revolution", "the Industrial Revolution", "the Renaissance", "the fall of the Berlin Wall",
    "the Protestant Reformation", "the Meiji Restoration", "the American Civil War", "the signing of Magna Carta",
    "the Cold War", "the partition of India", "the Black Death", "the rise of the Mongol Empire",
    "the Atlantic slave trade", "the Scramble for Africa", "the Great Depression", "the Russian Revolution of 1917",
    "the founding of the United Nations", "the invention of the printing press", "the collapse of the Soviet Union",
    "the Haitian Revolution", "the Crusades", "the women's suffrage movement",
    "the civil rights movement in the United States", "the end of apartheid in South Africa",
    "the unification of Germany in 1871", "the Spanish conquest of the Aztec Empire", "the Enlightenment",
    "the spread of Buddhism across Asia", "the voyages of Zheng He", "the building of the Panama Canal",
]
HISTORICAL_PEOPLE = [
    "Confucius", "Socrates", "Cleopatra", "Leonardo da Vinci", "Mahatma Gandhi", "Nelson Mandela", "Elizabeth I",
    "Napoleon Bonaparte", "Simón Bolívar", "Frida Kahlo", "William Shakespeare", "Ibn Khaldun",
    "Mary Wollstonecraft", "Karl Marx", "Adam Smith", "Martin Luther King Jr.", "Genghis Khan", "Frederick Douglass",
    "Hannah Arendt", "Akbar the Great", "Mansa Musa", "Harriet Tubman", "Sun Tzu", "Simone de Beauvoir",
    "Queen Victoria", "Ashoka", "Murasaki Shikibu", "Toussaint Louverture",
]
IDEAS = [
    "utilitarianism", "existentialism", "stoicism", "cultural relativism", "secularism", "federalism",
    "the welfare state", "proportional representation", "nationalism", "globalization", "the separation of powers",
    "the rule of law", "feudalism", "mercantilism", "liberalism", "conservatism", "pacifism", "direct democracy",
]
EVERYDAY_CONCEPTS = [
    "supply and demand", "opportunity cost", "inflation", "comparative advantage", "the tragedy of the commons",
    "confirmation bias", "cognitive dissonance", "Maslow's hierarchy of needs", "the placebo effect",
    "classical conditioning", "monetary policy", "soft power", "urbanization", "the prisoner's dilemma",
    "diminishing returns", "social norms", "the bystander effect", "sunk costs",
]
ARTS = ["impressionism", "the hero's journey in storytelling", "satire", "the Socratic method", "baroque music",
        "magical realism", "Greek tragedy", "haiku as a poetic form", "modernist architecture", "the sonnet"]
HUM_TAILS = ["", " Keep it under 150 words.", " Use bullet points.", " Write it for a secondary school class.",
             " Mention at least one date.", " End with a question for discussion."]

HUMANITIES_TEMPLATES = [
    _t("What led to {event}?{tail}", event=HISTORY_EVENTS, tail=HUM_TAILS),
    _t("Describe the long-term consequences of {event}.{tail}", event=HISTORY_EVENTS, tail=HUM_TAILS),
    _t("Summarize {event} in {n} sentences for a history class.", event=HISTORY_EVENTS, n=NUMBER_WORDS),
    _t("Why do historians see {event} as a turning point?{tail}", event=HISTORY_EVENTS, tail=HUM_TAILS),
    _t("How did {event} affect the lives of ordinary people at the time?{tail}", event=HISTORY_EVENTS,
       tail=HUM_TAILS),
    _t("How do historians know what happened during {event}? What kinds of sources do they use?",
       event=HISTORY_EVENTS),
    _t("Was {event} inevitable? Give arguments on both sides.", event=HISTORY_EVENTS),
    _t("Write a short timeline of the key moments of {event}.", event=HISTORY_EVENTS),
    _t("Who was {person}, and what is their legacy today?{tail}", person=HISTORICAL_PEOPLE, tail=HUM_TAILS),
    _t("What were the most important ideas or achievements of {person}?{tail}", person=HISTORICAL_PEOPLE,
       tail=HUM_TAILS),
    _t("Write a short biography of {person} for {audience}.", person=HISTORICAL_PEOPLE, audience=AUDIENCES),
    _t("If you could interview {person}, what five questions would you ask, and how might they answer?",
       person=HISTORICAL_PEOPLE),
    _t("Explain {idea} and name one thinker associated with it.{tail}", idea=IDEAS, tail=HUM_TAILS),
    _t("What are the main criticisms of {idea}?{tail}", idea=IDEAS, tail=HUM_TAILS),
    _t("Explain {idea} as if I were {audience}.", idea=IDEAS, audience=AUDIENCES),
    _t("Explain {concept} with an example from everyday life.{tail}", concept=EVERYDAY_CONCEPTS, tail=HUM_TAILS),
    _t("Give three examples of {concept} in the modern world.{tail}", concept=EVERYDAY_CONCEPTS, tail=HUM_TAILS),
    _t("How would an economist or a psychologist describe {concept} to {audience}?", concept=EVERYDAY_CONCEPTS,
       audience=AUDIENCES),
    _t("What is {art}, and what are its defining features?{tail}", art=ARTS, tail=HUM_TAILS),
    _t("What can we learn today from {event}?{tail}", event=HISTORY_EVENTS, tail=HUM_TAILS),
    _t("How did {event} shape the world of {person}, or did it come too late to matter to them?",
       event=HISTORY_EVENTS, person=HISTORICAL_PEOPLE),
]

# ==============================================================================================================
# Translation
# ==============================================================================================================
FOREIGN_SENTENCES = {
    "French": [
        "Je voudrais réserver une table pour quatre personnes ce soir.",
        "Il pleut depuis trois jours et la rivière commence à déborder.",
        "Ma sœur habite à Lyon et travaille dans une pharmacie.",
        "Pouvez-vous m'indiquer le chemin de la gare, s'il vous plaît ?",
        "Nous avons oublié nos parapluies dans le train.",
        "Le concert commence à vingt heures, mais les portes ouvrent une heure avant.",
        "Les enfants ont construit un château de sable sur la plage.",
        "J'ai lu ce roman en une seule nuit parce que je ne pouvais pas m'arrêter.",
        "Le médecin m'a conseillé de boire plus d'eau et de dormir davantage.",
        "Ce marché vend les meilleurs fromages de la région.",
        "Est-ce que tu as vu mes clés ? Je ne les trouve nulle part.",
        "L'été dernier, nous avons fait du vélo le long de la Loire.",
        "Il faut éteindre les lumières avant de quitter le bureau.",
        "Mon grand-père m'a appris à jouer aux échecs quand j'avais six ans.",
    ],
    "German": [
        "Ich habe meinen Regenschirm im Bus vergessen.",
        "Kannst du mir bitte das Salz geben?",
        "Der Zug nach Hamburg hat zwanzig Minuten Verspätung.",
        "Meine Eltern wohnen seit dreißig Jahren in demselben Haus.",
        "Wir treffen uns morgen um neun Uhr vor dem Kino.",
        "Im Winter fahren wir oft in den Bergen Ski.",
        "Dieses Buch ist spannender, als ich erwartet hatte.",
        "Der Arzt sagt, dass ich mich eine Woche lang ausruhen soll.",
        "Sie lernt seit zwei Jahren Japanisch und spricht schon ziemlich gut.",
        "Bitte schließen Sie das Fenster, es wird kalt.",
        "Unser Hund schläft am liebsten auf dem Sofa.",
        "Am Wochenende hat es so stark geschneit, dass die Schule geschlossen blieb.",
        "Ich möchte ein Konto eröffnen und brauche dafür einen Termin.",
        "Die Kinder spielen im Hof Fußball, bis es dunkel wird.",
    ],
    "Spanish": [
        "Mañana vamos a visitar a mis abuelos en el campo.",
        "¿Sabes a qué hora cierra la farmacia?",
        "El tren salió con retraso por culpa de la nieve.",
        "Me gustaría aprender a tocar la guitarra este año.",
        "Mi hermano trabaja como enfermero en un hospital de Valencia.",
        "Hemos pintado la cocina de color amarillo.",
        "Si tienes tiempo, llámame esta noche.",
        "La película fue tan aburrida que me quedé dormido.",
        "Los precios de la fruta han subido mucho este invierno.",
        "Perdí mi cartera en el autobús, pero alguien la devolvió.",
        "Cada domingo preparamos una paella para toda la familia.",
        "El museo de ciencias tiene una exposición nueva sobre los océanos.",
        "Necesito comprar un regalo para el cumpleaños de mi madre.",
        "¿Cuánto se tarda en llegar al aeropuerto en taxi?",
    ],
    "Italian": [
        "Vorrei un caffè e un cornetto, per favore.",
        "Domani andiamo al mare se non piove.",
        "Mia zia abita a Napoli da quando era giovane.",
        "Il treno per Firenze parte dal binario tre.",
        "Abbiamo passato il pomeriggio a passeggiare in centro.",
        "Non riesco a trovare il mio telefono da nessuna parte.",
        "Questo ristorante è famoso per la sua pasta fatta in casa.",
        "Ho studiato tutta la notte per l'esame di chimica.",
        "I bambini giocano nel parco dopo la scuola.",
        "Puoi chiudere la porta quando esci?",
        "La riunione è stata spostata a giovedì pomeriggio.",
        "Mio padre ripara vecchie biciclette nel suo garage.",
        "Quest'estate vorremmo visitare la Sicilia in treno.",
        "Il medico mi ha detto di camminare almeno mezz'ora al giorno.",
    ],
    "Portuguese": [
        "Eu gostaria de marcar uma consulta para a próxima semana.",
        "Ontem choveu tanto que as ruas ficaram alagadas.",
        "A minha vizinha tem três gatos e um papagaio.",
        "Você sabe onde fica a estação de metrô mais próxima?",
        "Nós vamos passar as férias numa pequena aldeia perto do mar.",
        "Este livro foi escrito por uma autora brasileira.",
        "O jantar está pronto, venham para a mesa.",
        "Ele começou a correr todas as manhãs antes do trabalho.",
        "A loja fecha às seis horas aos domingos.",
        "Esqueci a senha do meu computador outra vez.",
        "As crianças fizeram desenhos para a avó.",
        "Precisamos de comprar leite, pão e ovos.",
        "O avião pousou no Recife com uma hora de atraso.",
        "Gosto de ouvir música enquanto cozinho.",
    ],
}
FOREIGN = [(lang, sentence) for lang, sentences in FOREIGN_SENTENCES.items() for sentence in sentences]
LANGUAGES = list(FOREIGN_SENTENCES)
ENGLISH_SENTENCES = [
    "Could you tell me where the nearest pharmacy is?", "We are planning a trip to the mountains next month.",
    "My favourite season is autumn because of the colours.", "The meeting has been cancelled because of the storm.",
    "I have lived in this city for five years.", "Please turn off your phone during the performance.",
    "How much does a ticket to the aquarium cost?", "Our train leaves at half past seven tomorrow morning.",
    "She has been learning the piano since she was eight.", "Do you know a good place to eat near here?",
    "The children were very tired after the long walk.", "I left my wallet at home, so I cannot pay right now.",
    "This coffee is too strong for me.", "We need more chairs for the guests.", "He repaired the old radio himself.",
    "Can I pay by card?", "The flowers in the garden have started to bloom.", "It is going to be sunny all weekend.",
    "I would like to return this jacket because it is too small.", "Thank you for your help with the move.",
    "The river is too cold for swimming in April.", "Where did you buy that beautiful scarf?",
    "The doctor will see you in ten minutes.", "We watched the sunrise from the top of the hill.",
    "Is there a bus that goes to the city centre?",
]
INTO_TAILS = ["", " Keep the translation natural rather than literal.",
              " Then point out one grammar feature a learner might find tricky.",
              " Also say whether the sentence sounds formal or informal.", " Give two possible translations."]
OUT_TAILS = ["", " Keep it natural and idiomatic.", " Then explain your word choices.",
             " Also show how it is pronounced.", " Give a formal and an informal version."]


def _foreign(f: dict) -> dict:
    return dict(lang=f["fs"][0], sentence=f["fs"][1])


TRANSLATION_TEMPLATES = [
    _t("Translate into English: {sentence}{tail}", derive=_foreign, fs=FOREIGN, tail=INTO_TAILS),
    _t("What does this {lang} sentence mean in English? \"{sentence}\"", derive=_foreign, fs=FOREIGN),
    _t("Please translate the following {lang} into natural English: {sentence}{tail}", derive=_foreign, fs=FOREIGN,
       tail=INTO_TAILS[2:]),
    _t("Translate this from {lang} to English and explain any words that are hard to translate: {sentence}",
       derive=_foreign, fs=FOREIGN),
    _t("I received this message in {lang}: \"{sentence}\" What does it say?{tail}", derive=_foreign, fs=FOREIGN,
       tail=INTO_TAILS),
    _t("Give an English translation of \"{sentence}\" and then a word-for-word version.", derive=_foreign,
       fs=FOREIGN),
    _t("How would you say \"{sentence}\" in English?{tail}", derive=_foreign, fs=FOREIGN, tail=INTO_TAILS[2:]),
    _t("My friend wrote \"{sentence}\" in a text. Can you translate it into English for me?", derive=_foreign,
       fs=FOREIGN),
    _t("{lang} to English, please: {sentence}", derive=_foreign, fs=FOREIGN),
    _t("Translate into {target}: {sentence}{tail}", target=LANGUAGES, sentence=ENGLISH_SENTENCES, tail=OUT_TAILS),
    _t("How do you say \"{sentence}\" in {target}?", target=LANGUAGES, sentence=ENGLISH_SENTENCES),
    _t("Please translate this sentence into {target}: {sentence}{tail}", target=LANGUAGES,
       sentence=ENGLISH_SENTENCES, tail=OUT_TAILS),
    _t("Translate \"{sentence}\" into {target}, and give the literal meaning of each word.", target=LANGUAGES,
       sentence=ENGLISH_SENTENCES),
    _t("Can you help me say this in {target}? \"{sentence}\"{tail}", target=LANGUAGES, sentence=ENGLISH_SENTENCES,
       tail=OUT_TAILS),
    _t("Translate the following into {target} and then back into English: {sentence}", target=LANGUAGES,
       sentence=ENGLISH_SENTENCES),
    _t("Write this in polite, formal {target}: {sentence}", target=LANGUAGES, sentence=ENGLISH_SENTENCES),
    _t("I am learning {target}. How would a native speaker say \"{sentence}\"?", target=LANGUAGES,
       sentence=ENGLISH_SENTENCES),
]

# ==============================================================================================================
# Passages for summarization and retrieval-augmented QA: (passage, questions answerable from it)
# ==============================================================================================================
PASSAGES = [
    ("A group of parents in a small town has opened a tool library in an empty shop on the high street. Members pay "
     "a small yearly fee and can borrow drills, ladders, garden tools and sewing machines for up to a week. The "
     "organizers say the idea is to save money and cut waste, since most people use a drill for only a few minutes "
     "a year. In its first six months, the tool library signed up more than four hundred members.",
     ["How long can members borrow an item?", "Why did the organizers start the tool library?",
      "How many members joined in the first six months?"]),
    ("Octopuses have three hearts and blue blood. Two of the hearts pump blood through the gills, while the third "
     "sends it to the rest of the body. Their blood is blue because it carries oxygen with a copper-based molecule "
     "called hemocyanin. This molecule works well in cold water with little oxygen, which helps explain where many "
     "octopus species live.",
     ["Why is octopus blood blue?", "What do two of the three hearts do?"]),
    ("Heavy snow closed the main mountain pass on Tuesday, leaving dozens of lorries stuck on both sides. Road crews "
     "worked through the night with snowploughs, and one lane reopened early on Wednesday morning. Officials asked "
     "drivers to carry chains and to check the road report before setting out. More snow is expected over the "
     "weekend.",
     ["When did one lane reopen?", "What did officials ask drivers to do?", "What is the forecast for the weekend?"]),
    ("Researchers followed a group of office workers for a year to study the effect of short walking breaks. "
     "Workers who took a five-minute walk every hour reported less back pain and more energy in the afternoon than "
     "those who stayed seated. The walkers did not get less work done; several said they concentrated better. The "
     "team now wants to repeat the study with a larger group.",
     ["How long were the walking breaks?", "Did the walkers get less work done?",
      "What does the research team want to do next?"]),
    ("The first successful powered aeroplane flight took place in December 1903 near Kitty Hawk, North Carolina. "
     "Orville Wright piloted the aircraft for twelve seconds and covered about 37 metres. The brothers made three "
     "more flights that day, and the longest lasted nearly a minute. Only a handful of people saw it, and few "
     "newspapers reported it accurately at first.",
     ["Who piloted the first flight?", "How long did the longest flight that day last?",
      "How far did the first flight go?"]),
    ("A family-run ice cream shop has started selling flavours made with vegetables, such as sweet potato and "
     "beetroot with honey. The owner says she wanted to surprise customers and use produce from nearby farms. At "
     "first sales were slow, but the beetroot flavour is now the shop's second best seller after chocolate. She "
     "plans to add a carrot and ginger flavour next month.",
     ["Why did the owner create vegetable flavours?", "Which flavour sells best?",
      "What new flavour is planned?"]),
    ("Volunteers counted the birds in a city park over one weekend in spring. They recorded forty-two species, "
     "including a pair of kingfishers that had not been seen there for over a decade. The park's new pond, dug two "
     "years ago, is thought to be the main reason water birds have returned. The count will be repeated every spring "
     "to track changes.",
     ["How many species were recorded?", "Why are water birds thought to have returned?",
      "How often will the count take place?"]),
    ("A new app lets hikers download trail maps before leaving home, so they can find their way without a phone "
     "signal. The app also records the route as you walk and can send your last known position to a friend once "
     "you reach an area with coverage. Rescue teams have welcomed the feature, saying it could shorten searches for "
     "lost walkers. The basic version is free, while offline satellite images cost a small monthly fee.",
     ["What can the app send to a friend?", "Which feature costs money?", "Why do rescue teams like the app?"]),
    ("A primary school has replaced its Friday afternoon lessons with a weekly 'maker hour', in which children build "
     "things from cardboard, string and old electronics. Teachers noticed that pupils who were quiet in normal "
     "lessons often took the lead during these sessions. The school now shows the best projects in the entrance hall "
     "each month. Parents are invited to a showcase at the end of every term.",
     ["What materials do the children use?", "What did teachers notice about quiet pupils?",
      "When are parents invited to see the projects?"]),
    ("Mars has the tallest known volcano in the solar system, Olympus Mons, which rises about 22 kilometres above "
     "the surrounding plains. That is more than twice the height of Mount Everest above sea level. The volcano is so "
     "wide that a person standing at its edge could not see the summit, which would be hidden beyond the horizon. "
     "Scientists think it grew so large because Mars has no moving tectonic plates.",
     ["How tall is Olympus Mons?", "Why could the volcano grow so large?",
      "Why could a person at the edge not see the summit?"]),
    ("In many parts of Japan, trains are known for running almost exactly on time. When a train on one line left "
     "twenty seconds early, the railway company issued a public apology. Staff are trained to point at signals and "
     "call out their checks aloud, a habit said to reduce mistakes. Visitors are often surprised by how quiet the "
     "carriages are during the rush hour.",
     ["Why did the railway company apologize?", "What habit is said to reduce mistakes?"]),
    ("The annual kite festival on the beach drew record crowds this year, with more than fifteen thousand visitors. "
     "Teams from six countries flew giant kites shaped like whales, dragons and even a bicycle. Strong winds on "
     "Sunday forced the organizers to cancel the night display of lit kites. Next year's festival will add a "
     "workshop where children can make their own kites.",
     ["Why was the night display cancelled?", "What will be added next year?",
      "How many countries sent teams?"]),
    ("Honeybees tell each other where to find flowers through a movement known as the waggle dance. A bee that has "
     "found food walks in a figure-of-eight on the honeycomb, shaking its body during the straight part. The angle "
     "of that straight run shows the direction of the food relative to the sun, and its length shows the distance. "
     "Other bees follow the dancer closely to learn the route.",
     ["What does the length of the straight run show?", "How do other bees learn the route?",
      "What does the angle of the run indicate?"]),
    ("The price of coffee beans has risen sharply over the past year after poor harvests in several growing "
     "regions. Dry weather reduced yields, while higher shipping costs added to the problem. Many cafés have raised "
     "the price of a cup slightly, and some supermarkets now sell smaller bags. Analysts expect prices to ease once "
     "the next harvest arrives, if the weather improves.",
     ["What caused the poor harvests?", "How have supermarkets responded?", "When might prices ease?"]),
    ("A seventy-year-old woman has completed her first marathon, finishing in just under six hours. She started "
     "running at sixty-five after her doctor suggested more exercise. Her training included three short runs a week "
     "and one long run on Sundays. She said the hardest part was not the distance but learning to eat and drink "
     "while running.",
     ["At what age did she start running?", "What did she find hardest?", "What did her training involve?"]),
    ("Sound travels about four times faster in water than in air. That is one reason whales can hear each other "
     "over very long distances. Sound moves even faster through solids such as steel. Its speed depends on how "
     "stiff a material is and how tightly its particles are packed.",
     ["How much faster does sound travel in water than in air?", "What does the speed of sound depend on?"]),
    ("A city has introduced free bus travel for everyone under eighteen. The aim is to help families with costs and "
     "to reduce the number of parents driving children to school. In the first three months, bus use among "
     "teenagers rose by almost a third. Some drivers say the buses are now crowded at school times, and the city is "
     "considering extra services.",
     ["Who can travel for free?", "What problem have drivers reported?", "By how much did bus use rise?"]),
    ("Archaeologists digging ahead of a new road discovered the remains of a Roman farmhouse. Among the finds were "
     "coins, pieces of painted plaster and a small bronze figure of a dog. The building appears to have been used "
     "for about two hundred years before it was abandoned. The road will still be built, but its route has been "
     "moved slightly to protect part of the site.",
     ["What objects were found?", "How has the road project changed?", "How long was the building in use?"]),
    ("Many people keep bread in the fridge to keep it fresh, but this usually makes it go stale faster. At cool "
     "temperatures, the starch in bread crystallizes more quickly, making it hard and dry. Bread keeps better at "
     "room temperature in a paper or cloth bag for a few days. For longer storage, freezing slices is the best "
     "option, since they can be toasted straight from the freezer.",
     ["Why does bread go stale faster in the fridge?", "What is the best way to store bread for a long time?"]),
    ("The first text message was sent in December 1992. It went from a computer to a mobile phone and simply said "
     "'Merry Christmas'. At the time, phones could not easily type messages, and few people expected texting to "
     "catch on. Within ten years, billions of text messages were being sent around the world every month.",
     ["What did the first text message say?", "What kind of device sent it?"]),
    ("Some trees in a forest can share nutrients through underground networks of fungi. The fungi wrap around tree "
     "roots and receive sugars from the trees, while helping the trees take up water and minerals. Scientists have "
     "found that older trees may pass resources to young ones growing in the shade. How much the trees really "
     "benefit from these exchanges is still debated.",
     ["What do the fungi receive from the trees?", "What is still debated?"]),
    ("A software company tried a four-day week for six months while keeping salaries the same. Staff had to finish "
     "the same amount of work in fewer hours, so meetings were cut to thirty minutes and email was checked only "
     "twice a day. The company reported fewer sick days and no drop in sales. Some managers, however, said it was "
     "harder to reach colleagues on Fridays.",
     ["How were meetings changed?", "What happened to sales?", "What did some managers complain about?"]),
    ("Teenagers tend to fall asleep and wake up later than adults because their body clocks shift during puberty. "
     "Some schools have moved their start times about an hour later. Studies at these schools found that students "
     "slept longer, were late less often and in some cases got better grades. Critics say later starts can make "
     "life harder for working parents and for after-school sports.",
     ["Why do teenagers fall asleep later?", "What did studies of later start times find?",
      "What do critics say?"]),
    ("A small museum dedicated to typewriters has opened in a former post office. The collection includes more "
     "than three hundred machines, the oldest from the 1870s. Visitors may type on a dozen of them, and many leave "
     "short notes that are pinned to a wall. The founder, a retired journalist, collected most of the typewriters "
     "over forty years.",
     ["Where is the museum?", "Who founded it?", "How old is the oldest typewriter?"]),
    ("Farmers in a dry region have started using sensors buried in their fields to decide when to water their "
     "crops. The sensors measure soil moisture every hour and send the readings to a phone app. Early results "
     "suggest the farms are using about a quarter less water without any fall in their harvests. The equipment is "
     "expensive, but a local programme helps small farms share the cost.",
     ["How often do the sensors take readings?", "How much water are the farms saving?",
      "How are small farms helped with the cost?"]),
    ("Coral reefs cover less than one percent of the ocean floor, yet they are home to about a quarter of all "
     "marine species. Corals are animals that live in partnership with tiny algae, which give them food and colour. "
     "When the water becomes too warm, the corals push out the algae and turn white, a process known as bleaching. "
     "If temperatures return to normal quickly, the corals can recover.",
     ["What share of marine species live on reefs?", "What causes bleaching?", "Can bleached corals recover?"]),
    ("A town council has painted a dozen pedestrian crossings in bright patterns designed by local artists. The goal "
     "was to make the crossings easier to see and to brighten up grey streets. Early measurements show that drivers "
     "slow down slightly more at the painted crossings. The council plans to paint more if the designs survive the "
     "winter.",
     ["Who designed the patterns?", "What effect did the crossings have on drivers?",
      "What will decide whether more crossings are painted?"]),
    ("The zip fastener took decades to become popular. Early versions from the late 1800s often jammed or came "
     "apart, and people found them hard to use. An improved design in the 1910s made zips reliable, and they were "
     "first used widely on boots and tobacco pouches. Only in the 1930s did clothing makers begin to put zips in "
     "trousers and jackets.",
     ["What was wrong with early zips?", "Where were zips first widely used?",
      "When did clothing makers start using zips?"]),
    ("Every Saturday, a group of retired engineers runs a repair café in a church hall. People bring broken "
     "toasters, radios and bicycles, and the volunteers try to fix them for free while showing the owners what they "
     "are doing. Last year the group repaired more than six hundred items that would otherwise have been thrown "
     "away. The most common fault, they say, is a simple loose wire.",
     ["Who runs the repair café?", "How many items were repaired last year?", "What is the most common fault?"]),
    ("A comet bright enough to see without a telescope passed close to Earth last month. It was best seen just after "
     "sunset, low in the western sky, with a faint tail pointing away from the Sun. Astronomers say the comet takes "
     "about eighty thousand years to orbit the Sun, so it will not return in our lifetimes. Amateur photographers "
     "shared thousands of pictures of it online.",
     ["When was the comet best seen?", "Why will it not return in our lifetimes?"]),
    ("Children who grow up speaking two languages often switch between them in the middle of a sentence. For a long "
     "time this was seen as a sign of confusion, but researchers now think it shows skill. Bilingual children "
     "usually pick the word that best fits what they mean, or the language their listener understands. By school "
     "age, most can keep the two languages apart when they need to.",
     ["How did people once view language switching?", "What do researchers think now?"]),
    ("Chilli peppers taste hot because they contain a chemical called capsaicin. It binds to the same sensors in the "
     "mouth that detect heat, so the brain reacts as if the mouth were burning. Drinking water does not help much, "
     "because capsaicin does not dissolve well in water. Milk works better, since a protein in it helps wash the "
     "chemical away.",
     ["Why do chilli peppers taste hot?", "Why does milk help more than water?"]),
    ("The town recorded its hottest day ever last Thursday, when the temperature reached 41 degrees Celsius. Public "
     "swimming pools stayed open late, and several offices let staff start work early to avoid the afternoon heat. "
     "Doctors reminded people to drink water regularly and to check on elderly neighbours. Cooler air is expected "
     "to arrive by the end of the week.",
     ["What temperature was reached?", "How did offices respond to the heat?", "What did doctors advise?"]),
    ("A village choir that started with eight members in a kitchen now has more than sixty singers. Rehearsals moved "
     "first to the school gym and then to the old cinema, which the choir rents every Wednesday evening. Nobody has "
     "to audition, and many members had never sung in public before joining. This winter the choir will perform at "
     "three hospitals.",
     ["Where does the choir rehearse now?", "Do singers have to audition?", "Where will the choir perform?"]),
]
SUMMARY_WORDS = [15, 20, 25, 30, 40, 50, 60]
SUMMARY_TAILS = ["", " Do not add anything that is not in the text.", " Keep the most important number.",
                 " Use plain language.", " Write it in the present tense.", " Keep a neutral tone."]
SUMMARY_READERS = ["a ten-year-old", "a busy manager", "a newspaper reader skimming the page", "a radio listener",
                   "someone who speaks English as a second language"]
_TEXTS_P = [p for p, _ in PASSAGES]
_QA_PAIRS = [(i, p, q) for i, (p, qs) in enumerate(PASSAGES) for q in qs]

SUMMARIZATION_TEMPLATES = [
    _t("Summarize this passage in one sentence.{tail}\n\n{p}", tail=SUMMARY_TAILS, p=_TEXTS_P),
    _t("Give me a {n}-sentence summary of the following text:\n\n{p}", n=["two", "three"], p=_TEXTS_P),
    _t("Write a short headline for this news item.{tail}\n\n{p}", tail=SUMMARY_TAILS, p=_TEXTS_P),
    _t("Summarize the key points below as {n} bullet points.\n\n{p}", n=NUMBER_WORDS[:3], p=_TEXTS_P),
    _t("Give a TL;DR of this text: {p}", p=_TEXTS_P),
    _t("Read the text and summarize it for {reader}.\n\n{p}", reader=SUMMARY_READERS, p=_TEXTS_P),
    _t("What is the main point of this passage? Answer in no more than {w} words.\n\n{p}", w=SUMMARY_WORDS,
       p=_TEXTS_P),
    _t("Condense this into a summary short enough for a single social media post.\n\n{p}", p=_TEXTS_P),
    _t("Summarize the following in under {w} words: {p}", w=SUMMARY_WORDS, p=_TEXTS_P),
    _t("Write a one-paragraph abstract of this text.{tail}\n\n{p}", tail=SUMMARY_TAILS, p=_TEXTS_P),
    _t("Text: {p}\n\nSummarize the text above in your own words.", p=_TEXTS_P),
    _t("Please boil this down to its single most important fact.\n\n{p}", p=_TEXTS_P),
    _t("Give this passage a title and a one-sentence summary.{tail}\n\n{p}", tail=SUMMARY_TAILS, p=_TEXTS_P),
    _t("Summarize the passage below, then name one question it leaves unanswered.\n\n{p}", p=_TEXTS_P),
    _t("Turn this passage into a news brief of about {w} words.\n\n{p}", w=SUMMARY_WORDS, p=_TEXTS_P),
    _t("Who, what, where and when? Answer those four questions about this passage, then sum it up in one line.\n\n"
       "{p}", p=_TEXTS_P),
    _t("Summarize each of these two passages in one sentence.\n\nFirst passage: {p1}\n\nSecond passage: {p2}",
       derive=lambda f: dict(zip(("p1", "p2"), f["pp"])), pp=_perms(_TEXTS_P, 2)),
]

# ==============================================================================================================
# Retrieval-augmented QA
# ==============================================================================================================


def _rag(f: dict) -> dict:
    _, p, q = f["pq"]
    return dict(p=p, q=q, q_lc=_lc(q))


def _rag2(f: dict) -> dict:
    """The relevant passage plus one other, in either order."""
    i, p, q = f["pq"]
    other = _TEXTS_P[(i + f["shift"]) % len(_TEXTS_P)]
    first, second = (p, other) if f["first"] else (other, p)
    return dict(p1=first, p2=second, q=q)


RAG_TEMPLATES = [
    _t("Use the context below to answer the question.\n\nContext: {p}\n\nQuestion: {q}", derive=_rag, pq=_QA_PAIRS),
    _t("Answer the question using only the information in this passage.\n\nPassage: {p}\n\nQuestion: {q}",
       derive=_rag, pq=_QA_PAIRS),
    _t("Read the following text and answer: {q}\n\n{p}", derive=_rag, pq=_QA_PAIRS),
    _t("{p}\n\nBased on the text above, {q_lc}", derive=_rag, pq=_QA_PAIRS),
    _t("Document:\n{p}\n\nAccording to the document, {q_lc}", derive=_rag, pq=_QA_PAIRS),
    _t("Here is some background information: {p}\nUsing only that information, {q_lc}", derive=_rag, pq=_QA_PAIRS),
    _t("Given this passage, answer in one sentence: {q}\n\nPassage: {p}", derive=_rag, pq=_QA_PAIRS),
    _t("Context: {p}\nQuestion: {q}\nAnswer briefly, and say so if the context does not contain the answer.",
       derive=_rag, pq=_QA_PAIRS),
    _t("I found this text: \"{p}\" {q}", derive=_rag, pq=_QA_PAIRS),
    _t("Answer from the passage and quote the sentence that supports your answer.\n\n{p}\n\nQuestion: {q}",
       derive=_rag, pq=_QA_PAIRS),
    _t("Reference text: {p}\n\nQ: {q}\nA:", derive=_rag, pq=_QA_PAIRS),
    _t("Using the article below, {q_lc}\n\nArticle: {p}", derive=_rag, pq=_QA_PAIRS),
    _t("Only use the following notes to answer. If the notes do not say, reply \"not stated\".\n\nNotes: {p}\n\n"
       "Question: {q}", derive=_rag, pq=_QA_PAIRS),
    _t("{p}\n\nQuestion: {q} Explain your answer with reference to the passage.", derive=_rag, pq=_QA_PAIRS),
    _t("Two documents are given below. Answer the question using whichever one is relevant, and say which one you "
       "used.\n\nDocument 1: {p1}\n\nDocument 2: {p2}\n\nQuestion: {q}", derive=_rag2, pq=_QA_PAIRS,
       shift=range(1, len(_TEXTS_P)), first=[True, False]),
    _t("Search results:\n[1] {p1}\n[2] {p2}\n\nUsing the search results, answer: {q}", derive=_rag2, pq=_QA_PAIRS,
       shift=range(1, len(_TEXTS_P)), first=[True, False]),
]

# ==============================================================================================================
# Factual QA
# ==============================================================================================================
COUNTRIES = [("Kenya", "Nairobi"), ("Canada", "Ottawa"), ("Peru", "Lima"), ("Japan", "Tokyo"),
             ("Australia", "Canberra"), ("Egypt", "Cairo"), ("Poland", "Warsaw"), ("Vietnam", "Hanoi"),
             ("Chile", "Santiago"), ("Morocco", "Rabat"), ("Hungary", "Budapest"), ("Thailand", "Bangkok"),
             ("Brazil", "Brasília"), ("Ghana", "Accra"), ("Turkey", "Ankara"), ("Argentina", "Buenos Aires"),
             ("Ireland", "Dublin"), ("Mexico", "Mexico City"), ("New Zealand", "Wellington"), ("Finland", "Helsinki"),
             ("Indonesia", "Jakarta"), ("Ethiopia", "Addis Ababa"), ("Colombia", "Bogotá"), ("Greece", "Athens"),
             ("South Korea", "Seoul"), ("Iceland", "Reykjavik"), ("Nepal", "Kathmandu"), ("Austria", "Vienna"),
             ("Senegal", "Dakar"), ("Switzerland", "Bern")]
ELEMENTS = ["oxygen", "iron", "gold", "sodium", "potassium", "silver", "lead", "tin", "copper", "helium", "neon",
            "carbon", "nitrogen", "calcium", "mercury", "tungsten", "zinc", "sulfur", "chlorine", "uranium",
            "aluminium", "magnesium", "silicon", "phosphorus", "iodine"]
BOOKS = ["Don Quixote", "One Hundred Years of Solitude", "Moby-Dick", "War and Peace", "Things Fall Apart",
         "The Great Gatsby", "Frankenstein", "Crime and Punishment", "The Little Prince", "Jane Eyre",
         "To Kill a Mockingbird", "The Odyssey", "Nineteen Eighty-Four", "The Hobbit", "Beloved", "Madame Bovary",
         "The Tale of Genji", "Wuthering Heights", "The Old Man and the Sea", "Great Expectations", "Anna Karenina",
         "Les Misérables", "The Metamorphosis", "Middlemarch", "Brave New World"]
PAINTINGS = ["the Mona Lisa", "The Starry Night", "The Persistence of Memory", "Guernica", "The Birth of Venus",
             "Girl with a Pearl Earring", "The Night Watch", "The Great Wave off Kanagawa", "The Scream",
             "Las Meninas", "American Gothic", "The Kiss"]
CREDITS = ["inventing the telephone", "creating the World Wide Web", "inventing dynamite",
           "developing the first polio vaccine", "discovering penicillin",
           "proposing that the Earth moves around the Sun", "bringing movable-type printing to Europe",
           "describing the double-helix structure of DNA", "publishing the first periodic table of the elements",
           "discovering radioactivity", "building the first successful powered aeroplane",
           "formulating the three laws of motion", "devising the theory of evolution by natural selection",
           "inventing the phonograph"]
ANIMALS = ["a spider", "a beetle", "a crab", "a horse", "an ostrich", "a lobster", "a butterfly", "a scorpion"]
GENERAL_QUESTIONS = [
    "How many days are there in a leap year?", "At what temperature does water boil at sea level, in Celsius?",
    "Which planet is closest to the Sun?", "What is the longest river in Africa?",
    "How many bones are there in the adult human body?", "Which gas do plants take in from the air?",
    "In which year did the First World War end?", "What is the highest mountain on Earth?",
    "Who was the first person to walk on the Moon?", "What is the smallest prime number?",
    "Which is the largest ocean on Earth?", "How many minutes are there in a day?",
    "At what temperature does water freeze, in Fahrenheit?", "Which organ pumps blood around the body?",
    "What is the hardest natural substance?", "Which country is the kangaroo native to?",
    "How many players does a football team have on the pitch?", "What currency is used in Japan?",
    "Which instrument has 88 keys?", "Who developed the theory of general relativity?",
    "What is the largest hot desert in the world?", "How many continents are there?",
    "What is the main ingredient of guacamole?", "Which vitamin does the skin make in sunlight?",
    "Roughly how fast does light travel?", "Who was the first woman to win a Nobel Prize?",
    "What is the square root of 144?", "Which planet is famous for its rings?", "What do bees collect from flowers?",
    "How long does it take the Earth to spin once on its axis?", "Who composed The Four Seasons?",
    "What is the largest animal that has ever lived?", "Which metal is liquid at room temperature?",
    "In which year did the Berlin Wall fall?", "What is the longest bone in the human body?",
    "Which blood type is known as the universal donor?", "What are the three primary colours of light?",
    "In which year did the Titanic sink?", "How many sides does a pentagon have?",
    "What is the chemical formula of water?", "Which language has the most native speakers?",
    "How many strings does a standard guitar have?", "What is the capital of the Canadian province of Quebec?",
    "Who painted the ceiling of the Sistine Chapel?", "What is the freezing point of water in Kelvin?",
    "How many hearts does an octopus have?", "Which planet has the shortest year?",
    "What is the tallest animal in the world?", "In which country were the ancient Olympic Games held?",
    "How many weeks are there in a year?", "Which scientist proposed the three laws of planetary motion?",
    "What is the most abundant gas in Earth's atmosphere?", "Who wrote the play Romeo and Juliet?",
    "Which sea lies between Europe and Africa?", "How many teeth does an adult human usually have?",
    "What is the boiling point of water in Fahrenheit?", "Which animal is known as the ship of the desert?",
    "What does a thermometer measure?", "Which continent is the Sahara Desert on?",
    "What is the name of the galaxy we live in?", "How many zeros are there in one million?",
    "Which fruit is dried to make raisins?", "What is the largest organ of the human body?",
    "Who was the first emperor of Rome?", "Which river flows through Paris?",
    "What is the main language spoken in Brazil?", "How many degrees are there in a right angle?",
    "Which bird is the fastest in a dive?", "What is a baby kangaroo called?",
    "Which element has the atomic number 1?", "In which city is the Colosseum?",
    "What is the opposite of a nocturnal animal?", "How many lines does a sonnet usually have?",
    "What was the name of the ship on which Charles Darwin sailed around the world?",
    "Which country gave the Statue of Liberty to the United States?",
]
QA_TAILS = ["", " Answer in one sentence.", " Please keep it short.", " Add one interesting related fact.",
            " Explain briefly how you know.", " Give just the answer.", " How confident are you?",
            " Answer for a child."]

QA_TEMPLATES = [
    _t("What is the capital of {country}?{tail}", derive=lambda f: dict(country=f["cc"][0]), cc=COUNTRIES,
       tail=QA_TAILS),
    _t("Which country has {capital} as its capital?{tail}", derive=lambda f: dict(capital=f["cc"][1]),
       cc=COUNTRIES, tail=QA_TAILS),
    _t("On which continent is {country}?{tail}", derive=lambda f: dict(country=f["cc"][0]), cc=COUNTRIES,
       tail=QA_TAILS),
    _t("Which language or languages are mainly spoken in {country}?{tail}", derive=lambda f: dict(country=f["cc"][0]),
       cc=COUNTRIES, tail=QA_TAILS),
    _t("What is the chemical symbol for {element}?{tail}", element=ELEMENTS, tail=QA_TAILS),
    _t("Is {element} a metal, a non-metal or a metalloid?{tail}", element=ELEMENTS, tail=QA_TAILS),
    _t("Who is the author of \"{book}\"?{tail}", book=BOOKS, tail=QA_TAILS),
    _t("Roughly when was \"{book}\" first published?{tail}", book=BOOKS, tail=QA_TAILS),
    _t("Who painted {painting}?{tail}", painting=PAINTINGS, tail=QA_TAILS),
    _t("Who is usually credited with {credit}?{tail}", credit=CREDITS, tail=QA_TAILS),
    _t("How many legs does {animal} have?{tail}", animal=ANIMALS, tail=QA_TAILS),
    _t("{q}{tail}", q=GENERAL_QUESTIONS, tail=QA_TAILS),
    _t("Quick question: {q}", q=GENERAL_QUESTIONS),
    _t("Trivia time! {q}", q=GENERAL_QUESTIONS),
    _t("Settle a friendly argument for us: {q}", q=GENERAL_QUESTIONS),
    _t("Here is a question from a pub quiz: {q} What is the answer?", q=GENERAL_QUESTIONS),
    _t("I was helping my kid with homework and got stuck. {q}", q=GENERAL_QUESTIONS),
    _t("True or false, and why: the capital of {country} is {capital}.",
       derive=lambda f: dict(country=f["cc"][0], capital=f["cap"]), cc=COUNTRIES, cap=[c for _, c in COUNTRIES[:12]]),
]

# ==============================================================================================================
# The pool
# ==============================================================================================================
_BY_FAMILY = {
    "writing": WRITING_TEMPLATES,
    "roleplay": ROLEPLAY_TEMPLATES,
    "reasoning": REASONING_TEMPLATES,
    "math": MATH_TEMPLATES,
    "math_word_problems": WORD_PROBLEM_TEMPLATES,
    "coding": CODING_TEMPLATES,
    "code_editing": CODE_EDIT_TEMPLATES,
    "text_editing": TEXT_EDIT_TEMPLATES,
    "extraction": EXTRACTION_TEMPLATES,
    "stem": STEM_TEMPLATES,
    "humanities": HUMANITIES_TEMPLATES,
    "translation": TRANSLATION_TEMPLATES,
    "summarization": SUMMARIZATION_TEMPLATES,
    "rag": RAG_TEMPLATES,
    "qa": QA_TEMPLATES,
}
FAMILIES: tuple[str, ...] = tuple(_BY_FAMILY)
_TEMPLATES: tuple[_Template, ...] = tuple(t for templates in _BY_FAMILY.values() for t in templates)
for _family, _templates in _BY_FAMILY.items():
    for _template in _templates:
        _template.family = _family
# Every template numbers its prompts 0 .. size-1 and no two (template, number) pairs give the same text, so the
# pool holds exactly this many distinct prompts.
CAPACITY: int = sum(t.size for t in _TEMPLATES)


def template_count(family: str | None = None) -> int:
    """How many templates the pool composes from (all families, or one)."""
    return len(_TEMPLATES) if family is None else len(_BY_FAMILY[family])


def labelled_prompts(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` distinct ``(family, prompt)`` pairs: each draw picks a family uniformly, then one of its templates
    uniformly, then a not-yet-used composition of that template (a lazy Fisher-Yates shuffle per template, so no
    draw is ever rejected). The list depends only on ``seed``, and a shorter list is a prefix of a longer one."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    if n > CAPACITY:
        raise ValueError(f"n={n} exceeds the {CAPACITY} distinct prompts the instruction pool can compose")
    rng = random.Random(seed)
    live = {f: list(range(len(ts))) for f, ts in _BY_FAMILY.items()}
    families = list(FAMILIES)
    left = {}      # (family, template index) -> compositions not drawn yet
    swaps = {}     # (family, template index) -> sparse Fisher-Yates swap table
    out: list[tuple[str, str]] = []
    while len(out) < n:
        fi = rng.randrange(len(families))
        family = families[fi]
        ti = rng.randrange(len(live[family]))
        key = (family, live[family][ti])
        template = _BY_FAMILY[family][key[1]]
        m = left.get(key, template.size)
        table = swaps.setdefault(key, {})
        j = rng.randrange(m)
        index = table.get(j, j)
        table[j] = table.pop(m - 1, m - 1)
        left[key] = m - 1
        if m == 1:
            live[family].pop(ti)
            if not live[family]:
                families.pop(fi)
        out.append((family, template.render(index)))
    return out


def varied_prompts(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct chat instructions, roughly even across ``FAMILIES``; the same list for the same seed.

    Raises ``ValueError`` when ``n`` exceeds ``CAPACITY``, the number of distinct prompts the pool can compose."""
    return [prompt for _, prompt in labelled_prompts(n, seed)]
