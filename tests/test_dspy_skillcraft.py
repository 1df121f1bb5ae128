"""`evaluator=skillcraft_dspy`: a `dspy.ReAct` agent over the SkillCraft-sim recipe tools, on a
model served by the loopback stub, graded by the simulator's rubric."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from stub_llm import StubLLM, chat_fields

from gepa_lab import EvaluationSettings
from gepa_lab.core.artifacts import SkillSpec
from gepa_lab.core.contracts import Case, split_digest
from gepa_lab.data import load_artifact, load_dataset_dir
from gepa_lab.search.evaluation import CaseRunner

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # litellm's import warns about pydantic

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "datasets" / "skillcraft" / "recipe"
KEY_ENV = "GEPA_LAB_TEST_STUB_KEY"
SECRET = "sk-stub-a11ce0b5e77ed00d42"
SECTIONS = {"category_dishes": "category", "cuisine_dishes": "cuisine", "ingredient_dishes": "ingredient"}
MARKER = "Compute each count from the collected dish ids"  # what makes the scripted agent count right


@pytest.fixture(scope="session")
def litellm_loaded() -> None:
    import litellm  # noqa: F401


@pytest.fixture(scope="module")
def recipe():
    return load_dataset_dir(RECIPE), load_artifact(RECIPE / "seed_skill.json")


class RecipeAgentModel:
    """A scripted ReAct model: search the first list, write the report (its first count off by
    one unless the instructions say MARKER), claim_done, finish; then the extract step. Replies
    `malformed` for tasks containing any of `malformed`."""

    def __init__(self, cases: dict[str, Case], malformed: tuple[str, ...] = ()):
        self.cases = cases
        self.malformed = malformed

    def __call__(self, request) -> str:
        user = request.last_user
        task = re.search(r"\[\[ ## task ## \]\]\n(.*?)\n\n\[\[ ## trajectory", user, re.S).group(1).strip()
        if task in self.malformed:
            return "I will just describe what I would do."
        case = self.cases[task]
        out = re.search(r"Write the JSON to (\S+) with write_file", task).group(1)
        if "next_tool_name" not in request.system:
            return chat_fields(reasoning="The report is written.", summary=f"Wrote {out}.")
        step = user.count("[[ ## tool_name_")
        report = json.loads(case.expected)
        section = next(k for k in report if k in SECTIONS)
        value = next(iter(report[section]))
        if step == 0:
            name, args = "search_recipes", {"by": SECTIONS[section], "value": value, "page": 1}
        elif step == 1:
            if MARKER not in request.system:
                report[section][value]["count"] += 1
            name, args = "write_file", {"path": out, "content": json.dumps(report)}
        else:
            name, args = ("claim_done", {}) if step == 2 else ("finish", {})
        return chat_fields(next_thought=f"Step {step}: {name}.", next_tool_name=name,
                           next_tool_args=json.dumps(args))


def all_cases(dataset) -> dict[str, Case]:
    return {c.input: c for c in (*dataset.feedback, *dataset.validation, *dataset.holdout)}


@pytest.fixture
def stub(litellm_loaded, recipe):
    server = StubLLM(RecipeAgentModel(all_cases(recipe[0])))
    yield server
    server.close()


def evaluator(stub: StubLLM, monkeypatch: pytest.MonkeyPatch, **lm):
    from evaluators.skillcraft_dspy import SkillCraftDspyEvaluator

    monkeypatch.setenv(KEY_ENV, SECRET)
    return SkillCraftDspyEvaluator(lm={"model": "openai/stub-agent", "api_base": stub.url, "api_key_env": KEY_ENV,
                                       **lm}, max_iters=6)


def improved(skill: SkillSpec) -> SkillSpec:
    return SkillSpec(skill.name, skill.description, skill.when_to_use,
                     (*skill.steps, f"{MARKER}, never from total_hint."), skill.pitfalls)


def test_the_agent_is_graded_by_the_simulator_rubric(stub, monkeypatch, recipe):
    from evaluators.skillcraft.family import get_family
    from evaluators.skillcraft.grading import score_of

    dataset, seed = recipe
    ev = evaluator(stub, monkeypatch, usd_per_1k_tokens=0.01)
    cases = list(dataset.validation[:2])
    before = ev.evaluate(seed, cases, 42)
    after = ev.evaluate(improved(seed), cases, 42)
    for ev_, case in zip(before, cases, strict=True):
        assert ev_.objectives["passed"] == 0.0 and ev_.score < 0.8
        assert "[critical]" in ev_.feedback and "the count was not computed from the collected ids" in ev_.feedback
        # Same rubric and formula as the simulator: the written report graded by the family's grader.
        family = get_family("recipe")
        task = family.parse_task(ev.world, case)
        checks = family.grade(task, json.loads(ev_.output))
        assert ev_.score == score_of(checks, True, int(ev_.objectives["tokens"]), 200_000)[0]
    for ev_ in after:
        assert ev_.objectives["passed"] == 1.0 and ev_.score > 0.99
        assert ev_.output == json.dumps(json.loads(next(c.expected for c in cases if c.id == ev_.case_id)))
    assert len(stub.requests) == 2 * 2 * 5  # per case: 4 ReAct steps + 1 extract


def test_usage_seed_and_trace_are_recorded(stub, monkeypatch, recipe):
    dataset, seed = recipe
    ev = evaluator(stub, monkeypatch, usd_per_1k_tokens=0.01)
    [result] = ev.evaluate(seed, [dataset.feedback[0]], 7)
    requests = stub.requests
    tokens = sum(r.usage["prompt_tokens"] + r.usage["completion_tokens"] for r in requests)
    assert result.objectives["tokens"] == result.objectives["agent_tokens"] == tokens
    assert result.objectives["cost_usd"] == pytest.approx(tokens / 1000 * 0.01)
    assert result.objectives["lm_calls"] == 5 and result.objectives["tool_calls"] == 3
    assert result.objectives["latency_ms"] > 0
    trace = json.loads(result.trace)
    assert [c["tool"] for c in trace["tool_calls"]] == ["search_recipes", "write_file", "claim_done"]
    assert trace["provider_seed"] == requests[0].body["seed"] and trace["provider_seed_sent"] is True
    assert {r.body["seed"] for r in requests} == {trace["provider_seed"]}  # one seed per case, every step
    assert trace["thoughts"][:2] == ["Step 0: search_recipes.", "Step 1: write_file."]
    # The skill is the agent's instructions, as SKILL.md.
    assert "---\nname: recipe-cookbook-builder" in requests[0].system.replace("        ", "")


def test_a_malformed_reply_is_a_failed_run_not_a_crash(stub, monkeypatch, recipe):
    dataset, seed = recipe
    case = dataset.feedback[1]
    stub.responder = RecipeAgentModel(all_cases(dataset), malformed=(case.input,))
    ev = evaluator(stub, monkeypatch)
    [result] = ev.evaluate(seed, [case], 7)
    assert result.score == 0.0 and result.objectives["format_error"] == 1.0
    assert "did not follow the agent's output format" in result.feedback
    assert "never wrote cookbook.json" in result.feedback or "Missing artifact" in result.feedback


def test_rate_limits_and_server_errors_are_retried(stub, monkeypatch, recipe):
    dataset, seed = recipe
    ev = evaluator(stub, monkeypatch)
    stub.fail_next(429)
    stub.fail_next(500)
    runner = CaseRunner(ev, EvaluationSettings(max_retries=2, retry_backoff_s=0.0))
    [result] = runner.run(improved(seed), "id", [dataset.feedback[0]], 3)
    assert result.objectives["passed"] == 1.0 and "evaluation_failed" not in result.objectives
    assert [r.status for r in stub.requests][:2] == [429, 500]


# -- the command line ------------------------------------------------------------------------------
def small_recipe(dest: Path, n: int = 3) -> None:
    """The recipe dataset cut to n cases per split (new manifest), for a short run."""
    dest.mkdir()
    manifest = json.loads((RECIPE / "manifest.json").read_text())
    for split in ("feedback", "validation", "holdout"):
        lines = (RECIPE / f"{split}.jsonl").read_text().splitlines()[:n]
        (dest / f"{split}.jsonl").write_text("".join(line + "\n" for line in lines))
        manifest["splits"][split]["sha256"] = split_digest([Case.from_dict(json.loads(x)) for x in lines])
    (dest / "manifest.json").write_text(json.dumps(manifest))
    (dest / "seed_skill.json").write_text((RECIPE / "seed_skill.json").read_text())


@pytest.mark.slow
def test_skillcraft_dspy_run_from_the_command_line(tmp_path, recipe):
    dataset, _ = recipe
    small_recipe(tmp_path / "data")
    agent = RecipeAgentModel(all_cases(dataset))

    def respond(request):
        if request.model.endswith("stub-reflect"):
            component = re.search(r"Selected component: `(\w+)`", request.text).group(1)
            value = json.loads(request.text.split(f"## Current value of `{component}`\n```json\n", 1)[1]
                               .split("\n```", 1)[0])
            new = [*value, f"{MARKER}, never from total_hint."] if isinstance(value, list) else f"{value} {MARKER}."
            return json.dumps({component: new, "rationale": "counts were off by one"})
        return agent(request)

    with StubLLM(respond) as stub:
        stub.fail_next(429, model="stub-agent")
        stub.fail_next(500, model="stub-agent")
        lm = []
        for role, model in (("task", "stub-agent"), ("reflection", "stub-reflect")):
            lm += [f"lm.{role}.model=openai/{model}", f"lm.{role}.api_base={stub.url}",
                   f"lm.{role}.api_key_env={KEY_ENV}", f"lm.{role}.usd_per_1k_tokens=0.01"]
        done = subprocess.run(
            [sys.executable, "-m", "gepa_lab", "experiment=recipe", "evaluator=skillcraft_dspy", "reflector=dspy",
             f"dataset.path={tmp_path / 'data'}", "search.max_iterations=1", "search.minibatch_size=2",
             "evaluation.workers=2", "evaluation.retry_backoff_s=0", "tracking=none", "progress=log", *lm],
            cwd=tmp_path, capture_output=True, text=True, timeout=300,
            env={**os.environ, KEY_ENV: SECRET, "PYTHONUNBUFFERED": "1"})
        requests = list(stub.requests)
    assert done.returncode == 0, done.stderr
    run = Path(next(x for x in done.stdout.splitlines() if x.strip().startswith("record")).split(None, 1)[1].strip())
    result = json.loads((run / "result.json").read_text())
    assert result["best_id"] != result["seed_id"]  # the reflected edit fixed the counts
    assert result["candidate_holdout"]["score"] > 0.99 > result["baseline_holdout"]["score"]
    agent_requests = [r for r in requests if r.model == "stub-agent"]
    assert [r.status for r in agent_requests[:2]] == [429, 500]
    results = list(map(json.loads, (run / "evaluations.jsonl").read_text().splitlines()))  # one per paid case
    assert sum(r["objectives"]["tokens"] for r in results) == sum(
        r.usage["prompt_tokens"] + r.usage["completion_tokens"] for r in agent_requests if r.status == 200)
    hidden = [c.input for c in (*dataset.validation[:3], *dataset.holdout[:3])]
    reflect = [r for r in requests if r.model == "stub-reflect"]
    forms = [form for t in hidden for form in (t, json.dumps(t)[1:-1])]  # raw, and as inside records JSON
    assert reflect and not [f for f in forms for r in reflect if f in r.text]
    assert all(any(t in r.text for r in agent_requests) for t in hidden)  # the agent did see them
    assert SECRET not in done.stdout + done.stderr
    assert not [p for p in run.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


@pytest.mark.parametrize("family", ["recipe", "weather"])
def test_every_family_has_tools_recorded_like_the_simulator(family):
    from evaluators.skillcraft.evaluator import default_data_dir
    from evaluators.skillcraft.family import family_names, get_family
    from evaluators.skillcraft.rng import Draws
    from evaluators.skillcraft_dspy.toolsets import build_toolset

    assert all(get_family(f).tools for f in family_names())  # a new family describes its tools
    spec = get_family(family)
    data = load_dataset_dir(default_data_dir(family))
    world = spec.load_world(default_data_dir(family))
    case = data.feedback[0]
    toolset = build_toolset(family, world, spec.parse_task(world, case), Draws(1, case.id))
    tools = {fn.__name__: fn for fn in toolset.functions}
    assert {"write_file", "claim_done"} <= set(tools) and len(tools) >= 4
    assert all(fn.__doc__ and "  " not in fn.__doc__ for fn in toolset.functions)  # clean tool descriptions
    first = next(name for name in tools if name not in ("write_file", "claim_done"))
    args = {"recipe": {"by": "category", "value": "Dessert"}, "weather": {"name": "Paris"}}[family]
    assert isinstance(tools[first](**args), dict)
    tools["write_file"](path="out.json", content="{}")
    tools["claim_done"]()
    assert [c.tool for c in toolset.calls] == [first, "write_file", "claim_done"]
    assert toolset.written("out.json") == "{}" and toolset.claimed
