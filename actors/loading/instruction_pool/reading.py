"""The families of the instruction pool that hand the model a text to read: extraction (composed event sentences and
its slot lists, ``EXTRACTION_TEMPLATES``), and the hand-written ``PASSAGES`` with the questions each answers, read by
summarization (``SUMMARIZATION_TEMPLATES``) and retrieval-augmented QA (``RAG_TEMPLATES``), in pool order.
"""
from __future__ import annotations

from .composer import _Composed, _lc, _sub, _t, _Template
from .slots import CITIES, DATES, NAMES, NUMBER_WORDS, PAIRS, TRIOS, _perms


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
