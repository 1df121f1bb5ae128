"""Plain-English text handling for the feedback reflector: words, a light stemmer, sentences, and
de-identification (ids, numbers, names, file names and JSON removed, so guidance stays general).

It shares nothing with the simulator's concept matcher (evaluators/skillcraft/concepts.py) on
purpose: the reflector reads text the way any reader would, not the way the agent is modelled.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z][A-Za-z_'-]*")
# Function words, and words about grading itself rather than about the task.
STOP = frozenset(
    "a an the and or but if then so to of in on at by for from with as is are was were be been being it its "
    "this that these those there their them they you your we our will would can could should may might must "
    "do does did has have had not no never any some such than too very just also into onto about which who "
    "what when where while why how all each every both per via than yes "
    "official result results quality check checks passed pass critical score status failed fail fails".split()
)
PROBLEM_WORDS = frozenset(
    "not no never missing missed miss wrong error errors failed fail fails failure duplicate duplicates dropped "
    "skipped instead differ differs unexpected stale mismatch exceeded limit invalid incorrect unneeded "
    "unnecessary wasted repeated non neither nor without".split()
)
_FILE = re.compile(r"\b[\w.-]+\.(?:json|jsonl|csv|txt|md|yaml|yml|xml|html)\b")
_JSON = re.compile(r"\{[^{}]*\}")
_PAREN_NUM = re.compile(r"\([^()]*\d[^()]*\)")
_DOTTED = re.compile(r"\b([A-Za-z_][\w]*(?:\[[^\]]*\])?(?:\.[\w\[\]\"' -]+?)+)(?=[:\s,;]|$)")
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']{2,}'|«[^»]*»")
_NUMBERISH = re.compile(r"[-+]?[\d][\d,.:/%°×x-]*\w*")
_SPACES = re.compile(r"\s+")


def stem(word: str) -> str:
    """Light stemmer: plural and verb endings ("calls" -> "call", "retried" -> "retri")."""
    w = word.lower().strip("'-")
    for suffix, repl in (("ies", "i"), ("ied", "i"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "e"),
                         ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith(("ss", "us", "is")):
            return w[: -len(suffix)] + repl
    return w


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def content(text: str) -> frozenset[str]:
    """Stems of the content words (underscored names split into their words)."""
    return frozenset(stem(part) for w in words(text) for part in w.split("_") if len(part) > 1 and part not in STOP)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def coverage(needle: frozenset[str], hay: frozenset[str]) -> float:
    """Share of `needle`'s words found in `hay`."""
    return len(needle & hay) / len(needle) if needle else 0.0


def _dotted(match: re.Match[str]) -> str:
    # "category_dishes.Beef.count" -> "count"; "recipes.52413" -> "" (a location, not a problem)
    last = re.split(r"[.\[\]]", match.group(1).rstrip("]"))[-1].strip("\"' ")
    return last if last.isalpha() and last.islower() else ""


def deidentify(text: str) -> str:
    """Drop what ties a statement to one case: JSON, quoted values, ids and numbers, dotted
    locations, proper names after the first word, file names (-> "the output file")."""
    t = _JSON.sub(" ", text)
    t = _FILE.sub("FILE", t)
    t = re.sub(r"\b(?:the|a|an)\s+(?:(required|requested|expected)\s+)?FILE", lambda m: f"the {m.group(1) or ''} FILE", t)
    t = re.sub(r"(?<!the )(?<!required )(?<!requested )(?<!expected )FILE", "the FILE", t)
    t = _PAREN_NUM.sub(" ", t)
    t = _QUOTED.sub(" ", t)
    t = _DOTTED.sub(_dotted, t)
    t = _NUMBERISH.sub(" ", t)
    # Proper names (a category, a city, a dish) go.
    t = " ".join(tok for i, tok in enumerate(t.split())
                 if not (i > 0 and (bare := tok.strip(".,;:()[]!?"))[:1].isupper() and not bare.isupper()))
    t = re.sub(r"\(\s*\)|\[\s*\]", " ", t)
    t = re.sub(r"\s+([,;:.)])", r"\1", t)
    t = re.sub(r"([,;:(])\s*(?=[,;:.)])", "", t)
    t = re.sub(r"\bof\s+(?=expected|requested)", "", t)
    t = re.sub(r"[×→…]+", " ", t).replace("FILE", "output file")
    return _SPACES.sub(" ", t).strip(" ,;:-").strip()


def statements(line: str) -> list[str]:
    """A (de-identified) feedback line split into statements (on ';' and sentence ends)."""
    parts = re.split(r";\s+|(?<=[a-z)])\.\s+(?=[A-Za-z])", line.strip().lstrip("-•* ").strip())
    return [p.strip(" .") for p in parts if p.strip(" .")]


def is_problem(statement: str) -> bool:
    return any(w in PROBLEM_WORDS or w.startswith("non-") for w in words(statement))


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def sentence(text: str) -> str:
    text = _SPACES.sub(" ", text).strip(" ,;")
    return capitalise(text.rstrip(".")) + "."
