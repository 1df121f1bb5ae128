"""FeedbackReflector (`reflector=feedback`, the default offline reflector): family-agnostic by
construction (imports, sources), turns recurring failures into guidance in its own words, merges
near-duplicates, keeps the skill within its length budget, and closes headroom in closed loops."""

from __future__ import annotations

import ast
import json
import re
import statistics
import subprocess
import sys

import pytest
from helpers_skillcraft import ROOT, data_dir, load, skill

from evaluators.skillcraft import FeedbackReflector, SkillCraftEvaluator, get_family
from evaluators.skillcraft.family import family_names
from gepa_lab import SearchConfig, optimize
from gepa_lab.core.artifacts import PromptArtifact, artifact_from_dict
from gepa_lab.core.errors import ReflectionRejected
from gepa_lab.data import load_dataset_dir
from gepa_lab.search.reflection import apply_reply, build_records

PKG = ROOT / "evaluators" / "skillcraft"
REFLECTOR_MODULES = ("evaluators.skillcraft.reflectors.feedback",)
# What the reflector may not reach: family subpackages, the family registry and the simulator's internals.
FORBIDDEN = {f"evaluators.skillcraft.{f}" for f in family_names()} | {
    "evaluators.skillcraft.concepts", "evaluators.skillcraft.skill",
    "evaluators.skillcraft.agent", "evaluators.skillcraft.evaluator", "evaluators.skillcraft.family",
    "evaluators.skillcraft.tools", "evaluators.skillcraft.grading", "evaluators.skillcraft.reflectors.tuned",
    "evaluators.skillcraft.reflectors.vocabulary"}
COMPONENTS = ("steps", "pitfalls", "when_to_use", "description")


def _path(module: str) -> str:
    base = ROOT.joinpath(*module.split("."))
    return str(base / "__init__.py") if base.is_dir() else str(base.with_suffix(".py"))


def _imports(module: str) -> set[str]:
    tree = ast.parse(open(_path(module), encoding="utf-8").read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in found if m.startswith("evaluators")}


