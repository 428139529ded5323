"""Seeded user timelines whose facts change: the data of ``bench_changes.py``.

A timeline is one user's conversations with an assistant, session by session, over months of
world time. Five attributes of the user change along it:

* ``home`` (the user moves), ``work`` (changes job), ``partner`` (a new partner): each change
  is to a value the attribute never had before in that timeline;
* ``drink`` and ``commute``: preferences that flip between a few values and flip back to an
  earlier one (the content of such a fact can equal a memory retired earlier);

and a session may also **restate** a current fact in other words (no change: the extractor
writes another phrasing of the same fact), introduce an attribute not mentioned yet, or hold
small talk only. Every session has some small talk.

For each session the generator records what the user said, the answer key of a perfect
extractor (each fact-bearing user turn and the memory it should give), and the true value of
every attribute after it; for each attribute, the moment of each change (its first mention
included). Memory texts always name the user, hold the attribute's key word (``live``,
``work``, ``partner``, ``drink``, ``commute``: the word its question asks with) and its value,
and never the word ``now``: a keyword search in the user's scope for the attribute's
question finds that attribute's memories above the others.

Generation is deterministic: timeline ``i`` of seed ``s`` is the same whatever the number of
timelines, on every machine with the same Python version (``random.Random`` seeded with a
string).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

BASE = datetime(2025, 1, 1, tzinfo=timezone.utc)
"""World time of the earliest session of any timeline."""

NAMES = (
    "Ada Ben Carla Dev Emil Farah Greta Hana Isaac Jana Karim Lotte Mira Niko Olga Pavel Quinn "
    "Rosa Sven Tara Umar Vera Wim Xenia Yara Zoe"
).split()
VALUES: dict[str, tuple[str, ...]] = {
    "home": tuple(
        "Lyon Berlin Lisbon Porto Oslo Vienna Prague Dublin Madrid Seville Munich Hamburg Zurich "
        "Geneva Krakow Warsaw Tallinn Riga Helsinki Bergen Utrecht Ghent Bruges Turin Bologna "
        "Naples Valencia Bilbao Nantes Bordeaux Toulouse Marseille Antwerp Rotterdam Leeds "
        "Bristol Glasgow Cardiff Montreal Toronto".split()
    ),
    "work": tuple(
        "Brightline Copperleaf Dunmore Eastgate Fernhill Greystone Halcyon Ironbark Kestrel "
        "Larchmont Meridian Northwind Oakridge Pinecrest Redwood Silverline Tidewater Vantage "
        "Westbrook Yellowfin Zenith Ambergate Bluefield Cobalt".split()
    ),
    "partner": tuple(
        "Sam Alex Jordan Robin Charlie Kim Noor Leo Mia Omar Priya Tomas Yuki Elena Marco Ines "
        "Hugo Nina Felix Lena Rafael Sofia Mateo Chloe Anton Maya Ivan Clara Jonas Lucia".split()
    ),
    "drink": ("tea", "coffee", "cocoa", "lemonade", "kombucha", "matcha"),
    "commute": ("bicycle", "bus", "train", "tram", "car", "scooter"),
}
ATTRIBUTES = tuple(VALUES)
CHANGING = ("home", "work", "partner")
"""Attributes that change to a value they never had: moves, jobs, partners."""
FLIPPING = ("drink", "commute")
"""Preferences: a change goes back to an earlier value half the time (always once all were had)."""
ROLES = (
    "nurse teacher engineer designer accountant chef pilot librarian architect pharmacist "
    "electrician translator".split()
)

# Memory texts: {n} the user's name, {v} the value, {r} a role. Each holds the attribute's
# key word; restating a fact picks a phrasing other than the current memory's.
PHRASINGS: dict[str, tuple[str, ...]] = {
    "home": ("{n} lives in {v}", "{n} is living in {v}", "{v} is where {n} lives"),
    "work": ("{n} works at {v} as a {r}", "{n} is working for {v}", "{v} is where {n} works"),
    "partner": ("{n}'s partner is {v}", "{n} has a partner called {v}", "{v} is {n}'s partner"),
    "drink": (
        "{n}'s favourite drink is {v}",
        "{n} likes to drink {v}",
        "{v} is the drink {n} prefers",
    ),
    "commute": ("{n} commutes by {v}", "{n}'s commute is by {v}", "{n} uses the {v} to commute"),
}
QUESTIONS = {
    "home": "Where does {n} live now?",
    "work": "Where does {n} work now?",
    "partner": "Who is {n}'s partner now?",
    "drink": "What does {n} like to drink now?",
    "commute": "How does {n} commute now?",
}
"""The "where does X live now" question of each attribute."""

# What the user says: first mention, change, restatement; {v} value, {r} role.
UTTERANCES: dict[str, tuple[str, str, str]] = {
    "home": (
        "I live in {v}.",
        "Big news: we moved house, I live in {v} these days.",
        "Home is still {v} for me, and I love it.",
    ),
    "work": (
        "I work at {v} as a {r}.",
        "I started a new job at {v}, as a {r}.",
        "Things at {v} keep me busy this month.",
    ),
    "partner": (
        "My partner is {v}.",
        "I have a new partner: {v}.",
        "{v} and I are doing well together.",
    ),
    "drink": (
        "My favourite drink is {v}.",
        "Lately I prefer {v} to anything else.",
        "Nothing beats a cup of {v} in the morning.",
    ),
    "commute": (
        "I commute by {v}.",
        "I switched: I get to the office by {v} these days.",
        "The {v} gets me to the office every day.",
    ),
}
SMALL_TALK = (
    ("Can you suggest a quick recipe for dinner?", "Try a vegetable stir-fry with rice."),
    ("What is a good book for a long flight?", "A thick novel: maybe a classic you never read."),
    ("How do I get wine out of a shirt?", "Blot it, then cold water and a little soap."),
    ("Any ideas for a rainy Sunday?", "A museum, a film, or baking bread."),
    ("Explain compound interest in one sentence.", "Interest earns interest over time."),
    ("What should I pack for a weekend hike?", "Water, layers, a map and snacks."),
    ("Tell me a fun fact.", "Octopuses have three hearts."),
    ("How long should I boil an egg?", "About seven minutes for a firm yolk."),
)
ACKNOWLEDGEMENTS = ("Thanks for telling me.", "Good to know!", "Noted.", "That sounds great.")


@dataclass(frozen=True)
class Fact:
    """A fact one user turn states, as a perfect extractor writes it down.

    Attributes:
        attribute: one of :data:`ATTRIBUTES`.
        value: the attribute's value.
        content: the memory text.
    """

    attribute: str
    value: str
    content: str


@dataclass(frozen=True)
class Session:
    """One conversation: what was said, the facts in it, and the truth after it.

    Attributes:
        moment: when it happens (world time; the benchmark sets the store's clock to it).
        turns: ``(user text, assistant text)`` pairs, in order.
        facts: the facts of the fact-bearing user turns, keyed by the user's text.
        truth: the value of every attribute mentioned so far, after this session.
        changed: the attributes whose value this session set or changed.
    """

    moment: datetime
    turns: tuple[tuple[str, str], ...]
    facts: dict[str, Fact]
    truth: dict[str, str]
    changed: tuple[str, ...]


@dataclass(frozen=True)
class Change:
    """An attribute taking a value (its first mention included) at a session's moment."""

    moment: datetime
    attribute: str
    value: str


@dataclass(frozen=True)
class Timeline:
    """One user's sessions, in time order.

    Attributes:
        user_id: the user's scope id.
        name: the user's first name, in every memory about them.
        sessions: the sessions, oldest first.
        contents: every memory text of the timeline and the fact it states.
    """

    user_id: str
    name: str
    sessions: tuple[Session, ...]
    contents: dict[str, Fact] = field(repr=False)

    def changes(self) -> list[Change]:
        """Every change of every attribute, in time order."""
        return [
            Change(session.moment, attribute, session.truth[attribute])
            for session in self.sessions
            for attribute in session.changed
        ]

    @property
    def truth(self) -> dict[str, str]:
        """The value of every attribute after the last session."""
        return self.sessions[-1].truth

    def question(self, attribute: str) -> str:
        """The question asking for the attribute's current value."""
        return QUESTIONS[attribute].format(n=self.name)


def mentions(content: str, value: str) -> bool:
    """Whether ``content`` names ``value`` as a whole word (case-insensitive).

    The benchmark's test of an answer: a memory answers a question right when it names the
    true value. Values of one attribute never contain one another as words.
    """
    return re.search(rf"\b{re.escape(value)}\b", content, re.IGNORECASE) is not None


def timelines(count: int, seed: int = 0) -> Iterator[Timeline]:
    """Yield ``count`` timelines of ``seed``, the ``i``-th the same whatever ``count``."""
    for index in range(count):
        yield timeline(index, seed)


def timeline(index: int, seed: int = 0) -> Timeline:
    """Return timeline ``index`` of ``seed``: 8 to 14 sessions a few days to weeks apart."""
    rng = random.Random(f"changes:{seed}:{index}")
    return _Writer(rng, f"user-{index:05d}", rng.choice(NAMES)).write(rng.randint(8, 14))


class _Writer:
    """Writes one timeline, session by session, keeping the truth and the phrasings."""

    def __init__(self, rng: random.Random, user_id: str, name: str) -> None:
        self.rng = rng
        self.user_id = user_id
        self.name = name
        self.truth: dict[str, str] = {}
        self.seen: dict[str, list[str]] = {attribute: [] for attribute in ATTRIBUTES}
        self.phrasing: dict[tuple[str, str], int] = {}  # (attribute, value) -> last phrasing
        self.current_phrasing: dict[str, int] = {}
        self.contents: dict[str, Fact] = {}
        self.role = rng.choice(ROLES)

    def write(self, sessions: int) -> Timeline:
        moment = BASE + timedelta(days=self.rng.randrange(30), seconds=self.rng.randrange(86_400))
        written = []
        for number in range(sessions):
            written.append(self._session(moment, first=number == 0))
            moment += timedelta(days=self.rng.randint(3, 40), seconds=self.rng.randrange(86_400))
        return Timeline(self.user_id, self.name, tuple(written), self.contents)

    def _session(self, moment: datetime, *, first: bool) -> Session:
        rng = self.rng
        turns: list[tuple[str, str]] = []
        facts: dict[str, Fact] = {}
        changed: list[str] = []
        if first:
            turns.append((f"Hi, I'm {self.name}.", f"Nice to meet you, {self.name}!"))
            events = [("mention", a) for a in rng.sample(ATTRIBUTES, rng.randint(2, 3))]
        else:
            events = self._events()
        for kind, attribute in events:
            said, fact = self._event(kind, attribute)
            turns.append((said, rng.choice(ACKNOWLEDGEMENTS)))
            facts[said] = fact
            if kind != "restate":
                changed.append(attribute)
        for _ in range(rng.randint(1, 2)):
            turns.insert(rng.randrange(len(turns) + 1), rng.choice(SMALL_TALK))
        return Session(moment, tuple(turns), facts, dict(self.truth), tuple(changed))

    def _events(self) -> list[tuple[str, str]]:
        """Zero to two events on distinct attributes."""
        rng = self.rng
        events: list[tuple[str, str]] = []
        for _ in range(rng.choice((0, 1, 1, 1, 2, 2))):
            free = [a for a in ATTRIBUTES if a not in {attribute for _, attribute in events}]
            known = [a for a in free if a in self.truth]
            unknown = [a for a in free if a not in self.truth]
            roll = rng.random()
            if unknown and (roll < 0.2 or not known):
                events.append(("mention", rng.choice(unknown)))
            elif roll < 0.4 and known:
                events.append(("restate", rng.choice(known)))
            elif known:
                events.append(("change", rng.choice(known)))
        return events

    def _event(self, kind: str, attribute: str) -> tuple[str, Fact]:
        """Apply one event; return what the user says and the fact it states."""
        rng = self.rng
        current = self.truth.get(attribute)
        if kind == "restate":
            assert current is not None
            value = current
            phrasing = rng.choice([p for p in range(3) if p != self.current_phrasing[attribute]])
        else:
            value = self._new_value(attribute, current)
            # A preference flipping back is written as it was before.
            phrasing = self.phrasing.get((attribute, value), rng.randrange(3))
            if attribute == "work":
                self.role = rng.choice(ROLES)
        self.truth[attribute] = value
        if value not in self.seen[attribute]:
            self.seen[attribute].append(value)
        self.phrasing[(attribute, value)] = self.current_phrasing[attribute] = phrasing
        said = UTTERANCES[attribute][("mention", "change", "restate").index(kind)]
        if kind == "change" and current is None:
            said = UTTERANCES[attribute][0]
        said = said.format(v=value, r=self.role)
        content = PHRASINGS[attribute][phrasing].format(n=self.name, v=value, r=self.role)
        fact = Fact(attribute, value, content)
        self.contents[content] = fact
        return said, fact

    def _new_value(self, attribute: str, current: str | None) -> str:
        rng = self.rng
        earlier = [v for v in self.seen[attribute] if v != current]
        if attribute in FLIPPING and earlier and rng.random() < 0.5:
            return rng.choice(earlier)
        fresh = [v for v in VALUES[attribute] if v not in self.seen[attribute]]
        return rng.choice(fresh or earlier)
