"""The coding and code-editing families of the instruction pool: the coding slot lists (function tasks, SQL and shell
tasks, Python classes, ...) with ``CODING_TEMPLATES``, and the wraps and helpers that pair a snippet of
``code_snippets`` with an instruction into ``CODE_EDIT_TEMPLATES``, in pool order.
"""
from __future__ import annotations

from .code_snippets import SNIPPETS
from .composer import _sub, _t, _Template


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
# Code editing: one snippet of code_snippets.py plus an instruction, in one of several wraps.
# ==============================================================================================================

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
