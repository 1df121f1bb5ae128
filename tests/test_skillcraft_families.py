"""The family contract, checked for every family: data, tables, ground truth, rubric, the shape
of the seed / reference gap, a loop-prone behaviour, one that matters only on m2 / h1,
determinism, clear errors and lazy loading. A new family passes these without new test code.
(Speed is measured by experiments/skillcraft_calibration.py, not asserted here.)"""

from __future__ import annotations

import json
import math
import re
import shutil
import statistics
import subprocess
import sys
from collections import Counter
from dataclasses import replace

import pytest
import yaml
from helpers_skillcraft import ROOT, SPLITS, data_dir, load, load_all, skill

from evaluators.skillcraft import SkillCraftEvaluator
from evaluators.skillcraft import family as family_module
from evaluators.skillcraft.family import CASES_PER_SCALE, SCALES, SPLIT_SCALES, FamilySpec, family_names, get_family
from evaluators.skillcraft.generate import main as generate_main
from gepa_lab.core.artifacts import artifact_from_dict
from gepa_lab.core.contracts import split_digest
from gepa_lab.data import load_dataset_dir

FAMILY_NAMES = family_names()
HARD = ("m2", "h1")
LOOP = 5


@pytest.fixture(scope="module", params=FAMILY_NAMES)
def fam(request: pytest.FixtureRequest) -> tuple[FamilySpec, SkillCraftEvaluator]:
    return get_family(request.param), SkillCraftEvaluator(family=request.param)


