"""The writing and roleplay families of the instruction pool: their slot lists (blog topics, email purposes, poem
forms, story premises, roles, visitors, ...) and ``WRITING_TEMPLATES`` / ``ROLEPLAY_TEMPLATES``, in pool order.
"""
from __future__ import annotations

from .composer import _t


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
