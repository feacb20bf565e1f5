"""The text-editing and translation families of the instruction pool: the short texts to edit (tagged by which
instructions fit them) with ``TEXT_EDIT_TEMPLATES``, and the foreign and English sentences with
``TRANSLATION_TEMPLATES``, in pool order.
"""
from __future__ import annotations

from .composer import _sub, _t, _Template


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
