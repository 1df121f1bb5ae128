"""The Hydra config tree: every option composes into the engine's own dataclasses, whose defaults
and presets are the only ones; the `lm` group only where a component uses an LM."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from gepa_lab import EvaluationSettings, PromotionPolicy, ReflectionSettings, SearchConfig
from gepa_lab.config import Config, check_config, register_configs, uses_lm
from gepa_lab.core.errors import ConfigError
from gepa_lab.core.redact import read_secrets
from gepa_lab.core.settings import PRESETS, build_target, refuse_secrets
from gepa_lab.lm.config import LMConfig
from gepa_lab.search.policies import OPTIONS, build_policies
from gepa_lab.search.policies.build import default_option, option_node

CONF = Path(__file__).resolve().parents[1] / "conf"
register_configs()


def composed(*overrides: str, hydra: bool = False):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides), return_hydra_config=hydra)


@pytest.mark.parametrize("preset", PRESETS)
def test_each_promotion_option_is_the_library_preset(preset):
    assert check_config(composed("experiment=recipe", f"promotion={preset}")).promotion == PromotionPolicy.preset(preset)


def test_the_promotion_presets_differ():
    policies = [PromotionPolicy.preset(name) for name in PRESETS]
    assert all(a != b for i, a in enumerate(policies) for b in policies[i + 1:])


def test_the_default_config_is_the_engine_defaults():
    conf = check_config(composed("experiment=recipe"))
    assert (conf.search, conf.evaluation, conf.reflection, conf.promotion) == (
        SearchConfig(), EvaluationSettings(), ReflectionSettings(), PromotionPolicy())


SCHEMAS = {"search": SearchConfig, "evaluation": EvaluationSettings, "reflection": ReflectionSettings,
           "promotion": PromotionPolicy, "lm": LMConfig}
TOP_LEVEL = {"experiment_name": "default", "submit": False, "resume": None, "progress": "auto"}


def _restated(node: dict, defaults: dict, where: str) -> list[str]:
    found = []
    for key, value in node.items():
        if isinstance(value, dict) and isinstance(defaults.get(key), dict):
            found += _restated(value, defaults[key], f"{where}.{key}")
        elif key in defaults and value == defaults[key]:
            found.append(f"{where}.{key}: {value!r}")
    return found


@pytest.mark.parametrize("path", [CONF / "config.yaml", *sorted((CONF / "experiment").glob("*.yaml")),
                                  *sorted((CONF / "lm").glob("*.yaml"))], ids=lambda p: str(p.relative_to(CONF)))
def test_no_yaml_file_restates_a_dataclass_default(path):
    """Defaults live once, in the dataclasses: YAML files hold presets and experiments only."""
    node = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if path.parent.name == "lm":
        node = {"lm": node}
    defaults = {**TOP_LEVEL, **{group: dataclasses.asdict(schema()) for group, schema in SCHEMAS.items()}}
    assert TOP_LEVEL == {k: getattr(Config(dataset=None), k) for k in TOP_LEVEL}
    assert _restated({k: v for k, v in node.items() if k in defaults}, defaults, path.stem) == []


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")))
def test_every_experiment_composes_and_validates(experiment):
    conf = check_config(composed(f"experiment={experiment}"))
    assert conf.experiment_name == experiment


@pytest.mark.parametrize("overrides, lm_option", [
    (["experiment=recipe"], None),
    (["experiment=recipe", "reflector=dspy"], "default"),
    (["experiment=recipe", "evaluator=skillcraft_dspy"], "default"),
    (["experiment=dspy_math"], "default"),  # two components select it: composed once
    (["experiment=dspy_math", "lm=ollama"], "ollama"),
])
def test_the_lm_group_is_composed_only_where_a_component_uses_it(overrides, lm_option):
    cfg = composed(*overrides, hydra=True)
    assert cfg.hydra.runtime.choices.get("lm") == lm_option
    assert uses_lm(cfg) is (lm_option is not None)  # what the run records and the pre-flight asks
    if lm_option is not None:  # the preset: the reflection role follows the task role
        assert cfg.lm.reflection.model == cfg.lm.task.model and cfg.lm.reflection.max_tokens == 4096


def test_a_forced_key_in_a_typed_group_is_refused():
    cfg = composed("experiment=recipe", "+search.foo=1", "+promotion.gates.bar=2")
    with pytest.raises(ConfigError, match=r"unknown config key 'search.foo'"):
        check_config(cfg)


@pytest.mark.parametrize("override, message", [
    ("+evaluator.famly=weather", "unknown config key 'evaluator.famly'; did you mean 'family'? (evaluator takes: family,"),
    ("reflector._target_=gepa_lab.nope.Reflector", "reflector._target_ 'gepa_lab.nope.Reflector' cannot be imported: "
                                                   "ModuleNotFoundError: No module named 'gepa_lab.nope'"),
    ("reflector._target_=gepa_lab.core.settings.NoSuchClass", "'gepa_lab.core.settings.NoSuchClass' cannot be "
                                                              "imported: ModuleNotFoundError: No module named "),
    ("evaluator._target_=gepa_lab.core.settings.GatePolicy", "unknown config key 'evaluator.family'"),
    ("tracking._target_=gepa_lab.tracking.progress.ProgressTracker", "unknown config key 'tracking.uri'"),
])
def test_plugin_configs_are_checked_against_their_class_without_building_it(override, message):
    with pytest.raises(ConfigError) as info:
        check_config(composed("experiment=recipe", override))
    assert message in str(info.value)


@pytest.mark.parametrize("url, key, part", [
    ("postgresql://gepa:s3cret@db/revisions", "submitter.url", "a password"),
    ("postgresql+psycopg://gepa:s3cret@db/revisions", "seed.store", "a password"),
    ("http://alice:s3cret@mlflow.internal:5000", "tracking.uri", "a password"),
    ("https://s3cret@mlflow.internal", "tracking.uri", "user-info"),  # a token as the user
    ("postgresql://db/revisions?password=s3cret", "submitter.url", "the query parameter 'password'"),
    # not on a list of dangerous names: refused because it is not on the list of harmless ones
    ("postgresql://gepa@db/revisions?sslmode=require&sslpassword=s3cret", "submitter.url",
     "the query parameter 'sslpassword'"),
    ("https://api.example.com/v1?sig=s3cret", "lm.task.api_base", "the query parameter 'sig'"),
    ("https://api.example.com/v1?s3cret", "lm.task.api_base", "a query value"),
])
def test_a_url_with_a_secret_is_refused_without_echoing_it(url, key, part):
    group, _, name = key.rpartition(".")
    config: dict = {}
    node = config
    for step in group.split("."):
        node = node.setdefault(step, {})
    node[name] = url
    with pytest.raises(ConfigError) as info:
        refuse_secrets(config)
    assert str(info.value).startswith(f"{key} holds {part}, and it is recorded with the run (.hydra/, experiment."
                                      "json, MLflow): remove it and keep the secret where its client reads it")
    assert "s3cret" not in str(info.value)


@pytest.mark.parametrize("url", ["postgresql://gepa@db/revisions", "sqlite:///revisions.db", "http://127.0.0.1:5000",
                                 "postgresql://gepa@db/revisions?sslmode=require&connect_timeout=10", "not a url"])
def test_a_url_without_a_secret_passes(url):
    refuse_secrets({"submitter": {"url": url}, "tracking": {"uri": url}})


@pytest.mark.parametrize("value", ["sk-proj-Zr8Qw2Lm5Xp9Kd3Vb7Nh1Tc4", "Bearer abcdefghijklmnopqrstuvwx",
                                   "eyJhbGciOi.eyJzdWIiOiIx.c2lnbmF0dXJl", "canary-env-value"])
def test_a_value_that_looks_like_a_credential_is_refused_in_any_field(value, monkeypatch):
    monkeypatch.setenv("SERVICE_TOKEN", "canary-env-value")  # a secret variable's value, pasted or interpolated
    read_secrets()
    with pytest.raises(ConfigError) as info:
        refuse_secrets({"evaluator": {"notes": ["fine", value]}})
    assert str(info.value).startswith("evaluator.notes holds what looks like a credential") and value not in str(
        info.value)


@pytest.mark.parametrize("settings, key", [(EvaluationSettings, "evaluation"), (ReflectionSettings, "reflection")])
@pytest.mark.parametrize("backoff", [1e308, 3600.5])
def test_a_retry_backoff_time_sleep_cannot_take_is_refused(settings, key, backoff):
    with pytest.raises(ConfigError) as info:
        settings(retry_backoff_s=backoff)
    assert str(info.value) == f"{key}.retry_backoff_s must be a number between 0 and 3600 (got {backoff!r})"
    assert settings(retry_backoff_s=3600).retry_backoff_s == 3600


@pytest.mark.parametrize("backend, each", [("thread", "thread"), ("process", "process")])
def test_too_many_workers_name_what_each_worker_is(backend, each):
    with pytest.raises(ConfigError, match=rf"^evaluation.workers must be at most 256 \(got 1000\); each is a {each}$"):
        EvaluationSettings(workers=1000, backend=backend)


def test_a_transfer_evaluators_own_setting_is_named_under_transfer():
    from gepa_lab.core.settings import build_target as build

    node = {"_target_": "evaluators.skillcraft.SkillCraftEvaluator", "agent_config": {"max_tool_calls": -1}}
    for group in ("evaluator", "transfer.evaluator"):
        with pytest.raises(ConfigError) as info:
            build(group, node)
        assert str(info.value) == (f"{group}: ConfigError: agent_config.max_tool_calls must be an integer >= 1, got "
                                   f"-1; fix {group}.agent_config.max_tool_calls or leave it out (default 80)")


# -- the search's policy options: generated from the classes, every default written once ----------
DOCS = CONF.parent / "docs"


def _flow(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _options_cell(group: str) -> str:
    """The options of search/<group> as docs/research.md lists them: default first, with parameters."""
    cells = []
    for name in OPTIONS[group]:
        node = option_node(group, name)
        params = ", ".join(f"`{k}: {_flow(v)}`" for k, v in (node.get(name, {}) if group == "stop" else node).items() if k != "_target_")
        cells.append(f"`{name}`" + (f" ({params})" if params else ""))
    return ", ".join(cells)


def _table_rows(path: Path) -> dict[str, list[str]]:
    rows = [[cell.strip() for cell in line.strip().strip("|").split(" | ")]
            for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("| `")]
    return {row[0].strip("`"): row[1:] for row in rows}


def test_every_policy_option_builds_composes_and_is_documented_with_its_defaults():
    for group, options in OPTIONS.items():
        for name, cls in options.items():
            node = option_node(group, name)
            built = build_target(f"search.{group}", node[name] if group == "stop" and node else node)
            assert (built is None) is (cls is None) and (cls is None or type(built) is cls)
        assert _table_rows(DOCS / "research.md")[f"search/{group}"][0] == _options_cell(group)
    last = [f"search/{group}={list(options)[-1]}" for group, options in OPTIONS.items() if group != "stop"]
    conf = check_config(composed("experiment=recipe", *last, "search/stop=[no_improvement,score_threshold,stop_file]"))
    policies = build_policies(conf.search)
    assert [type(getattr(policies, g)) for g in OPTIONS if g != "stop"] == [
        list(options.values())[-1] for g, options in OPTIONS.items() if g != "stop"]
    assert [type(p).__name__ for p in policies.stop.values()] == [
        "MetricBudget", "NoImprovement", "ScoreThreshold", "StopFile"]


def test_the_config_defaults_list_names_the_engine_s_default_policies():
    choices = composed("experiment=recipe", hydra=True).hydra.runtime.choices
    assert {g: choices[f"search/{g}"] for g in OPTIONS} == {g: default_option(g) for g in OPTIONS}
    assert [default_option(g) for g in OPTIONS] == [next(iter(OPTIONS[g])) for g in OPTIONS]  # listed first


def test_the_documented_search_defaults_are_the_dataclass_s():
    """docs/design.md §3.1 and docs/research.md quote SearchConfig's defaults: each as the code has it."""
    rows = {**_table_rows(DOCS / "design.md"), **{k.removeprefix("search."): v
                                                  for k, v in _table_rows(DOCS / "research.md").items()}}
    defaults = SearchConfig()
    checked = 0
    for field in dataclasses.fields(SearchConfig):
        value = getattr(defaults, field.name)
        if field.name in rows and not isinstance(value, dict):
            shown = rows[field.name][0].strip("`")
            assert shown == ("none" if value is None else _flow(value)), field.name
            checked += 1
    assert checked >= 10


