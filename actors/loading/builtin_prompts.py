"""The prompt set the draft is distilled on: chat-domain requests composed from
templates and topic lists written for specsweep (nothing downloaded).

It spans the Spec-Bench task families (writing, roleplay, reasoning, maths,
coding, extraction, STEM, humanities, translation, summarization, QA, RAG) but
shares no text with the ``sample`` questions, which stay held out for
``bench/draft.py``. Composition is deterministic for a given seed.
"""
from __future__ import annotations

import random

TOPICS = [
    "photosynthesis", "the water cycle", "black holes", "the French Revolution", "machine learning",
    "climate change", "the immune system", "volcanoes", "the Roman Empire", "renewable energy",
    "the stock market", "plate tectonics", "vaccines", "the printing press", "electric cars",
    "honey bees", "the internet", "coral reefs", "the Renaissance", "inflation", "sleep",
    "the human heart", "recycling", "the Moon landing", "earthquakes", "jazz music", "chess",
    "the Silk Road", "rainforests", "quantum computers", "the Olympic Games", "bread baking",
    "urban gardening", "public libraries", "ocean tides", "solar panels", "the Great Wall of China",
    "dinosaurs", "social media", "remote work", "meditation", "coffee", "antibiotics", "glaciers",
    "democracy", "the periodic table", "airplanes", "video games", "time management", "volunteering",
    "the solar system", "DNA", "the Industrial Revolution", "minimalism", "friendship", "wind turbines",
    "marathon training", "budgeting", "first aid", "desert animals", "ancient Egypt", "batteries",
]
AUDIENCES = ["a ten-year-old", "a high school student", "a busy manager", "a grandparent", "a new employee",
             "a university freshman", "someone who has never heard of it"]
WRITING = [
    "Write a short blog post about {t}.", "Write a persuasive paragraph arguing that everyone should learn about {t}.",
    "Write a haiku about {t}.", "Write a short story that involves {t}.", "Draft a friendly email inviting colleagues to a talk on {t}.",
    "Write a product description for a board game about {t}.", "Compose a limerick about {t}.",
    "Write an opening paragraph for a news article about {t}.", "Write a motivational speech that mentions {t}.",
]
ROLEPLAY = [
    "Pretend you are a tour guide and introduce {t} to visitors.", "You are a detective. Explain how {t} helped you solve a case.",
    "Act as a teacher and give a two-minute lesson on {t}.", "Imagine you are a pirate captain describing {t} to your crew.",
    "You are a museum curator. Describe an exhibit about {t}.", "Role-play a radio host announcing a show about {t}.",
]
EXPLAIN = [
    "Explain {t} to {a}.", "What are the three most important facts about {t}?", "Why does {t} matter today?",
    "Give me a simple overview of {t}.", "What are common misconceptions about {t}?", "Describe the history of {t} in a few sentences.",
    "List the pros and cons of {t}.", "How would you teach {t} to {a}?", "What questions should I ask to understand {t}?",
    "Compare {t} and {u}.", "What is the connection between {t} and {u}?",
]
CODING = [
    "Write a Python function that returns the {n}th Fibonacci number.", "Write a Python function that checks whether a string is a palindrome.",
    "Write a Python function that counts the vowels in a sentence.", "Write a function in JavaScript that reverses an array without using reverse().",
    "Explain what a hash map is and give a Python example.", "Write a SQL query that finds the {n} most recent orders in a table called orders.",
    "Write a Python class for a bank account with deposit and withdraw methods.", "What is the difference between a list and a tuple in Python?",
    "Write a Python function that merges two sorted lists.", "Explain recursion with a short code example.",
    "Write a Python script that reads a CSV file and prints the average of the column named price.",
    "Find the bug: def add(a, b): return a - b", "Write a function that returns the largest of {n} numbers given in a list.",
]
MATH = [
    "What is {x} plus {y}?", "What is {x} times {y}?", "A shop sells pens for {x} cents each. How much do {y} pens cost?",
    "If a train travels {x} kilometres in {y} hours, what is its average speed?",
    "Tom has {x} apples and gives away {y}. How many are left? Explain step by step.",
    "Solve for z: {y}z + {x} = {s}.", "What is {p} percent of {x}?", "Is {x} a prime number? Explain.",
    "A rectangle is {x} metres long and {y} metres wide. What are its area and perimeter?",
    "Sara reads {y} pages a day. How many days does she need for a book of {x} pages?",
]
REASONING = [
    "If all bloops are razzies and all razzies are lazzies, are all bloops lazzies? Explain.",
    "I have {y} brothers and each brother has one sister. How many children are in the family if I am a girl?",
    "A bat and a ball cost {x} cents in total. The bat costs {y} cents more than the ball. How much is the ball?",
    "Which is heavier, a kilogram of feathers or a kilogram of iron? Explain.",
    "If today is Tuesday, what day will it be in {x} days?",
    "Five people shake hands with each other once. How many handshakes happen?",
]
LANGS = ["French", "Spanish", "German", "Italian", "Portuguese"]
SENTENCES = [
    "The weather is nice today.", "Where is the train station?", "I would like a cup of tea, please.",
    "My brother works at the hospital.", "We are going to the beach tomorrow.", "This book is very interesting.",
    "Can you help me find my keys?", "The children are playing in the park.", "I have been learning to cook.",
    "The museum opens at nine in the morning.",
]
PASSAGE = [
    "{T} has been studied for many years. Researchers have found that it affects daily life in several ways, "
    "from the economy to health. Some experts believe it will become even more important in the next decade, "
    "while others argue that its effects are often exaggerated. Governments and schools have started programs to "
    "help people understand it better.",
    "Last week the town council met to discuss {t}. Several residents spoke in favour of new funding, pointing to "
    "benefits for young people. Others worried about costs and asked for a detailed plan. The council agreed to "
    "publish a report next month and to hold another public meeting before any decision.",
]
SUMMARY = ["Summarize the following text in one sentence.\n\n{p}", "Give three bullet points that capture this passage.\n\n{p}",
           "What is the main idea of this text?\n\n{p}"]
