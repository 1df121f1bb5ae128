"""The weather family's behaviours: what the simulated agent does right or wrong, how likely, and
the concept (stemmed content words) through which a skill's steps and pitfalls address each.

`geocode_plain_name` is the loop-prone one (an accented query returns nothing and the agent
re-sends it); `request_every_window` matters only on m2 / h1, the only scales whose date ranges
exceed one 7-day forecast window (docs/skillcraft_sim.md §4.1).
"""

from __future__ import annotations

from evaluators.skillcraft.concepts import Concept
from evaluators.skillcraft.family import Behaviour, shared_behaviours, skip_unneeded, topic

B, C = Behaviour, Concept.of
BEHAVIOURS: tuple[Behaviour, ...] = (
    B("geocode_plain_name", "search again with the plain ASCII spelling instead of repeating an empty query",
      0.5, 0.03, 0.997, C(
          "accent accents accented diacritic diacritics ascii spelling transliterate loop looping",
          "plain repeat repeated identical again same empty nothing change different variant query letters",
          acts="change")),
    B("disambiguate_city", "pick the geocoding candidate whose region and country match the task", 0.5, 0.03, 0.997, C(
        "ambiguous disambiguate homonym homonyms",
        "country state region province candidate candidates match matching coordinates different place same "
        "name first pick choose correct")),
    B("convert_units", "convert °F, inch and mph to °C, mm and km/h", 0.4, 0.03, 0.996, C(
        "convert conversion celsius fahrenheit metric imperial",
        "unit units inch inches mph millimetre millimetres mm km temperature temperatures precipitation",
        acts="convert")),
    B("keep_null_days", "keep days with missing values, as null, instead of dropping them", 0.45, 0.03, 0.996, C(
        "null nulls gap gaps",
        "missing value values day days keep drop dropped omit blank sensor data",
        acts="keep include", lapses="drop skip")),
    B("summarise_requested_days", "compute summaries from the requested days, not the horizon summary block",
      0.55, 0.03, 0.997, C(
          "recompute horizon",
          "summary summaries compute computed calculate requested own copy copied range mean average total hottest "
          "derive",
          acts="compute calculate", lapses="copy trust")),
    B("request_every_window", "request every 7-day window of a long range (follow next_start_date)", 0.6, 0.02, 0.997, C(
        "window windows chunk chunks",
        "seven week split range ranges several multiple long longer next start follow beyond whole",
        acts="follow split")),
    *shared_behaviours(skip_unneeded(
        "skip_unneeded_calls", "fetch forecasts only for the places the task asks for",
        "only extra ask asks need needs fewer minimise minimize waste wasted other candidates")),
)
TOPIC = topic("weather forecast forecasts meteo meteorological climate rain")