# -- one validation path: the CLI, the Python API and the DSPy teleprompter --------------------
NOT_A_POLICY = ("search.parent 'nope' is not a policy; pick one of current_best, epsilon_greedy, pareto, top_k_pareto "
                "(or give a `_target_` mapping)")


def test_a_policy_is_named_by_its_option_in_python_as_on_the_command_line(tmp_path):
    from gepa_lab.search.policies import CurrentBest, build_policies
    from gepa_lab.search.policies.build import describe_policies

    assert isinstance(build_policies(SearchConfig(parent="current_best")).parent, CurrentBest)
    assert describe_policies(SearchConfig(parent="current_best")) == describe_policies(
        SearchConfig(parent={"_target_": "gepa_lab.search.policies.CurrentBest"}))  # the same run identity
    with pytest.raises(ConfigError) as info:
        build_policies(SearchConfig(parent="nope"))
    assert str(info.value) == NOT_A_POLICY  # the line docs/errors.md shows for search.parent=nope
    with pytest.raises(ConfigError, match=r"^search.stop.idle 'stale' is not a policy; pick one of no_improvement, "):
        build_policies(SearchConfig(stop={"idle": "stale"}))


def test_the_dspy_teleprompter_refuses_an_unknown_policy_with_the_same_line(tmp_path, monkeypatch):
    dspy = pytest.importorskip("dspy")
    from gepa_lab.dspy import GEPA

    monkeypatch.chdir(tmp_path)
    lm = dspy.LM("openai/never-called", api_base="http://127.0.0.1:9/v1", api_key="unused", cache=False)
    examples = [dspy.Example(question=f"q{i}", answer="a").with_inputs("question") for i in range(4)]
    optimizer = GEPA(lambda gold, pred: 1.0, reflection_lm=lm, task_lm=lm, run_dir=tmp_path / "run", mlflow=False,
                     progress="off", search={"parent": "nope"})
    with pytest.raises(ConfigError) as info:
        optimizer.compile(dspy.Predict("question -> answer"), trainset=examples)
    assert str(info.value) == NOT_A_POLICY and not (tmp_path / "run").exists()
