"""The knowledge families of the instruction pool: STEM explanations (``STEM_TEMPLATES``), humanities and social
science (``HUMANITIES_TEMPLATES``) and factual QA (``QA_TEMPLATES``), with their slot lists (concepts, why/how
questions, historical events and people, countries, general questions, ...), in pool order.
"""
from __future__ import annotations

from .composer import _t
from .slots import AUDIENCES, NUMBER_WORDS


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
