"""The recipe family's behaviours: what the simulated agent does right or wrong, how likely, and
the concept (stemmed content words) through which a skill's steps and pitfalls address each.

Concepts, not phrases: `Concept.of(key, support, acts, lapses)` — any key word, or any two
support words, in any wording address it (docs/skillcraft_sim.md §4.3). The behaviours every
family shares (retry, validate, write) and the shape of its unneeded-call one come from
`family.shared_behaviours` / `family.skip_unneeded`.
"""

from __future__ import annotations

from evaluators.skillcraft.concepts import Concept
from evaluators.skillcraft.family import Behaviour, shared_behaviours, skip_unneeded, topic

B, C = Behaviour, Concept.of
# The counterpart of skip_unneeded_details; it sits after it in the table (the fingerprint's order).
FETCH_REQUIRED_DETAILS = B(
    "fetch_required_details", "fetch the recipes whose details the task asks for", 0.985, 0.0, 0.999, C(
        "",
        "detail details fetch full get call open",
        acts="call fetch get open", lapses="skip"))
BEHAVIOURS: tuple[Behaviour, ...] = (
    B("paginate_to_end", "follow next_page until the listing ends", 0.93, 0.03, 0.999, C(
        "paginate pagination",
        "page pages next cursor last remaining later through follow end first beyond",
        acts="paginate follow", lapses="skip")),
    B("stop_on_empty_page", "stop when a page comes back empty instead of re-requesting it", 0.55, 0.03, 0.997, C(
        "empty loop loops looping sentinel",
        "stop item items nothing zero same twice repeat repeated identical again itself break",
        acts="stop break")),
    B("dedupe_by_id", "keep each dish id once", 0.6, 0.03, 0.997, C(
        "dedupe deduplicate duplicate duplicates",
        "unique distinct once seen overlap overlapping id ids set",
        acts="deduplicate dedupe")),
    B("count_per_category", "compute counts from the distinct collected ids", 0.55, 0.03, 0.997, C(
        "recount hint",
        "count counts distinct unique collected compute computed derive length stale match",
        acts="count compute recount derive", lapses="trust")),
    B("normalise_units", "convert quantities to g / ml / pcs", 0.35, 0.03, 0.996, C(
        "metric convert conversion normalise normalize",
        "unit units gram grams millilitre millilitres ml g pcs cup cups ounce oz pound lb",
        acts="convert normalise")),
    B("fill_required_fields", "keep every required field, using placeholders for missing values", 0.4, 0.03, 0.996, C(
        "placeholder placeholders mandatory",
        "required field fields missing omit drop dropped null unknown fill taste keep line lines value",
        acts="fill keep include")),
    *shared_behaviours(
        skip_unneeded("skip_unneeded_details", "fetch full recipes only where the task needs them",
                      "only detail details extra fewer minimise minimize waste wasted"),
        then=(FETCH_REQUIRED_DETAILS,)),
)
TOPIC = topic("recipe recipes cookbook dish dishes meal meals food cooking")
CAP_NOUNS = ("dishes", "dish ids", "recipes", "meals", "results", "items", "ids", "entries")
