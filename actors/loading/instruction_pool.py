"""A varied pool of chat instructions for self-distillation (``specsweep distill --prompt-set varied``): requests in
the Spec-Bench task families — writing, roleplay, reasoning, maths, coding, extraction, STEM, humanities,
translation (into and out of English), summarization, question answering, retrieval-style reading — plus code and
text editing, in many phrasings, composed from templates, topics, passages, sentences and snippets written for
specsweep. It shares no text with the ``sample`` questions (tests check that no six-word run is shared) and is
deterministic for a given seed. The built-in set (``actors/loading/builtin_prompts.py``) stays as it was, for the
heads it trained.
"""
from __future__ import annotations

import random
import re

from actors.loading.builtin_prompts import TOPICS as BASE_TOPICS

TOPICS = BASE_TOPICS + [
    "origami", "bicycle maintenance", "the Amazon river", "birdwatching", "tea ceremonies", "3D printing",
    "beekeeping", "the Cold War", "street food", "sign language", "lighthouses of the past", "cloud computing",
    "composting", "the Apollo program", "board games", "pottery", "space telescopes", "freshwater fishing",
    "opera", "car-free cities", "the metric system", "mountain rescue teams", "podcasts", "handwriting",
    "the Aztec civilization", "ice hockey", "wildfires", "typography", "sourdough starters", "the Mediterranean diet",
    "public transport", "cybersecurity", "noise pollution", "the Byzantine Empire", "solar eclipses", "crossword puzzles",
    "mangrove forests", "open-source software", "the history of money", "desalination", "tropical storms",
    "camping", "robot vacuum cleaners", "the Hubble constant", "museum design", "language learning", "night trains",
]
STEM = [
    "gravity", "friction", "electric current", "magnetism", "evaporation", "osmosis", "mitosis", "enzymes",
    "the greenhouse effect", "sound waves", "refraction of light", "static electricity", "buoyancy", "inertia",
    "kinetic energy", "potential energy", "nuclear fusion", "radioactivity", "the Doppler effect", "semiconductors",
    "binary numbers", "prime numbers", "probability", "the Pythagorean theorem", "compound interest", "logarithms",
    "vectors", "derivatives", "an algorithm", "a compiler", "machine code", "encryption", "a neural network",
    "photosynthesis in algae", "the nitrogen cycle", "plate boundaries", "erosion", "ocean currents", "the ozone layer",
    "antibodies", "viruses", "bacteria", "the nervous system", "blood pressure", "vitamins", "metabolism",
    "acids and bases", "chemical bonds", "catalysts", "the speed of light", "absolute zero", "entropy",
    "air pressure", "lightning", "rainbows", "tides and the Moon", "seasons on Earth", "a light-year",
    "the Big Bang", "exoplanets", "comets", "the water table", "soil formation", "fossils", "natural selection",
    "genes and DNA", "stem cells", "vaccination", "sleep cycles", "muscle growth", "hydraulics", "levers and pulleys",
    "the internal combustion engine", "batteries and cells", "transistors", "fiber optics", "GPS", "Wi-Fi",
    "a hash function", "recursion", "sorting algorithms", "databases", "operating systems", "cache memory",
]
HUMANITIES = [
    "the Magna Carta", "the Renaissance in Florence", "the abolition of slavery", "the invention of writing",
    "the Enlightenment", "the Meiji Restoration", "the fall of the Berlin Wall", "ancient Greek democracy",
    "the Protestant Reformation", "the Ottoman Empire", "the Harlem Renaissance", "the Mughal Empire",
    "the age of exploration", "the Industrial Revolution in Britain", "the women's suffrage movement",
    "utilitarianism", "stoicism", "existentialism", "the separation of powers", "human rights", "nationalism",
    "globalization", "urbanization", "the welfare state", "supply and demand", "opportunity cost", "free trade",
    "the role of museums", "oral traditions", "folk tales", "epic poetry", "impressionist painting", "baroque music",
    "the printing of newspapers", "propaganda", "civil disobedience", "the United Nations", "colonialism",
    "the Silk Road trade", "the Black Death", "feudalism", "the Marshall Plan", "the space race",
    "the rule of law", "freedom of speech", "cultural heritage", "migration", "linguistic diversity",
    "the history of the Olympic movement", "modern architecture", "the theory of evolution's reception",
]
AUDIENCES = ["a child", "a teenager", "a beginner", "an expert", "a busy parent", "a retired teacher", "a new student",
             "a tourist", "a colleague", "my grandmother", "someone learning English"]
