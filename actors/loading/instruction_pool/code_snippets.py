"""The hand-written code snippets (Python, JavaScript, SQL) the instruction pool's code-editing family wraps with an
instruction: ``SNIPPETS`` (each with its language, a variable to rename and tags saying which instructions fit it)
and ``CODE_SNIPPETS``, their bare code in the same order.
"""
from __future__ import annotations


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
