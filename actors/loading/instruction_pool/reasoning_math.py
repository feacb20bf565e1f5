"""The reasoning, maths and maths-word-problem families of the instruction pool: their slot lists (comparatives,
unit pairs, seeded data sets, shop items, ...), the helpers that derive further fields from them, and
``REASONING_TEMPLATES``, ``MATH_TEMPLATES`` and ``WORD_PROBLEM_TEMPLATES``, in pool order.
"""
from __future__ import annotations

import itertools
import math
import random

from .composer import _join, _t
from .slots import NAMES, PAIRS, TRIOS, WEEKDAYS, WOMEN, _perms


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
