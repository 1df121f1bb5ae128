"""The catfacts family's behaviours: what the simulated agent does right or wrong, how likely, and
the concept (stemmed content words) through which a skill's steps and pitfalls address each.

`use_fact_listing` is the loop-prone one (the random-fact endpoint is called again and again with
identical arguments); `fetch_full_text` matters only on m2 / h1, the only scales whose filters let
a fact longer than the listing's 200-character cut qualify (docs/skillcraft_sim.md §4.1).
"""

from __future__ import annotations

from evaluators.skillcraft.concepts import Concept
from evaluators.skillcraft.family import Behaviour, shared_behaviours, skip_unneeded, topic

B, C = Behaviour, Concept.of
BEHAVIOURS: tuple[Behaviour, ...] = (
    B("use_fact_listing", "walk the paginated listing instead of sampling the random-fact endpoint again and again",
      0.6, 0.03, 0.998, C(
          "random",
          "listing sample sampling endpoint identical repeat repeated again same order",
          acts="use walk list")),
    B("paginate_until_enough", "keep reading pages until enough facts are collected", 0.7, 0.03, 0.998, C(
        "paginate pagination",
        "page pages next following follow until enough keep reading read more remaining listing far",
        acts="paginate follow read keep")),
    B("dedupe_facts", "keep each fact once, comparing texts without case, spacing or end punctuation",
      0.72, 0.05, 0.998, C(
          "dedupe deduplicate duplicate duplicates",
          "unique distinct once twice same repeat repeated normalise normalize case spacing punctuation",
          acts="deduplicate dedupe")),
    B("match_whole_words", "match the keyword as a whole word in any case, not as a substring", 0.72, 0.05, 0.998, C(
        "keyword substring",
        "whole word words case insensitive sensitive contain contains match matching mention mentions",
        acts="match")),
    B("measure_length", "measure each fact's length from its text instead of trusting the length field",
      0.7, 0.05, 0.998, C(
          "length lengths measure measured",
          "character characters long longer field stale count yourself limit",
          acts="measure count compute", lapses="trust")),
    B("decode_entities", "decode HTML entities (&#39;, &quot;, &amp;) into plain text", 0.68, 0.05, 0.998, C(
        "entity entities html unescape decode decoded escape escaped",
        "character characters amp quot apostrophe apostrophes plain",
        acts="decode unescape")),
    B("fetch_full_text", "fetch a truncated fact with get_fact to get its full text", 0.6, 0.02, 0.998, C(
        "truncated truncate truncation ellipsis",
        "full whole complete cut end text fetch long longer",
        acts="fetch get")),
    *shared_behaviours(skip_unneeded(
        "skip_unneeded_calls", "stop reading pages once enough facts are collected",
        "only extra pages enough stop once ask asks need needs fewer waste wasted")),
)
TOPIC = topic("cat cats fact facts feline felines kitten kittens trivia")