def _closure(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        for dep in _imports(m):
            try:
                _path(dep) and open(_path(dep)).close()
            except FileNotFoundError:
                continue  # `from pkg import name` where name is not a module
            todo.append(dep)
    return seen


def _forbidden(modules: set[str]) -> set[str]:
    return {m for m in modules for f in FORBIDDEN if m == f or m.startswith(f + ".")}


def test_imports_nothing_from_family_subpackages_or_the_simulator():
    for module in REFLECTOR_MODULES:
        assert not _forbidden(_closure(module)), _forbidden(_closure(module))
    # At run time too: importing it (as Hydra does) loads no family, registry or simulator module.
    code = ("import sys, evaluators.skillcraft.reflectors.feedback as f; f.FeedbackReflector(); "
            "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('evaluators'))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert "evaluators.skillcraft.reflectors.feedback" in loaded
    assert not _forbidden(loaded), _forbidden(loaded)


def _code_words(src: str, strings: bool = True) -> set[str]:
    """Names, attributes and (optionally) string constants of the code (docstrings left out)."""
    tree = ast.parse(src)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif strings and isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            out |= set(re.findall(r"[A-Za-z_]+", n.value))
    return {w.lower() for w in out}


def test_sources_know_no_family_and_read_no_files():
    family_words = {"recipe", "recipes", "cookbook", "cuisine", "dish", "dishes", "ingredient", "weather",
                    "forecast", "geocode", "celsius", "fahrenheit", "city", "cities", "total_hint",
                    "search_recipes", "get_recipe", "get_forecast", "metric", "unit", "units"}
    for name in ("feedback.py", "evidence.py", "guidance.py", "text.py"):
        src = (PKG / "reflectors" / name).read_text(encoding="utf-8")
        words = _code_words(src)
        assert not (words & family_words), (name, words & family_words)
        code = _code_words(src, strings=False)
        assert not (code & {"open", "read_text", "read_bytes", "path", "load_fixtures", "fixtures"}), name


def record(feedback: str, score: float = 0.4, trace: str = "{}", input_text: str = "task") -> dict:
    return {"case_id": "case-1", "input": input_text, "expected": "{}", "score": score, "output": "",
            "feedback": feedback, "trace": trace}


SEED = skill(get_family("recipe").seed_skill)


def test_reply_shape_only_the_selected_component_and_determinism():
    cases = load("feedback")[:3]
    ev = SkillCraftEvaluator()
    records = build_records(cases, ev.evaluate(SEED, cases, 3))
    for component in COMPONENTS:
        reply = FeedbackReflector(seed=1).reflect(SEED, component, records)
        assert set(reply) == {"name", "description", "when_to_use", "steps", "pitfalls", "rationale"}
        for other in set(COMPONENTS) - {component}:
            assert reply[other] == SEED.to_dict()[other]
        assert reply == FeedbackReflector(seed=1).reflect(SEED, component, records)
        try:
            apply_reply(SEED, component, reply)
        except ReflectionRejected as exc:
            assert "did not change" in str(exc)
    with pytest.raises(ValueError, match="max_skill_chars"):
        FeedbackReflector(max_skill_chars=10)


def test_a_recurring_failure_in_unfamiliar_wording_becomes_guidance():
    """Text from no family at all: the recurring failure wins over the one-off."""
    recurring = "- [critical] invoices.INV-2231: the totals were not rounded to cents"
    records = [record(f"Official result: FAILED.\nFailed checks:\n{recurring.replace('2231', str(n))}\n"
                      + ("- header: stale timestamp kept in the cover sheet\n" if n == 1 else ""))
               for n in (1, 2, 3)]
    for seed in range(5):
        reply = FeedbackReflector(seed=seed).reflect(SEED, "steps", records)
        added = [s for s in reply["steps"] if s not in SEED.steps]
        assert len(added) == 1
        assert "rounded to cents" in added[0] and "INV" not in added[0]  # de-identified
        assert "stale timestamp" not in added[0]
        assert reply["steps"][-1] == SEED.steps[-1]  # new work goes before the step that writes


def test_a_loop_in_the_trace_becomes_a_guardrail():
    calls = [{"tool": "lookup", "args": {"q": "Ærø"}, "status": "empty"}] * 9
    trace = json.dumps({"tool_calls": calls, "tool_calls_total": 9})
    reply = FeedbackReflector(seed=0).reflect(SEED, "pitfalls", [record("Official result: FAILED.", trace=trace)])
    added = [p for p in reply["pitfalls"] if p not in SEED.pitfalls]
    assert added and "lookup" in added[0] and "identical" in added[0] and "Ærø" not in added[0]


def test_near_duplicates_merge_and_the_skill_stays_within_its_budget():
    text = "- [critical] report.A: the rows were not sorted by date"
    base = skill(get_family("recipe").seed_skill, steps=["Make sure the rows are sorted by date."] * 1 + ["Write it."])
    reply = FeedbackReflector(seed=0).reflect(base, "steps", [record(text), record(text)])
    assert len(reply["steps"]) <= 3
    from evaluators.skillcraft.reflectors.guidance import similar
    steps = reply["steps"]
    assert all(similar(a, b) < 0.6 for i, a in enumerate(steps) for b in steps[i + 1:])
    # A skill at its budget: new guidance replaces or shortens, the total never exceeds the budget.
    long_steps = [f"Step {i}: keep the {w} tidy — this explanation is here only to take up room in the skill."
                  for i, w in enumerate(["ledger", "journal", "archive", "register", "index", "catalogue"])]
    full = skill(get_family("recipe").seed_skill, steps=long_steps + ["Write it."])
    budget = 700
    for n in range(4):
        reply = FeedbackReflector(seed=n, max_skill_chars=budget).reflect(
            full, "steps", [record(f"- [critical] part.{n}: the widgets were not {w}") for w in ("counted", "weighed")])
        total = sum(len(x) for k in ("description", "when_to_use") for x in [reply[k]])
        total += sum(len(x) for k in ("steps", "pitfalls") for x in reply[k])
        assert total <= budget or reply["steps"] == list(full.steps)


def test_when_to_use_names_the_task_terms_after_a_failed_load():
    inputs = ["Reconcile the vendor invoices for March and flag duplicate invoices.",
              "Match every vendor invoice against the purchase ledger; report mismatched invoices."]
    records = [record("Official result: FAILED.\nEfficiency: 10 tool calls, skill loaded: no.", input_text=t)
               for t in inputs]
    reply = FeedbackReflector().reflect(SEED, "when_to_use", records)
    assert "invoice" in reply["when_to_use"].lower() and "vendor" in reply["when_to_use"].lower()
    assert "March" not in reply["when_to_use"]  # a name, not a task term
    loaded = [dict(r, feedback="Official result: PASSED.", score=0.95) for r in records]
    covered = skill(get_family("recipe").seed_skill, when_to_use="Use for vendor invoice reconciliation against "
                    "the purchase ledger.")
    assert FeedbackReflector().reflect(covered, "when_to_use", loaded)["when_to_use"] == covered.when_to_use


def test_other_artifact_kinds_get_a_guardrail_line():
    prompt = PromptArtifact(text="Answer the question.")
    reply = FeedbackReflector().reflect(prompt, "text", [record("- answers were not cited"), record("- answers were not cited")])
    assert reply["text"].startswith("Answer the question.\n") and "cited" in reply["text"]


@pytest.mark.parametrize("family", family_names())
def test_its_guidance_moves_the_simulated_agent(family):
    """On real minibatches of the seed skill, its edits address the failing behaviours: the child
    beats the parent on the same minibatch with the same seed more often than not."""
    spec = get_family(family)
    ev = SkillCraftEvaluator(family=family)
    seed, cases = skill(spec.seed_skill), load("feedback", family)
    better = worse = 0
    for i in range(12):
        batch = [cases[(3 * i + k) % len(cases)] for k in range(3)]
        parent = ev.evaluate(seed, batch, i)
        if all(r.score >= 0.8 for r in parent):
            continue
        reply = FeedbackReflector(seed=i).reflect(seed, ("steps", "pitfalls")[i % 2], build_records(batch, parent))
        child, _ = apply_reply(seed, ("steps", "pitfalls")[i % 2], reply)
        gain = sum(r.score for r in ev.evaluate(child, batch, i)) - sum(r.score for r in parent)
        better += gain > 1e-9
        worse += gain < -1e-9
    assert better >= 3 and better > 2 * worse


@pytest.mark.slow
@pytest.mark.parametrize("family", family_names())
def test_closed_loop_closes_headroom_on_holdout(family):
    data = data_dir(family)
    dataset = load_dataset_dir(data)
    seed = artifact_from_dict(get_family(family).seed_skill)
    reference = skill(get_family(family).reference_skill)
    ev = SkillCraftEvaluator(family=family)
    closed = []
    for run in range(1, 4):
        r = optimize(seed, dataset, ev, FeedbackReflector(seed=run),
                     SearchConfig(random_seed=run, max_metric_calls=600, max_iterations=None))
        ref = statistics.mean(x.score for x in ev.evaluate(reference, list(dataset.holdout), r.seeds["holdout_seed"]))
        closed.append((r.candidate_holdout.score - r.baseline_holdout.score) / (ref - r.baseline_holdout.score))
    assert sum(c > 0 for c in closed) >= 2 and statistics.mean(closed) > 0.1, closed
