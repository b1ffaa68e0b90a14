"""Counting by labels the data does not show: how many short notes are about a topic.

The context is 300 to 1,000 short personal notes (``clamp(length // 100, 300, 1000)`` of them,
``length`` in tokens: the count grows up to a length of 100k tokens and then stays at 1,000
notes, some 60k to 90k characters; ``meta`` records the real size), as one string, a note a line
with a date or id in front, or as a list of strings (they alternate by index). Each note is about
one of the split's topics, but no field, tag or heading names it, and the topics' own names are
kept out of the notes: a note has to be read for its meaning. Notes come from many templates per
topic with word banks of their own, and a third of them carry a neutral remark or an aside that
mentions another topic's words in passing, so a list of keywords does not sort them. The topics'
shares differ from task to task. The question asks how many notes are about one topic; ``meta``
records every topic's count. Score: ``approx`` (within 2%, and always within 1).

Splits: ``dev`` notes are about travel, cooking, gardening or personal finance; ``test`` notes
about health, home repairs, pets, music or sports. Lines, wordings and banks are the split's own.
"""

from __future__ import annotations

import random
import re
from datetime import date, timedelta

from .tasks import Task, TaskRef, family

__all__ = ["TOPICS", "items_for", "note", "make"]


def items_for(length: int) -> int:
    return max(300, min(1000, length // 100))


_BANKS = {
    "city": ["Lisbon", "Porto", "Tallinn", "Krakow", "Bergen", "Seville", "Trieste", "Ghent", "Lyon", "Split",
             "Kyoto", "Hanoi", "Oaxaca", "Marrakesh", "Reykjavik", "Valletta", "Ljubljana", "Tbilisi"],
    "island": ["Hvar", "Gozo", "Skye", "Naxos", "Madeira", "Texel", "Bornholm"],
    "item": ["charger", "rain jacket", "sunglasses", "neck pillow", "phrasebook", "sandals"],
    "veg": ["leeks", "carrots", "beetroot", "runner beans", "courgettes", "shallots", "parsnips", "kale"],
    "dish": ["risotto", "lentil soup", "curry", "stew", "lasagne", "chowder", "goulash", "dal"],
    "dessert": ["pavlova", "soufflé", "cheesecake", "meringue", "sponge cake", "clafoutis"],
    "meat": ["lamb shoulder", "chicken thighs", "pork belly", "beef shin"],
    "flower": ["dahlias", "sweet peas", "roses", "tulips", "lupins", "clematis", "peonies"],
    "shrub": ["buddleia", "hydrangea", "lavender", "forsythia", "box hedge"],
    "tree": ["apple", "cherry", "plum", "rowan", "fig"],
    "amount": ["£40", "£125", "€300", "$18", "£2,400", "€75", "$950", "£12.50"],
    "month": ["March", "June", "September", "November", "January"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "pet": ["Biscuit", "Luna", "Pepper", "Otto", "Mango", "Juniper", "Pickle", "Bramble"],
    "piece": ["B-flat major", "E minor", "chromatic", "A major", "D harmonic minor"],
    "person": ["Sam", "Noor", "Jonas", "Aoife", "Mateo", "Priya", "Lars", "Hana"],
}  # fmt: skip

TOPICS: dict[str, dict[str, list[str]]] = {
    "dev": {
        "travel": [
            "Finally got a window seat on the early flight to {city}.",
            "The night train to {city} was {n} minutes late, but the sleeper cabin was spotless.",
            "Left my {item} at the hostel in {city}; the front desk will post it back.",
            "Passport control in {city} took over an hour this morning.",
            "Booked a room near the old harbour in {city} for {n} nights.",
            "The ferry to {island} was cancelled because of the swell, rebooked for {day}.",
            "Photographed every scratch on the hire car before leaving the lot in {city}.",
            "Changed some cash at the airport in {city}, awful rate.",
            "Checked in online for the return leg and saved the boarding pass.",
            "Jet lag after the long-haul leg is brutal, wide awake at 4 a.m. in {city}.",
            "Missed the connection in {city} and slept at an airport hotel.",
            "Packed the {item} and two plug adapters for {city}.",
            "The visa for the autumn trip came through today.",
            "Took the cable car up to the viewpoint on our second day in {city}.",
            "Our suitcase reached {city} a full day after we did.",
            "The airport bus into central {city} costs {n} euros.",
            "Barely slept in the couchette between {city} and the border.",
            "Customs opened my bag and went through every pouch.",
            "Sent postcards home from the harbour in {city}.",
            "Plan: {n} days in {city}, then the coast road south.",
            "Our guide in {city} showed us {n} churches before lunch.",
            "Upgraded to a sea-view cabin for the crossing to {island}.",
            "Hostel dorm in {city} had {n} beds and one working shower.",
            "Renewed my passport just in time for the {month} trip.",
        ],
        "cooking": [
            "Sweated the {veg} slowly for twenty minutes before adding the stock.",
            "The {dish} wanted more salt and a squeeze of lemon at the end.",
            "Kneaded the dough by hand for {n} minutes until it turned smooth.",
            "Scorched the bottom of the {dish} again, that pan runs hot.",
            "Left the {meat} overnight in yoghurt, garlic and cumin.",
            "Roasted the {veg} at 220 degrees until the edges caught.",
            "The sourdough starter doubled in {n} hours.",
            "Whisked the egg whites to stiff peaks for the {dessert}.",
            "Made a huge pot of {dish} and froze it in portions.",
            "Reduced the sauce by half, then swirled in cold butter.",
            "Sharpened the knives before dicing {n} onions.",
            "Far too much chilli in the {dish}, the kids would not touch it.",
            "Blind-baked the tart case with ceramic beans.",
            "Simmered the bones for {n} hours for a clear broth.",
            "Seasoned the new cast-iron skillet with three thin coats of oil.",
            "The {dessert} sank when I opened the oven door too early.",
            "Toasted cumin and coriander seeds before grinding them.",
            "Deglazed the pan with a splash of white wine.",
            "The recipe says fold, not stir, the flour into the batter.",
            "Quick-pickled the {veg} with vinegar, sugar and dill.",
            "Braised the {meat} for three hours with prunes and onions.",
            "Tempered the chocolate for the {dessert}, glossy at last.",
            "Brined the {meat} for a day, it came out juicy.",
            "Rested the pastry in the fridge before rolling it out.",
        ],
        "gardening": [
            "Sowed two rows of {veg} along the fence.",
            "Slugs ate half the {veg} seedlings overnight.",
            "Cut the {shrub} back hard before the buds opened.",
            "Turned the compost heap, it is steaming nicely.",
            "Planted the {flower} bulbs {n} cm deep.",
            "Mulched the beds with bark to keep the weeds down.",
            "Watered the greenhouse twice because of the heat.",
            "Greenfly all over the {flower} again, sprayed them with soapy water.",
            "Potted on the {veg} seedlings into bigger pots.",
            "Frost forecast tonight, so the {veg} are under fleece.",
            "The hedge needs trimming before the birds start nesting.",
            "Lifted the {veg}, a decent crop from {n} plants.",
            "The lawn is full of moss; raked it out and reseeded the bare patches.",
            "Staked the {flower} so the wind does not snap them.",
            "Split the overgrown hosta clumps and replanted half.",
            "The soil test says the beds are too acidic, so lime goes on.",
            "Deadheaded the {flower} to keep them blooming.",
            "Put up a trellis for the {flower} to climb.",
            "Weeded the onion bed on my knees for an hour.",
            "Planted a young {tree} tree in the corner by the shed.",
            "Grafted two {tree} cuttings onto the old rootstock.",
            "Raised beds finally filled with {n} bags of topsoil.",
            "Earthed up the potatoes along the whole row.",
            "Moles have tunnelled under the {flower} border.",
        ],
        "finance": [
            "Moved {n} percent of my savings into an index fund.",
            "Our mortgage rate resets in {month}; time to compare offers.",
            "Paid off the credit card balance in full this month.",
            "Tax return filed, expecting a refund of about {amount}.",
            "Rebalanced the portfolio: fewer bonds, more equities.",
            "The bank charged {amount} for going overdrawn.",
            "Set up a standing order of {amount} a month into the emergency fund.",
            "Dividends from the utility shares came to {amount}.",
            "Raised my pension contribution to {n} percent of salary.",
            "Compared three brokers by their trading fees.",
            "Subscriptions are eating {amount} a month, cancelling two.",
            "Interest on the easy-access account dropped again.",
            "Sold the last tech shares at a small loss.",
            "The accountant's invoice came to {amount}.",
            "Locked {amount} into a fixed-term deposit for {n} months.",
            "Inflation ate most of the bond returns this year.",
            "Credit score went up after closing the old store card.",
            "The loan application wants my last {n} payslips.",
            "Foreign card fees add up quickly, switching to a cheaper card.",
            "The valuer thinks the flat is worth {amount} more than we paid.",
            "Filled in the ISA transfer form before the April deadline.",
            "Spreadsheet of monthly outgoings finally balances.",
            "Claimed the tax relief on the work-from-home expenses.",
            "Remortgaging would save {amount} a year after fees.",
        ],
    },
    "test": {
        "health": [
            "Blood pressure was high again at the pharmacy this morning.",
            "The physio gave me {n} stretches for my lower back.",
            "Booked a follow-up with the GP about the rash on my arm.",
            "Started the antibiotics: one tablet every eight hours with food.",
            "The dentist says the old filling has to be replaced.",
            "Slept nine hours and the migraine is finally gone.",
            "Had the flu jab, arm a little sore.",
            "Cholesterol came back lower than last year.",
            "The hay-fever tablets make me drowsy by mid-afternoon.",
            "Eye test: my prescription changed a little in the left eye.",
            "The nurse took three vials of blood for the yearly check-up.",
            "Fever broke overnight, drinking lots of water.",
            "Cut down on coffee because of the palpitations.",
            "The clinic waiting room was packed, seen {n} minutes late.",
            "Inhaler nearly empty, asked for a repeat prescription.",
            "Stitches come out on {day}.",
            "The hearing test showed mild loss in my right ear.",
            "Iron levels low again, the doctor wants another blood test.",
            "The dermatologist froze off the mole on my shoulder.",
            "Sore throat for {n} days now, gargling salt water.",
            "Specialist referral for the knee scan finally arrived.",
            "Thyroid dose lowered after the last results.",
            "Woke up with a stiff neck and a pounding headache.",
        ],
        "repairs": [
            "Replaced the washer in the dripping kitchen tap.",
            "Boiler pressure dropped again, topped it up to 1.5 bar.",
            "Filled the crack above the door frame and sanded it smooth.",
            "Bought a {n} mm masonry bit to put up the shelves.",
            "Bled the radiators upstairs, the back bedroom one was full of air.",
            "Resealed the edge of the bath with fresh silicone.",
            "The fuse for the garage sockets keeps tripping.",
            "Cleared the blocked sink with a plunger and patience.",
            "Two roof tiles slipped in the storm, the roofer comes {day}.",
            "Rehung the wardrobe door, the hinge screws had stripped.",
            "Scraped the flaking paint off the window frames and repainted them.",
            "Tightened the wobbly banister with longer screws.",
            "Swapped the broken light switch in the hall, power off first.",
            "Damp patch on the bedroom wall, checking the gutter above it.",
            "Stopped the creaking floorboard with two screws into the joist.",
            "The washing machine drum won't spin; ordered a new belt.",
            "Re-grouted the kitchen tiles, {n} hours on my knees.",
            "Fitted a new cistern valve, the toilet stopped running.",
            "Planed the bottom of the back door so it closes again.",
            "Replaced the cracked pane in the shed window.",
            "The extractor fan rattles, cleaned the blades and oiled the motor.",
            "Rewired the plug on the old lamp.",
            "Sanded and re-varnished the worn patch of the hall floor.",
        ],
        "pets": [
            "The cat brought a mouse in again at {n} a.m.",
            "The vet says {pet} has to lose two kilos.",
            "New scratching post, ignored in favour of the sofa.",
            "The puppy finally sleeps through the night in the crate.",
            "Cleaned out the hamster cage and changed the bedding.",
            "Flea treatment for both cats is due on {day}.",
            "The parrot has learned to copy the doorbell.",
            "Long walk by the river, {pet} chased every duck.",
            "Booster jabs done, {pet} sulked all afternoon.",
            "Switched {pet} to grain-free kibble.",
            "New filter in the aquarium, the fish look livelier.",
            "The rabbit chewed through the laptop charger.",
            "{pet} is moulting everywhere, brushing twice a day.",
            "Updated the microchip details with our new address.",
            "Obedience class: {pet} now sits and waits at the kerb.",
            "Moved the litter tray upstairs and the accidents stopped.",
            "The tortoise woke up early from hibernation.",
            "Booked a sitter to feed {pet} while we're away.",
            "{pet} learned to open the treat cupboard with a paw.",
            "The guinea pigs squeak every time the fridge opens.",
            "Trimmed {pet}'s claws, took two of us and a towel.",
            "{pet} refuses the new harness and lies down flat.",
            "The kitten climbed the curtains and got stuck at the top.",
        ],
        "music": [
            "Practised {piece} scales for {n} minutes.",
            "Put new strings on the acoustic, it sounds bright again.",
            "Choir rehearsal moved to {day} evening.",
            "Worked out the bridge of the song by ear.",
            "Metronome at a slow tempo and I still rush the triplets.",
            "Had the piano tuned, middle C was flat.",
            "Recorded a rough demo of the chorus on my phone.",
            "Got tickets for the string quartet playing Schubert on {day}.",
            "The band needs a new drummer before the gig.",
            "Fingertips raw after an hour of barre chords.",
            "Transposed the melody down a tone to suit my voice.",
            "The jam in the basement went on past midnight.",
            "My saxophone reed split halfway through the solo.",
            "Sight-reading is getting easier with the daily exercises.",
            "Pulled the vocals down in the second verse of the mix.",
            "Audition next month: two études and a concerto movement.",
            "Today's lesson was all about breathing between phrases.",
            "Learned the walking bass line for the blues in {piece}.",
            "The conductor wants the cellos softer in the slow movement.",
            "Rosined the bow and the squeak finally went away.",
            "Wrote lyrics for a second verse, still no title.",
            "Busked outside the station, {n} people stopped to listen.",
            "Our setlist for {day} has {n} songs and two encores.",
        ],
        "sports": [
            "Ran {n} km along the canal at an easy pace.",
            "We lost 2-3 after extra time.",
            "Swam {n} lengths before work.",
            "The referee ruled the goal offside.",
            "Club ride: {n} km with two long climbs.",
            "Doubles on {day}, won the second set on a tie-break.",
            "Coach wants us at the track for interval sprints.",
            "New running shoes, the old pair had done far too many miles.",
            "The derby sold out in {n} minutes.",
            "At the climbing wall I finally sent the overhanging route.",
            "Squash ladder match moved to {day}.",
            "Crew did six 500 m pieces on the rowing machines.",
            "Even splits in the half marathon, 1:52 overall.",
            "Basketball practice: {n} free throws, made most of them.",
            "Signed up for the Sunday five-a-side league.",
            "The golf lesson mostly fixed my slice.",
            "Our keeper saved two penalties in the shoot-out.",
            "Personal best on the 5k, shaved {n} seconds off.",
            "Tournament draw is out, we face the champions in round one.",
            "Brick session: bike then run, legs like jelly.",
            "Volleyball serve finally clears the net every time.",
            "Relay team dropped the baton on the last handover.",
            "Cricket nets moved indoors because of the rain.",
        ],
    },
}

# Remarks that say nothing of the topic, and asides that mention another topic in passing.
_NEUTRAL = {
    "dev": [
        "Noting it here so I don't forget.",
        "Will look at it again tomorrow.",
        "Not bad for a {day}.",
        "Must tell {person} about it.",
        "Long day overall.",
        "Happy with that.",
        "More on this next week.",
    ],
    "test": [
        "(writing this down for later)",
        "Ugh, what a week.",
        "Reminder to self: check again on {day}.",
        "{person} thinks I'm overdoing it.",
        "Fine, all things considered.",
        "Small win.",
        "That's enough for today.",
    ],
}
_ASIDES = {
    "dev": {
        "travel": [
            "Ate a sad sandwich at the gate.",
            "Paid for the seat with points.",
            "Someone's tomato plants filled the hotel balcony.",
        ],
        "cooking": [
            "The radio was on about airport strikes.",
            "Herbs from the windowsill pot, of course.",
            "Cheaper than buying it ready-made.",
        ],
        "gardening": [
            "Podcast about pensions on in my earphones.",
            "Soup on the stove for afterwards.",
            "Neighbours back from their trip to the coast.",
        ],
        "finance": [
            "Did the sums on the train.",
            "Cheaper than last summer's holiday, at least.",
            "Over a slow pot of coffee and a slice of cake.",
        ],
    },
    "test": {
        "health": [
            "Walked the dog on the way back.",
            "Missed football practice for it.",
            "The waiting room radio played the same song three times.",
        ],
        "repairs": [
            "The cat supervised the whole time.",
            "Played records while I worked.",
            "My back will complain about it tomorrow.",
        ],
        "pets": [
            "The vet's waiting room had a loud radio playing jazz.",
            "Passed the gym on the way.",
            "The gate latch is loose again.",
        ],
        "music": [
            "My wrist still aches from the fall.",
            "The cat sat on the score.",
            "Straight after the match on TV.",
        ],
        "sports": [
            "Fixed the bike's puncture first.",
            "Headphones on, same playlist as always.",
            "Knee strapped up, just in case.",
        ],
    },
}

_ASK = {
    "dev": "How many of the notes are about {topic}? The topics are not written in the notes: judge each "
    "note by its meaning. Every note is about exactly one of these topics: {topics}.",
    "test": "Each note concerns exactly one of the following subjects: {topics}. No note is labelled, so "
    "read them for what they are about. How many notes concern {topic}?",
}
_NAMES = {"finance": "personal finance", "repairs": "home repairs"}


def note(rng: random.Random, split: str, topic: str) -> str:
    """One note about the topic, without the topic's name."""
    text = rng.choice(TOPICS[split][topic])
    extra = rng.random()
    if extra < 0.18:
        text += " " + rng.choice(_NEUTRAL[split])
    elif extra < 0.33:
        text += " " + rng.choice(_ASIDES[split][topic])
    return re.sub(r"\{(\w+)\}", lambda m: _fill(rng, m.group(1)), text)


def _fill(rng: random.Random, slot: str) -> str:
    if slot == "n":
        return str(rng.randint(2, 9))
    return rng.choice(_BANKS[slot])


@family(
    "meaning",
    "count notes by a topic the data does not show (travel, cooking… in dev; health, pets… in test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    topics = list(TOPICS[ref.split])
    weights = [rng.uniform(0.5, 1.6) for _ in topics]
    n = items_for(ref.length)
    labels = rng.choices(topics, weights, k=n)
    notes = [note(rng, ref.split, t) for t in labels]
    counts = {t: labels.count(t) for t in topics}
    asked = rng.choice(topics)
    if ref.index % 2 == 0:
        start = date(2024, 1, 1) + timedelta(days=rng.randrange(300))
        days = sorted(rng.randrange(400) for _ in notes)
        if ref.split == "dev":
            lines = [
                f"{start + timedelta(days=d)} | note {i + 1:04d} | {t}"
                for i, (d, t) in enumerate(zip(days, notes, strict=True))
            ]
        else:
            lines = [
                f"[#{i + 1}] {(start + timedelta(days=d)):%d/%m/%Y}: {t}"
                for i, (d, t) in enumerate(zip(days, notes, strict=True))
            ]
        context: object = "\n".join(lines)
    else:
        context = notes
    named = [_NAMES.get(t, t) for t in topics]
    return Task(
        id=ref.id,
        family="meaning",
        context=context,
        question=_ASK[ref.split].format(topic=_NAMES.get(asked, asked), topics=", ".join(named)),
        answer=counts[asked],
        scorer="approx",
        split=ref.split,
        length=ref.length,
        meta={
            "container": "lines" if ref.index % 2 == 0 else "list",
            "topic": asked,
            "counts": counts,
            "notes": n,
            "chars": len(context) if isinstance(context, str) else sum(map(len, notes)),
        },
        ref=ref,
    )
