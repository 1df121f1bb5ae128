"""The worldbank family's behaviours: what the simulated agent does right or wrong, how likely, and
the concept (stemmed content words) through which a skill's steps and pitfalls address each.

`look_up_country_codes` is the loop-prone one (a guessed code that is not valid is re-sent until
the agent notices); `exclude_aggregates` matters only on m2 / h1, the only scales that ask for the
top countries of an all-countries listing, which starts with aggregates (docs/skillcraft_sim.md §4.1).
"""

from __future__ import annotations

from evaluators.skillcraft.concepts import Concept
from evaluators.skillcraft.family import Behaviour, shared_behaviours, skip_unneeded, topic

B, C = Behaviour, Concept.of
BEHAVIOURS: tuple[Behaviour, ...] = (
    B("look_up_country_codes", "look up each country's ISO3 code instead of guessing it from the name",
      0.55, 0.03, 0.998, C(
          "iso3 lookup guess guessed guessing",
          "code codes country countries search look id name names resolve identical again same repeat invalid "
          "change different",
          acts="look search", lapses="guess")),
    B("paginate_to_end", "read every page of a series (page 1 holds only the newest years)", 0.7, 0.03, 0.998, C(
        "paginate pagination",
        "page pages next last every all remaining later follow through read beyond",
        acts="paginate follow read", lapses="stop")),
    B("order_years", "order the rows by year: the API lists the newest year first", 0.75, 0.03, 0.998, C(
        "chronological descending newest oldest sort sorted reverse order ordering",
        "year years start end swap swapped",
        acts="sort order")),
    B("skip_missing_values", "use the nearest year of the range that has a value when a boundary year is null",
      0.6, 0.03, 0.998, C(
          "missing null nulls gap gaps nearest unpublished",
          "value values year years skip skipping available data earliest latest boundary",
          acts="skip use")),
    B("scale_units", "report values in the unit the task asks for (millions, billions)", 0.55, 0.03, 0.998, C(
        "million millions billion billions rescale divide",
        "unit units scale raw persons dollar dollars value values convert",
        acts="convert divide scale")),
    B("exclude_aggregates", "leave aggregates (World, regions, income groups) out of a ranking of countries",
      0.62, 0.02, 0.998, C(
          "aggregate aggregates",
          "region regions income group groups world rank ranking top exclude",
          acts="exclude")),
    *shared_behaviours(skip_unneeded(
        "skip_unneeded_calls", "request only the years the task asks for (a date filter)",
        "only date range filter whole full series extra fewer waste wasted ask asks need", acts="filter", base=0.7)),
)
TOPIC = topic("world bank indicator indicators development economic economy statistics country countries")
