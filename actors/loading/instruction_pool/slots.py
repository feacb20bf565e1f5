"""Slot value lists shared by several task families of the instruction pool: people's names (and ordered pairs and
trios of them), audiences, cities, months, dates, weekdays and small number words.
"""
from __future__ import annotations

import itertools


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