EXTRACT = ["Extract every year mentioned in this sentence: The bridge opened in {y1}, was repaired in {y2} and closed in {y3}.",
           "List the names in this sentence: {n1} met {n2} and {n3} at the station.",
           "Return JSON with keys name and age for: {n1} is {x} years old."]
RAG = ["Use the context to answer the question.\nContext: {p}\nQuestion: What did the council agree to do?",
       "Read the document and answer.\nDocument: {p}\nQuestion: What do some experts believe about {t}?"]
NAMES = ["Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Giulia", "Hiro", "Ines", "Jonas"]


def distill_prompts(n: int = 1200, seed: int = 0) -> list[str]:
    """``n`` distinct prompts, the same list for the same seed."""
    rng = random.Random(seed)
    makers = [WRITING, ROLEPLAY, EXPLAIN, EXPLAIN, CODING, MATH, REASONING, "translate", SUMMARY, EXTRACT, RAG]
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        kind = rng.choice(makers)
        t, u = rng.sample(TOPICS, 2)
        x, y = rng.randint(3, 99), rng.randint(2, 12)
        fill = dict(t=t, u=u, T=t[0].upper() + t[1:], a=rng.choice(AUDIENCES), n=rng.randint(3, 20), x=x, y=y,
                    s=x + y * rng.randint(1, 9), p=rng.choice([10, 15, 20, 25, 50]),
                    y1=rng.randint(1800, 1900), y2=rng.randint(1901, 1990), y3=rng.randint(1991, 2024),
                    n1=rng.choice(NAMES), n2=rng.choice(NAMES), n3=rng.choice(NAMES))
        if kind == "translate":
            text = f"Translate into {rng.choice(LANGS)}: {rng.choice(SENTENCES)}"
        else:
            if kind in (SUMMARY, RAG):
                fill["p"] = rng.choice(PASSAGE).format(**fill)
            text = rng.choice(kind).format(**fill)
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out