def test_families_load_lazily_and_unknown_ones_are_named():
    assert set(FAMILY_NAMES) >= {"recipe", "weather"}
    assert all(get_family(name).name == name for name in FAMILY_NAMES)
    with pytest.raises(ValueError, match=re.escape(f"unknown SkillCraft-sim family 'nope'; known: "
                                                   f"{', '.join(FAMILY_NAMES)}")):
        get_family("nope")
    # Building one family's evaluator imports that family only (and no reflector).
    code = ("import sys; from evaluators.skillcraft import SkillCraftEvaluator as E; E(family='weather'); "
            "print(sorted(m for m in sys.modules if m.startswith('evaluators.skillcraft.')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = eval(done.stdout)
    assert "evaluators.skillcraft.weather" in loaded
    assert not [m for m in loaded if m.split(".")[2] in set(FAMILY_NAMES) - {"weather"} | {"reflectors"}], loaded


# --- data -------------------------------------------------------------------------------------

def test_manifests_match_the_committed_splits_and_are_rewritten_after_an_edit(tmp_path, capsys):
    assert generate_main(["--check"]) == 0
    copy = tmp_path / "weather"
    shutil.copytree(data_dir("weather"), copy)
    lines = (copy / "holdout.jsonl").read_text(encoding="utf-8").splitlines()
    (copy / "holdout.jsonl").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # one case fewer
    assert generate_main(["--family", "weather", "--dir", str(copy), "--check"]) == 1
    assert "manifest.json is stale" in capsys.readouterr().err
    with pytest.raises(ValueError, match="digest"):
        load_dataset_dir(copy)
    assert generate_main(["--family", "weather", "--dir", str(copy)]) == 0
    assert len(load_dataset_dir(copy).holdout) == len(lines) - 1
    assert generate_main(["--family", "weather", "--dir", str(copy), "--check"]) == 0


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_damaged_fixtures_give_one_line_errors_naming_the_file(tmp_path, family_name):
    copy = tmp_path / family_name
    shutil.copytree(data_dir(family_name), copy)
    fixtures = json.loads((copy / "fixtures.json").read_text(encoding="utf-8"))
    for broken in ("{not json", json.dumps([1]), json.dumps({**fixtures, "version": None} | {
            k: None for k in list(fixtures)[-1:]})):
        (copy / "fixtures.json").write_text(broken, encoding="utf-8")
        with pytest.raises(ValueError) as info:
            SkillCraftEvaluator(family=family_name, data_dir=copy)
        assert str(copy / "fixtures.json") in str(info.value) and "\n" not in str(info.value)


def test_damaged_family_tables_give_one_line_errors_naming_the_file(tmp_path, monkeypatch):
    tables = tmp_path / "skillcraft"
    shutil.copytree(family_module.HERE, tables, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    monkeypatch.setattr(family_module, "HERE", tables)
    path = tables / "catfacts" / "family.yaml"
    good = yaml.safe_load(path.read_text(encoding="utf-8"))
    rows = good["behaviours"]
    for broken, problem in (({**good, "behaviours": [{**rows[0], "p": [2.0, 0.0, 1.0]}, *rows[1:]]}, "must lie in"),
                            ({**good, "behaviours": [{**rows[0], "keys": "x"}, *rows[1:]]}, "unknown key"),
                            ({**good, "behaviours": [*rows, rows[0]]}, "unique"),
                            ({**good, "topic": ["cat"]}, "topic must be text"),
                            ({k: v for k, v in good.items() if k != "reference_skill"}, "reference_skill")):
        path.write_text(yaml.safe_dump(broken), encoding="utf-8")
        family_module._load.cache_clear()
        with pytest.raises(ValueError, match=re.escape(str(path)) + ".*" + problem) as info:
            get_family("catfacts")
        assert "\n" not in str(info.value)
    family_module._load.cache_clear()


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_dataset_shape_manifest_and_digests(family):
    manifest = json.loads((data_dir(family) / "manifest.json").read_text())
    assert manifest["id"] == f"skillcraft-sim/{family}" and manifest["version"]
    every = []
    for split, scales in SPLIT_SCALES.items():
        cases = load(split, family)
        entry = manifest["splits"][split]
        assert entry["cases"] == len(cases) and entry["sha256"] == split_digest(cases)
        assert Counter(c.metadata["scale"] for c in cases) == {s: CASES_PER_SCALE for s in scales}
        assert all(c.metadata["family"] == family and c.id.startswith(f"{family}/{c.metadata['scale']}/")
                   for c in cases)
        every += cases
    assert len(every) >= 60 and len({c.id for c in every}) == len(every)
    critical = {c.metadata["scale"] for c in every if c.critical}
    assert critical == set(HARD)
    seed = json.loads((data_dir(family) / "seed_skill.json").read_text())
    assert seed == get_family(family).seed_skill and artifact_from_dict(seed).validate() is None
    assert sum(p.stat().st_size for p in data_dir(family).iterdir()) < 1_000_000
    assert load_dataset_dir(data_dir(family)).id == f"skillcraft-sim/{family}"  # digests verified on load


# --- grading and contract ---------------------------------------------------------------------

def test_ground_truth_passes_every_check_and_no_artifact_fails_critically(fam):
    spec, ev = fam
    for case in load_all(spec.name):
        task = ev.task(case)
        checks = spec.grade(task, json.loads(case.expected))
        assert checks and all(c.passed for c in checks), (case.id, [c.message for c in checks if not c.passed])
        assert any(c.critical for c in checks)
        none = spec.grade(task, None)
        assert len(none) == 1 and none[0].critical and not none[0].passed


def test_evaluations_are_well_formed_and_deterministic(fam):
    spec, ev = fam
    cases = load("holdout", spec.name)
    art = skill(spec.seed_skill)
    first = ev.evaluate(art, cases, 2**63 - 1)
    again = SkillCraftEvaluator(family=spec.name).evaluate(art, cases, 2**63 - 1)
    assert [r.to_dict() for r in first] == [r.to_dict() for r in again]
    for case, r in zip(cases, first, strict=True):
        assert r.case_id == case.id and 0.0 <= r.score <= 1.0 and math.isfinite(r.score)
        assert all(math.isfinite(v) for v in r.objectives.values())
        assert json.loads(r.trace)["tool_calls_total"] == r.objectives["tool_calls"]
        assert ("Missing artifact:" in r.feedback) == (not r.output)
    other = ev.evaluate(art, cases, 7)
    assert sum(a.score != b.score for a, b in zip(first, other, strict=True)) >= 3  # seeds matter


def test_malformed_cases_give_one_line_errors(fam):
    spec, ev = fam
    case = load("feedback", spec.name)[0]
    bad = [
        (replace(case, metadata={**case.metadata, "scale": "x9"}), f"case '{case.id}': unknown {spec.name} scale"),
        (replace(case, metadata={**case.metadata, "task": "not json"}), f"case '{case.id}': metadata 'task'"),
        (replace(case, metadata={**case.metadata, "task": "[1, 2]"}), f"case '{case.id}': metadata 'task'"),
        (replace(case, metadata={k: v for k, v in case.metadata.items() if k != "task"}), "metadata 'task'"),
        (replace(case, metadata={**case.metadata, "family": "nope"}), "unknown SkillCraft-sim family"),
    ]
    for broken, message in bad:
        with pytest.raises(ValueError, match=message) as info:
            ev.evaluate(skill(spec.seed_skill), [broken], 1)
        assert "\n" not in str(info.value)


# --- the shape of the benchmark -----------------------------------------------------------------

def test_seed_is_mediocre_reference_is_good_and_difficulty_rises_with_scale(fam):
    spec, ev = fam
    seeds = range(6)
    seed_art, ref = skill(spec.seed_skill), skill(spec.reference_skill)
    means = {s: statistics.mean(r.score for k in seeds for r in ev.evaluate(seed_art, load(s, spec.name), k))
             for s in SPLITS}
    assert means["feedback"] > means["validation"] > means["holdout"]
    assert 0.55 <= means["validation"] <= 0.85
    for s in ("validation", "holdout"):
        good = statistics.mean(r.score for k in seeds for r in ev.evaluate(ref, load(s, spec.name), k))
        assert good >= 0.93 and good > means[s] + 0.15
    profile = ev.profile(ref)  # the reference instructs every behaviour and contradicts none
    instructed = set().union(*(i.positive for i in profile.items))
    assert instructed == {b.name for b in spec.behaviours}
    assert not set().union(*(i.anti for i in profile.items))


def test_a_loop_prone_behaviour_makes_expensive_loops(fam):
    spec, ev = fam
    cases = load("validation", spec.name) + load("holdout", spec.name)
    seed_art, ref = skill(spec.seed_skill), skill(spec.reference_skill)
    loops, plain, ref_loops = [], [], 0
    for s in range(4):
        for case in cases:
            _, ep = ev.run_episode(seed_art, case, s)
            counts = Counter((c.tool, c.args) for c in ep.calls)
            (loops if max(counts.values()) >= LOOP else plain).append(ep.tokens)
            _, ep_ref = ev.run_episode(ref, case, s)
            ref_loops += max(Counter((c.tool, c.args) for c in ep_ref.calls).values()) >= LOOP
    assert len(loops) >= 0.05 * len(cases) * 4
    assert statistics.median(loops) > 1.8 * statistics.median(plain)
    assert ref_loops < len(loops) / 3


def test_some_behaviour_matters_only_on_the_hard_scales(fam):
    """Dropping one reference item costs on m2 / h1 and (almost) nothing on e1 … m1."""
    spec, ev = fam
    cases = load_all(spec.name)
    by_scale = {s: [c for c in cases if c.metadata["scale"] == s] for s in SCALES}
    seeds = range(6)
    ref = spec.reference_skill

    def means(art):
        return {s: statistics.mean(r.score for k in seeds for r in ev.evaluate(art, by_scale[s], k)) for s in SCALES}

    full = means(skill(ref))
    found = []
    for field in ("steps", "pitfalls"):
        for i, item in enumerate(ref[field]):
            rest = [x for j, x in enumerate(ref[field]) if j != i]
            if field == "steps" and not rest:
                continue
            ablated = means(skill(ref, **{field: rest}))
            hard = statistics.mean(full[s] - ablated[s] for s in HARD)
            easy = max(abs(full[s] - ablated[s]) for s in SCALES if s not in HARD)
            if hard > 0.01 and easy < hard / 10:
                found.append(item)
    assert found, "no behaviour whose guidance matters only on m2 / h1"


def test_a_sized_cache_shared_by_evaluation_threads_evicts_without_errors():
    """Evaluation threads share the evaluator's profile and task caches. Evicting by deleting the
    first key raised "dictionary changed size during iteration" or a KeyError under this load."""
    import threading
    from collections import OrderedDict

    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: the race shows within a second
    cache: OrderedDict[tuple[int, int], tuple[int, int]] = OrderedDict()
    errors: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            for i in range(20_000):
                key = (thread, i % 50)
                assert family_module.memo(cache, key, lambda key=key: key, 8) == key
        except BaseException as exc:  # collected: the assertion below names it
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(before)
    assert errors == [] and len(cache) <= 8 + len(threads)
