"""The pokemon family's behaviours: what the simulated agent does right or wrong, how likely, and
the concept (stemmed content words) through which a skill's steps and pitfalls address each.

`resolve_default_form` is the loop-prone one (a species whose Pokémon carries a form suffix is
looked up by its bare name again and again); `follow_every_branch` matters only on m2 / h1, the
only scales that ask about branching chains (docs/skillcraft_sim.md §4.1).
"""

from __future__ import annotations

from evaluators.skillcraft.concepts import Concept
from evaluators.skillcraft.family import Behaviour, shared_behaviours, skip_unneeded, topic

B, C = Behaviour, Concept.of
BEHAVIOURS: tuple[Behaviour, ...] = (
    B("resolve_default_form", "look up a species' default variety when its bare name is not a Pokémon",
      0.5, 0.03, 0.998, C(
          "variety varieties form forms suffix",
          "default species found identical again same repeat repeated change name lookup look",
          acts="look use")),
    B("follow_every_branch", "list every branch of a branching evolution chain", 0.6, 0.02, 0.998, C(
        "branch branches branching",
        "evolves evolve split path paths fork forks alternative alternatives",
        acts="follow")),
    B("use_current_stats", "sum the current base stats, not the older past_stats", 0.5, 0.03, 0.998, C(
        "past current latest outdated",
        "older old generation generations stat stats",
        acts="use sum", lapses="copy")),
    B("multiply_dual_types", "multiply the effectiveness against both of a dual-type Pokémon's types",
      0.5, 0.03, 0.998, C(
          "dual multiply multiplied product",
          "both type types two second first combine combined factor factors",
          acts="multiply")),
    B("read_attacking_relations", "read the move type's damage_to relations, not its damage_from ones",
      0.55, 0.03, 0.998, C(
          "attacking attacker direction",
          "attack move moves deal deals damage defending defender way round reverse reversed side",
          acts="read")),
    B("apply_immunities", "count no_damage_to as a multiplier of 0", 0.5, 0.03, 0.998, C(
        "immunity immunities immune zero",
        "effect none nothing damage",
        acts="apply count")),
    *shared_behaviours(skip_unneeded(
        "skip_unneeded_calls", "fetch species resources only where the task needs them",
        "only extra species resource resources already fewer waste wasted ask need needs")),
)
TOPIC = topic("pokemon pokeapi species evolution evolutions evolve")