LENGTHS = ["in one sentence", "in two sentences", "in three sentences", "in about fifty words", "briefly",
           "in detail", "as a bulleted list", "as a numbered list", "in simple words", "with an example"]
NAMES = ["Amara", "Ben", "Carlos", "Deepa", "Elif", "Finn", "Grace", "Hassan", "Isla", "Jamal", "Keiko", "Luca",
         "Maya", "Nikolai", "Olu", "Priya", "Quentin", "Rosa", "Sven", "Tariq", "Uma", "Victor", "Wen", "Yara", "Zoe"]
CITIES = ["Lagos", "Madrid", "Hanoi", "Toronto", "Nairobi", "Krakow", "Lima", "Osaka", "Dublin", "Cairo", "Perth",
          "Bergen", "Quito", "Tbilisi", "Marseille", "Chennai", "Vienna", "Santiago", "Reykjavik", "Austin"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
OBJECTS = ["a backpack", "a desk lamp", "a water bottle", "a pair of running shoes", "a wireless speaker",
           "a garden chair", "a kitchen scale", "a notebook", "a coffee grinder", "an umbrella", "a bicycle helmet",
           "a phone case", "a houseplant", "a wool scarf", "a travel mug"]
ROLES = ["a ship's captain", "a museum guide", "a medieval blacksmith", "a news reporter", "a park ranger",
         "a detective in 1920s London", "a robot learning to cook", "a librarian", "a mountain guide", "a time traveller",
         "a zookeeper", "a fashion designer", "a retired astronaut", "a street musician", "a baker at dawn",
         "a customer service agent", "a football coach", "a school principal", "an old fisherman", "a game show host"]

WRITING = [
    "Write a short poem about {t}.", "Write a four-line rhyme about {t}.", "Write a short story about {n1} and {t}.",
    "Write a blog post introduction about {t}.", "Write an email to {n1} inviting them to a workshop on {t}.",
    "Compose a thank-you note to {n1} for a gift of {o}.", "Write a product review of {o}.",
    "Write a product description for {o}.", "Write a cover letter for a job at a company that works on {t}.",
    "Write a diary entry about a rainy day in {c}.", "Write a speech for a school assembly about {t}.",
    "Draft a social media post announcing a talk on {t}.", "Write a short dialogue between {n1} and {n2} about {t}.",
    "Write a fable with a moral about {t}.", "Write a postcard from {c} to a friend.",
    "Write a motivational message for someone starting to learn about {t}.", "Write a tagline for a campaign about {t}.",
    "Write a limerick about {n1} from {c}.", "Write an apology email to {n1} for missing a meeting.",
    "Write a short newsletter paragraph about a new club for {t}.", "Please write an acrostic poem for the word {w}.",
    "Write a complaint letter about {o} that arrived broken.", "Write a one-paragraph mystery set in {c}.",
]
ROLEPLAY = [
    "You are {r}. Describe your typical day.", "Pretend to be {r} and give advice to a newcomer.",
    "Act as {r}. A visitor asks you about {t}. What do you say?", "You are {r}. Tell us about your biggest mistake.",
    "Role-play as {r} welcoming guests to {c}.", "Imagine you are {r} writing a letter home.",
    "You are {r}. Explain {t} in your own style.", "Pretend you are {r} and answer: what makes a good day?",
    "Stay in character as {r}: someone asks for directions in {c}.", "You are {r}. Give a short pep talk.",
    "Be {r} and describe the view from where you stand.", "As {r}, list three rules you always follow.",
]
REASONING = [
    "{n1} is older than {n2}, and {n2} is older than {n3}. Who is the youngest? Explain.",
    "If it takes {a} workers {b} hours to build a wall, how long would it take {c2} workers? Explain your reasoning.",
    "A box contains {a} red and {b} blue marbles. What is the chance of drawing a red one?",
    "{n1} has twice as many books as {n2}. Together they have {s3} books. How many does each have?",
    "There are {a} birds on a fence. {b} fly away and then {c2} come back. How many birds are on the fence?",
    "If every cat in the village is black and Tom is a cat in the village, what colour is Tom? Why?",
    "A clock shows {h}:00. What time will it show after {b} hours?",
    "Which number comes next: {a}, {a2}, {a3}, {a4}? Explain the pattern.",
    "{n1} finishes a race ahead of {n2} but behind {n3}. Who came first?",
    "Is the following argument valid? All birds have feathers. Penguins are birds. So penguins have feathers.",
    "A snail climbs {b} metres up a wall each day and slides back 1 metre each night. How many days to climb {a} metres?",
    "If the day after tomorrow is {d}, what day was yesterday?",
    "You have a 3-litre jug and a 5-litre jug. How can you measure exactly 4 litres?",
    "Three friends split a bill of {a} dollars equally. How much does each pay, and what is left over in cents?",
]
MATH = [
    "What is {a} multiplied by {b}?", "Calculate {a} + {b} × {c2}.", "What is {p} percent of {a2}?",
    "Solve for x: {b}x - {c2} = {a}.", "Solve the system: x + y = {a} and x - y = {b}.",
    "What is the area of a circle with radius {b} cm?", "Convert {a} kilometres to miles.",
    "What is the perimeter of a square with side {b} metres?", "Simplify the fraction {b2}/{a2}.",
    "What is the average of {a}, {b}, {c2} and {a2}?", "How many minutes are in {b} hours and {a} minutes?",
    "Find the next prime number after {a}.", "What is {a} squared minus {b} squared?",
    "Express {a}/{s3} as a decimal rounded to two places.", "Is {a2} divisible by {b}? Show the division.",
    "What is the volume of a box {a} cm by {b} cm by {c2} cm?", "Convert {a} degrees Celsius to Fahrenheit.",
]
WORD_PROBLEMS = [
    "{n1} saves {b} dollars a week. How many weeks until {n1} has {a2} dollars? Show your working.",
    "A recipe needs {b} eggs for {c2} people. How many eggs for {a} people? Think step by step.",
    "A car uses {b} litres of fuel per 100 km. How much fuel for a trip of {a2} km? Explain each step.",
    "{n1} bought {b} apples at {c2} cents each and paid with {a} dollars. What change did {n1} get? Show your steps.",
    "A train leaves {c} at {h}:00 and travels {a} km at {b}0 km/h. When does it arrive? Work it out step by step.",
    "A shirt costs {a} dollars and is on sale for {p} percent off. What is the sale price? Explain.",
    "A school has {a2} pupils and {p} percent walk to school. How many do not walk? Step by step, please.",
    "{n1} reads {b} chapters a day. A book has {a} chapters. On which day does {n1} finish? Show the reasoning.",
    "A tank holds {a2} litres and fills at {b} litres per minute. How long until it is full? Explain.",
    "{n1} and {n2} share {a2} stickers in the ratio {b}:{c2}. How many does each get? Show your working.",
]
CODE_TASKS = [
    "Write a Python function that {f}.", "Write a JavaScript function that {f}.", "How would you write code that {f}?",
    "Show a short Python example of a program that {f}.", "Write a function that {f} and explain how it works.",
    "Write a Python one-liner that {f}, then explain it.", "Write a function that {f}, with a docstring and a test.",
]
FUNCTIONS = [
    "reverses a string", "counts how often each word appears in a text", "checks whether a number is prime",
    "gives back the second largest number in a list", "removes duplicates from a list while keeping order",
    "converts a temperature from Celsius to Fahrenheit", "finds the longest word in a sentence",
    "checks whether two words are anagrams", "flattens a nested list", "computes the factorial of a number",
    "adds up the digits of an integer", "capitalizes the first letter of every word",
    "finds the common elements of two lists", "validates that a string looks like an email address",
    "reads a text file and counts its lines", "sorts a list of dictionaries by the key age",
    "builds the n-th row of Pascal's triangle", "converts a binary string to an integer",
    "groups a list of words by their first letter", "computes the median of a list of numbers",
    "chunks a list into pieces of size k", "computes the greatest common divisor of two numbers",
    "checks whether brackets in a string are balanced", "merges two dictionaries", "rotates a list by k places",
]
CODE_CONCEPTS = [
    "What is the difference between a class and an object? Give an example.", "Explain what a dictionary is in Python.",
    "What does the SQL GROUP BY clause do? Show an example.", "Explain the difference between == and is in Python.",
    "What is a race condition?", "Explain big-O notation with two examples.", "What is a REST API?",
    "What is the difference between a stack and a queue?", "Explain what git rebase does.",
    "What is a lambda function in Python?", "Explain exceptions and try/except in Python.",
    "What is the difference between let, const and var in JavaScript?", "Explain what a foreign key is in SQL.",
    "What does the shell command grep do? Give examples.", "What are Python decorators?",
    "Explain what unit tests are and why they help.", "What is the difference between a process and a thread?",
]
SNIPPETS = [
    "def mean(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s / len(xs)",
    "def greet(name):\n    print('Hello ' + name)\n\ngreet('Ada')",
    "numbers = [1, 2, 3, 4, 5, 6]\nevens = []\nfor n in numbers:\n    if n % 2 == 0:\n        evens.append(n)\nprint(evens)",
    "def last_item(items):\n    return items[len(items)]",
    "def count_a(text):\n    c = 0\n    for ch in text:\n        if ch == 'a':\n            c = c + 1\n    return c",
    "function sum(arr) {\n  var s = 0;\n  for (var i = 0; i < arr.length; i++) {\n    s += arr[i];\n  }\n  return s;\n}",
    "function isEven(n) {\n  if (n % 2 == 0) {\n    return true;\n  } else {\n    return false;\n  }\n}",
    "SELECT * FROM orders WHERE total > 100",
    "SELECT name, price FROM products ORDER BY price",
    "def max_of(a, b):\n    if a > b:\n        return a\n    return b",
    "class Counter:\n    def __init__(self):\n        self.n = 0\n\n    def add(self):\n        self.n += 1",
    "def read_lines(path):\n    f = open(path)\n    lines = f.readlines()\n    return lines",
    "squares = {}\nfor i in range(10):\n    squares[i] = i * i",
    "def is_adult(age):\n    if age > 18:\n        return True\n    return False",
    "const names = ['ana', 'bo', 'cy'];\nconst upper = [];\nfor (const n of names) {\n  upper.push(n.toUpperCase());\n}",
    "def join_words(words):\n    out = ''\n    for w in words:\n        out = out + w + ' '\n    return out",
    "gross = 0\nfor amount in amounts:\n    gross = gross + amount * 1.2\nprint(gross)",
    "def first_word(s):\n    return s.split(' ')[0]",
    "def circle_area(r):\n    return 3.14 * r * r",
    "def divide(a, b):\n    return a / b",
    "for i in range(1, 11):\n    if i % 3 == 0:\n        print('Fizz')\n    else:\n        print(i)",
    "let count = 0;\nwhile (count < 5) {\n  console.log(count);\n  count++;\n}",
    "UPDATE users SET active = 0 WHERE last_login < '2020-01-01'",
    "def get_user(users, uid):\n    for u in users:\n        if u['id'] == uid:\n            return u",
    "data = {'a': 1, 'b': 2}\nfor k in data.keys():\n    print(k, data[k])",
]
CODE_EDITS = [
    "Add type hints to this code and show the full result:", "Add a docstring to this code and show it again:",
    "Rename the variables to clearer names and show all of the code:", "Find and fix the bug in this code:",
    "Make this code handle an empty input and show the new version:", "Rewrite this code to be shorter:",
    "Translate this code into {lang2} and show the complete result:", "Explain line by line what this code does:",
    "Add comments to this code and return the whole snippet:", "Write two unit tests for this code:",
    "Refactor this code into a function with a clear name:", "What does this code print or return?",
]
PARAGRAPHS = [
    "hi all, quick note that the office will be closed on friday because of the electricity works. please take your laptops home on thursday.",
    "Our team finished the first version of the app last week. Users like the new design, but some say the login page is slow.",
    "The garden club will meet on Saturday morning to plant tulips near the school gate. Gloves and tools will be provided.",
    "I recieved your package yesterday but the blue mug was brokken. Could you send a new one or refund me?",
    "The river walk is four kilometres long and passes two old mills. It is flat, so it is good for families with small children.",
    "Dear customers, from next month our shop opens at eight instead of nine, and closes an hour later on Fridays.",
    "Yesterday it rained all day so we stayed inside, played cards and cooked a big pot of vegetable stew.",
    "The new bus line connects the station with the hospital every fifteen minutes. Tickets can be bought on board.",
    "Reminder: the science fair projects are due on Monday. Each poster needs a title, a question, a method and a result.",
    "we r planning a trip to the coast next weekend, wanna join? we'll leave early saturday and be back sunday night",
    "The report shows that sales rose by eight percent in spring, mostly because of online orders, while shop visits fell.",
    "Thank you for your application. We have reviewed it carefully and would like to invite you for an interview next week.",
    "The recipe is simple: boil the pasta, fry garlic in olive oil, add the pasta, lemon juice and plenty of parsley.",
    "The meeting was long. We talked about the budget, the new hires and the summer party but decided nothing.",
    "Please note that the swimming pool will be cleaned on Tuesday, so the evening classes move to Wednesday.",
    "My grandfather grew up on a farm. He still wakes up at five every morning, even though he moved to the city years ago.",
    "The library now lends tools as well as books: drills, ladders and sewing machines can be borrowed for a week.",
    "Our volunteers collected over two hundred kilograms of litter from the beach this spring. Thank you all!",
    "The software update fixes three bugs, adds a dark mode and makes the app start twice as fast on older phones.",
    "i think the movie was to long and the ending didnt make sense, but the music and the actors where great",
    "Starting in June, employees can work from home two days a week, as long as their team agrees on the days.",
    "The museum's new wing shows tools from the stone age, including a polished axe found by a farmer in 1952.",
    "Our cat Luna disappeared for three days and came back thinner but happy. We now keep the garden door shut.",
    "The city plans to plant one thousand trees along the main roads to give shade and reduce summer heat.",
    "To reset your password, open the settings page, choose security, and follow the link we send to your email.",
    "The concert starts at seven. Doors open at six thirty, and there is free parking behind the town hall.",
]
TEXT_EDITS = [
    "Rewrite this text in a formal tone:", "Make this text more friendly and casual:", "Shorten this text to one sentence:",
    "Fix the spelling and grammar in this text:", "Turn this text into a bulleted list of key points:",
    "Rewrite this for a ten-year-old:", "Change this text to the past tense:", "Write a reply to this message:",
    "Give this text a short, catchy title:", "Rewrite this text so it sounds more confident:",
    "Expand this text into a longer paragraph with more detail:", "Translate this text into {lang}:",
]
FOREIGN = {
    "French": ["Je voudrais réserver une table pour quatre personnes ce soir.", "Le train pour Lyon part à huit heures.",
               "Mon frère habite à la campagne depuis deux ans.", "Il fait très froid ce matin, prends ton manteau.",
               "Nous avons visité un château magnifique pendant les vacances.", "Peux-tu m'aider à porter ces cartons ?",
               "La boulangerie du coin vend le meilleur pain de la ville.", "J'apprends à jouer du piano le mercredi."],
    "German": ["Ich habe meinen Regenschirm im Bus vergessen.", "Das Konzert beginnt um halb acht.",
               "Meine Schwester studiert Medizin in Berlin.", "Kannst du mir bitte das Salz geben?",
               "Wir fahren im Sommer mit dem Fahrrad an den See.", "Der Zug hat heute zwanzig Minuten Verspätung.",
               "Am Wochenende besuchen wir unsere Großeltern.", "Dieses Buch ist spannender als der Film."],
    "Spanish": ["Mañana vamos a la playa con mis primos.", "¿Dónde está la farmacia más cercana?",
                "Mi abuela cocina la mejor paella del mundo.", "El museo abre a las diez de la mañana.",
                "Necesito comprar pan y leche antes de volver a casa.", "Estudio inglés todos los días por la tarde.",
                "Mi perro duerme en el sofá cuando llueve.", "La reunión se canceló por la tormenta."],
    "Italian": ["Vorrei un caffè e un cornetto, per favore.", "La biblioteca chiude alle sei di sera.",
                "Domenica andiamo in montagna con gli amici.", "Mio padre lavora in un ospedale vicino a casa.",
                "Questa strada porta direttamente alla stazione.", "Ho dimenticato le chiavi in ufficio.",
                "Il mercato del sabato è sempre pieno di gente.", "Abbiamo mangiato una pizza buonissima ieri sera."],
    "Portuguese": ["Eu gosto de caminhar na praia ao pôr do sol.", "O ônibus para o centro passa a cada dez minutos.",
                   "Minha mãe plantou tomates no quintal.", "Você pode fechar a janela, por favor?",
                   "Vamos ao cinema no sábado à noite.", "O restaurante estava cheio, então esperamos uma hora."],
}
ENGLISH = ["The children are reading in the garden.", "Could you tell me the way to the post office?",
           "We missed the last bus and walked home.", "My favourite season is autumn because of the colours.",
           "The shop on the corner sells fresh fish every morning.", "I will call you when I arrive at the hotel.",
           "She has been learning the violin for three years.", "The weather forecast says it will snow tonight.",
           "Please turn off the lights when you leave the room.", "Our neighbours are painting their house yellow.",
           "How much does a ticket to the museum cost?", "He forgot his passport at home and missed the flight."]
TRANSLATE = ["Translate into English: {fs}", "What does this {fl} sentence mean in English? {fs}",
             "Please translate from {fl} to English: \"{fs}\"", "Translate this sentence into {lang}: {es}",
             "How do you say \"{es}\" in {lang}?"]
PASSAGES = [
    "The town of {c} opened a community kitchen in an old fire station. Volunteers cook three evenings a week, and anyone can eat for the price they can afford. In its first year the kitchen served about twelve thousand meals. Local farmers donate vegetables that shops would not sell because of their shape.",
    "A team of students built a small weather station on the roof of their school. It measures temperature, wind and rainfall every five minutes and posts the data online. The students found that the playground is two degrees warmer than the nearby park on sunny afternoons.",
    "Night trains are returning in several countries. Travellers like waking up in a new city without an early flight, and the trains produce less carbon dioxide per passenger than planes. Operators say the main problems are old sleeping cars and the high cost of renting tracks at night.",
    "The museum received a donation of three hundred old postcards, the oldest from 1898. Historians will use them to study how the harbour changed over a century. The cards will be shown in a small exhibition next spring, and visitors are invited to bring their own family photos.",
    "Researchers followed two hundred adults who started cycling to work. After a year, most reported better sleep and fewer sick days. The effect was strongest for people who cycled more than twenty minutes each way. The study did not include people who changed jobs during the year.",
    "A small island in the north replaced its diesel generators with wind turbines and a large battery. Power cuts used to be common in winter storms, but last winter there were none. The islanders now pay less for electricity, and the old generators are kept only as a backup.",
    "The city council voted to make the old market street car-free on weekends. Shop owners were worried at first, but sales on Saturdays rose by a fifth. Families now use the street for picnics, and a weekly music stage has been added in the summer months.",
    "Honey production fell sharply last year after a cold and wet spring. Beekeepers say the bees could not fly on many days when fruit trees were flowering. Prices in shops went up, and some beekeepers fed their colonies sugar water to help them survive.",
    "A new study of sleep in teenagers found that most need about nine hours a night but get closer to seven. The authors suggest starting school later in the morning. Two schools that tried this reported better attendance and slightly higher test results in mathematics.",
    "An engineer from {c} designed a cheap water filter made of clay and sawdust. When fired in a kiln, the sawdust burns away and leaves tiny holes that trap bacteria. Each filter costs less than five dollars and can clean about twenty litres of water a day.",
    "The public library started a programme where teenagers teach older adults to use smartphones. Sessions last one hour and cover messaging, video calls and online banking safety. Both groups say they enjoy the meetings, and several pairs now meet outside the library too.",
    "Archaeologists found the remains of a Roman road under a car park during building works. The road is about six metres wide and made of large flat stones. Coins found nearby date it to the second century. The builders have agreed to keep part of it visible under glass.",
    "A chain of supermarkets removed plastic wrapping from most fruit and vegetables. Customers now bring their own bags or use paper ones. The company says food waste did not increase, which was the main fear, and that it saves over three hundred tonnes of plastic a year.",
    "Scientists tracked a humpback whale that swam from the coast of Brazil to Madagascar, a journey of nearly ten thousand kilometres. It is one of the longest recorded migrations of a single whale. The researchers think changes in food supply may have pushed the whale to travel so far.",
    "A village school with only eighteen pupils was about to close. Parents started a campaign, and a software company offered to fund a teacher if the school also ran coding classes for adults in the evenings. The school stayed open, and the evening classes are now full.",
    "The annual kite festival in {c} drew more than forty thousand visitors. Teams from nine countries flew kites shaped like dragons, fish and boats. Strong wind on Sunday morning damaged several large kites, but the organisers said it was the best festival in years.",
    "A hospital introduced therapy dogs that visit the children's ward twice a week. Nurses noticed that children were calmer before operations and asked for less pain medication. The dogs are trained for a year and must pass a health check every six months.",
    "Farmers in a dry region are planting rows of trees between their fields. The trees slow the wind, keep the soil moist and give shade to animals. After five years, crop yields on these farms are about ten percent higher than on farms without trees.",
    "The company moved to a four-day work week for a six-month trial. Staff worked the same hours over four days. Managers reported no drop in output, fewer sick days and easier hiring. Some customers complained about slower replies on Fridays, so a small team now covers that day.",
    "Engineers repaired a 150-year-old stone bridge using the same type of lime mortar as the original builders. Modern cement would have been stronger but would crack the old stones as they expand and shrink with the weather. The bridge reopened to walkers and cyclists last month.",
]
PASSAGE_QUESTIONS = ["What is the main point of the passage?", "What problem is described, and how was it solved?",
                     "Which numbers are mentioned, and what do they refer to?", "Who benefits, according to the passage?",
                     "What happened as a result, according to the text?", "What concern is mentioned in the passage?"]
SUMMARIZE = ["Summarize this {ln}:\n\n{pa}", "Give the key points of the following text {ln}.\n\n{pa}",
             "Write a headline and a one-sentence summary for this article:\n\n{pa}", "TL;DR this for me:\n\n{pa}",
             "Summarize the passage below for {au}.\n\n{pa}"]
RAG = ["Use the passage to answer the question.\nPassage: {pa}\nQuestion: {pq}",
       "Read the text and answer based only on it.\nText: {pa}\nQuestion: {pq}",
       "Context:\n{pa}\n\nAnswer from the context: {pq}"]
EXTRACT = [
    "Extract all names and cities from this sentence as JSON: {n1} moved from {c} to {c2s} in {m} to work with {n2}.",
    "List every date in this text: The order was placed on {day} {m}, shipped on {day2} {m} and returned in {m2}.",
    "From the sentence '{n1} paid {a} dollars for {o} in {c}', extract the buyer, the price, the item and the place.",
    "Return a JSON object with name, city and age from: {n1}, {a} years old, lives in {c}.",
    "Pull out the numbers from this sentence and add them up: {n1} ran {b} km on Monday, {c2} km on Tuesday and {a} km on Friday.",
    "Which people are mentioned here, and what does each do? {n1} is a nurse in {c}, {n2} teaches music and {n3} drives a taxi.",
    "Make a table with columns Person and Meeting time from: {n1} meets {n2} at {h}:30 and {n3} meets {n1} at {h2}:15.",
    "Find the email address and phone number in: Contact {n1} at {e}@example.org or call 555-01{a}.",
]
EXPLAIN = ["Explain {s} to {au}.", "How does {s} work?", "Why is {s} important?", "Give a simple example of {s}.",
           "What is {s}? Answer {ln}.", "What are common mistakes people make when learning about {s}?",
           "Describe {s} and where we see it in everyday life.", "Compare {s} and {s2}.",
           "What would happen without {s}?", "Teach me {s} {ln}.", "Can you explain {s} using an analogy?"]
HUMAN_Q = ["What were the causes and effects of {hm}?", "Explain {hm} {ln}.", "Why do historians still discuss {hm}?",
           "How did {hm} change everyday life?", "What can we learn today from {hm}?", "Compare {hm} and {hm2}.",
           "Give three key facts about {hm}.", "Who were the main figures associated with {hm}?",
           "Write a short essay outline about {hm}."]
QA = ["What is the capital of {country}?", "Which ocean is the largest?", "How many continents are there?",
      "Who painted the Mona Lisa?", "What is the boiling point of water at sea level?", "What language is spoken in {country}?",
      "How many legs does a spider have?", "What gas do plants absorb from the air?", "Who wrote 'Romeo and Juliet'?",
      "What is the tallest mountain on Earth?", "Which planet is known as the Red Planet?", "What is the currency of {country}?",
      "How many days are in a leap year?", "What is the chemical symbol for gold?", "Which animal is the largest mammal?",
      "In which country are the pyramids of Giza?", "What is the longest river in Africa?", "Who discovered penicillin?",
      "What does a thermometer measure?", "How many sides does an octagon have?", "What is the main ingredient of guacamole?"]
COUNTRIES = ["Japan", "Kenya", "Peru", "Norway", "Canada", "Egypt", "Vietnam", "Portugal", "Australia", "Mexico",
             "Greece", "Chile", "Ghana", "Finland", "India", "Morocco"]
WORDS = ["SPRING", "OCEAN", "FRIEND", "MUSIC", "LIGHT", "GARDEN", "SMILE", "RIVER"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
LANGS = ["French", "German", "Spanish", "Italian", "Portuguese"]

FAMILIES = ("writing", "roleplay", "reasoning", "math", "word_problems", "coding", "code_editing", "text_editing",
            "extraction", "stem", "humanities", "translation", "summarization", "rag", "qa")
_SLOT = re.compile(r"\{(\w+)\}")
MAX_PROMPTS = 50_000           # the most varied_prompts composes (it can compose more distinct ones; past this many
                               # the families' turns would be taken over by the largest families)


def _fill(template: str, values: dict) -> str:
    """``template`` with each ``{name}`` slot replaced (a slot-only substitution: code braces are left alone)."""
    return _SLOT.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def _values(rng: random.Random) -> dict:
    a, b, c2 = rng.randint(12, 99), rng.randint(2, 12), rng.randint(2, 9)
    n1, n2, n3 = rng.sample(NAMES, 3)
    c, c2s = rng.sample(CITIES, 2)
    s, s2 = rng.sample(STEM, 2)
    hm, hm2 = rng.sample(HUMANITIES, 2)
    fl = rng.choice(sorted(FOREIGN))
    step = rng.randint(2, 9)
    return dict(t=rng.choice(TOPICS), n1=n1, n2=n2, n3=n3, c=c, c2s=c2s, o=rng.choice(OBJECTS), r=rng.choice(ROLES),
                a=a, b=b, c2=c2, a2=a * rng.randint(2, 9), b2=b * rng.randint(2, 6), s3=3 * rng.randint(5, 40),
                a3=a + 2 * step, a4=a + 3 * step, p=rng.choice([5, 10, 15, 20, 25, 30, 40, 75]), h=rng.randint(1, 11),
                h2=rng.randint(1, 11), d=rng.choice(DAYS), w=rng.choice(WORDS), s=s, s2=s2, hm=hm, hm2=hm2,
                au=rng.choice(AUDIENCES), ln=rng.choice(LENGTHS), fl=fl, fs=rng.choice(FOREIGN[fl]),
                es=rng.choice(ENGLISH), lang=rng.choice(LANGS), lang2=rng.choice(["JavaScript", "Python", "Go", "Rust"]),
                f=rng.choice(FUNCTIONS), m=rng.choice(MONTHS), m2=rng.choice(MONTHS), day=rng.randint(1, 14),
                day2=rng.randint(15, 28), e=n1.lower(), country=rng.choice(COUNTRIES),
                pq=rng.choice(PASSAGE_QUESTIONS))


def _compose(family: str, rng: random.Random) -> str:
    v = _values(rng)
    v["pa"] = _fill(rng.choice(PASSAGES), v)
    if family == "code_editing":
        snippet = rng.choice(SNIPPETS)
        return f"{_fill(rng.choice(CODE_EDITS), v)}\n\n{snippet}"
    if family == "text_editing":
        return f"{_fill(rng.choice(TEXT_EDITS), v)}\n\n{rng.choice(PARAGRAPHS)}"
    if family == "coding":
        return _fill(rng.choice(CODE_TASKS), v) if rng.random() < 0.7 else rng.choice(CODE_CONCEPTS)
    pools = {"writing": WRITING, "roleplay": ROLEPLAY, "reasoning": REASONING, "math": MATH,
             "word_problems": WORD_PROBLEMS, "extraction": EXTRACT, "stem": EXPLAIN, "humanities": HUMAN_Q,
             "translation": TRANSLATE, "summarization": SUMMARIZE, "rag": RAG, "qa": QA}
    return _fill(rng.choice(pools[family]), v)


def varied_prompts(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct prompts, the same list for the same seed (each prefix of a longer list is the shorter one)."""
    return [text for _, text in labelled_prompts(n, seed)]


def labelled_prompts(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """(family, prompt) for :func:`varied_prompts`: the families of :data:`FAMILIES` take turns, and a family that
    keeps repeating itself yields its turn to a random other. More than the pool can compose distinctly is a
    ``ValueError``, and so is more than :data:`MAX_PROMPTS`."""
    if n > MAX_PROMPTS:
        raise ValueError(f"varied_prompts composes at most {MAX_PROMPTS} prompts, asked for {n}")
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    while len(out) < n:
        family = FAMILIES[len(out) % len(FAMILIES)]
        for attempt in range(400):
            if attempt >= 20:
                family = rng.choice(FAMILIES)
            text = _compose(family, rng)
            if text not in seen:
                break
        else:
            raise ValueError(f"varied_prompts: cannot compose {n} distinct prompts (stopped at {len(out)}); "
                             "ask for fewer")
        seen.add(text)
        out.append((family, text))
    return out
