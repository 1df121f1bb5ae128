"""The pokemon family's rubric: compares the written chain report with the ground truth.

members (critical: every species of the chain, no other); per member base_stat_total (critical),
one multiplier per move type (critical) and its entry (pokemon = the default variety, stage,
types); chain_id and strongest; no artifact is one failed critical check (docs/skillcraft_sim.md §5).
"""

from __future__ import annotations

from typing import Any

from evaluators.skillcraft.family import Check
from evaluators.skillcraft.pokemon.fixtures import display_name
from evaluators.skillcraft.pokemon.task import PokemonTask
from evaluators.skillcraft.pokemon.world import PokemonWorld


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _cause(world: PokemonWorld, move: str, types: list[str], got: float) -> str:
    """Which known slip produces the reported multiplier (a grader's reading of the number)."""
    rel = world.types[move]["damage_relations"]

    def value(side: str, ts: list[str], immune: bool = True) -> float:
        m = 1.0
        for t in ts:
            if immune and any(x["name"] == t for x in rel[f"no_damage_{side}"]):
                m *= 0.0
            elif any(x["name"] == t for x in rel[f"double_damage_{side}"]):
                m *= 2.0
            elif any(x["name"] == t for x in rel[f"half_damage_{side}"]):
                m *= 0.5
        return m

    if len(types) > 1 and got == value("to", types[:1]):
        return f"; its second type ({types[1]}) was not counted"
    if got in (value("from", types), value("from", types[:1])):
        return (f"; the multiplier was read the wrong way round (the damage its types deal to {move}, not the "
                f"damage {move} deals)")
    if got in (value("to", types, immune=False), value("to", types[:1], immune=False)):
        return f"; the immunity was not applied (a {move} move has no effect on it)"
    return ""


def _past_total(world: PokemonWorld, name: str) -> int | None:
    p = world.pokemon.get(name)
    if not p or not p.get("past_stats"):
        return None
    return sum(int(s["base_stat"]) for s in p["past_stats"][0]["stats"])


def grade(task: PokemonTask, artifact: dict[str, Any] | None) -> list[Check]:
    """Rubric checks of the written artifact against the ground truth."""
    if artifact is None:
        return [Check("artifact", False, True, f"no artifact: {task.output_file} was not written")]
    exp = task.expected
    world = task.world
    rows = artifact.get("members") if isinstance(artifact.get("members"), list) else []
    assert isinstance(rows, list)
    got = {str(r.get("species")): r for r in rows if isinstance(r, dict)}
    want = [m["species"] for m in exp["members"]]
    missing = [s for s in want if s not in got]
    extra = [s for s in got if s not in want]
    msg = ""
    if missing:
        msg = (f"{len(missing)} of {len(want)} chain members missing ("
               + ", ".join(display_name(s) for s in missing[:4]) + (", …" if len(missing) > 4 else "") + ")")
    elif extra:
        msg = "members that are not in the chain: " + ", ".join(display_name(s) for s in extra[:4] if s in world.species)
    checks = [Check("members", not missing and not extra, True, msg)]
    for m in exp["members"]:
        name = m["species"]
        where = f'"{display_name(name)}"'
        g = got.get(name)
        if g is None:
            continue  # the members check reports it
        total = g.get("base_stat_total")
        ok = total == m["base_stat_total"]
        msg = "" if ok else f"{where}: base_stat_total is {total}, expected {m['base_stat_total']}"
        if not ok and total == _past_total(world, m["pokemon"]):
            msg += "; it is the total of the older past_stats, not of the current stats"
        checks.append(Check(f"{name}.base_stat_total", ok, True, msg))
        for move, value in (m.get("multipliers") or {}).items():
            reported = (g.get("multipliers") or {}).get(move) if isinstance(g.get("multipliers"), dict) else None
            ok = _num(reported) and abs(reported - value) < 1e-9
            msg = "" if ok else (f"{where}: a {move} move does {reported}× in the artifact, expected {value}× "
                                 f"({'/'.join(m['types'])})")
            if not ok and isinstance(reported, (int, float)):
                msg += _cause(world, move, m["types"], float(reported))
            checks.append(Check(f"{name}.multipliers.{move}", ok, True, msg))
        wrong = [k for k in ("pokemon", "stage", "types") if g.get(k) != m[k]]
        checks.append(Check(f"{name}.entry", not wrong, False, "" if not wrong else (
            f"{where}: " + "; ".join(f"{k} is {g.get(k)}, expected {m[k]}" for k in wrong))))
    checks.append(Check("chain_id", artifact.get("chain_id") == exp["chain_id"], False,
                        f"chain_id is {artifact.get('chain_id')}, expected {exp['chain_id']}"))
    checks.append(Check("strongest", artifact.get("strongest") == exp["strongest"], False,
                        f"strongest is {artifact.get('strongest')}, expected {exp['strongest']}"))
    return checks
