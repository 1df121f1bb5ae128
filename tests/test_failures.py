"""Failures classified: transient errors are retried, bugs stop the run at once with one line
that names the evaluator / reflector, the case and the exception; protocols are checked before
anything is spent; batch evaluation is opt-in and changes no result."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import RunRecord, strip_volatile
from helpers_cli import gepa
from helpers_long import HashEvaluator, VaryingReflector, long_dataset, long_seed

from gepa_lab import EvaluationSettings, EvaluatorError, ReflectionSettings, ReflectorError, SearchConfig, optimize
from gepa_lab.core.errors import ProtocolError, is_transient

CONFIG = SearchConfig(max_iterations=6, minibatch_size=2, random_seed=3)
FAST = EvaluationSettings(max_retries=3, retry_backoff_s=0.0)


class BuggyEvaluator(HashEvaluator):
    """Raises AttributeError (a bug) on one case until `fixed`."""

    fixed = False

    def __init__(self):
        self.bug_calls = 0

    def evaluate(self, artifact, cases, seed):
        if not self.fixed and cases[0].id == "val-2":
            self.bug_calls += 1
            return None.score  # AttributeError
        return super().evaluate(artifact, cases, seed)


def test_an_evaluator_bug_stops_the_run_at_once_and_is_resumable(tmp_path):
    buggy = BuggyEvaluator()
    with pytest.raises(EvaluatorError) as info:
        optimize(long_seed(), long_dataset(), buggy, VaryingReflector(), CONFIG, run_dir=tmp_path,
                 evaluation=EvaluationSettings(max_retries=5, retry_backoff_s=1.0))
    assert buggy.bug_calls == 1  # never retried
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("evaluator BuggyEvaluator raised AttributeError: 'NoneType' object has no attribute "
                              "'score' on case 'val-2'")
    record = RunRecord(tmp_path)
    assert record.kinds()[-1] == "run_failed" and not (tmp_path / "result.json").exists()

    fixed = BuggyEvaluator()
    fixed.fixed = True
    resumed = optimize(long_seed(), long_dataset(), fixed, VaryingReflector(), CONFIG, run_dir=tmp_path, resume=True,
                       evaluation=EvaluationSettings(max_retries=5, retry_backoff_s=1.0))
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG)
    assert strip_volatile(resumed.to_dict()) == strip_volatile(clean.to_dict())


class QuotaExceeded(Exception):
    """A provider's own error type, declared retryable by the evaluator below."""


class DeclaringEvaluator(HashEvaluator):
    retryable_exceptions = (QuotaExceeded,)

    def __init__(self):
        self.failed: set[tuple] = set()
        self.calls = 0

    def evaluate(self, artifact, cases, seed):
        self.calls += 1
        key = (repr(artifact), cases[0].id, seed)
        if key not in self.failed:  # the first attempt of every case fails
            self.failed.add(key)
            raise QuotaExceeded("try again in a moment")
        return super().evaluate(artifact, cases, seed)


def test_a_declared_transient_error_is_retried_and_the_run_completes():
    evaluator = DeclaringEvaluator()
    result = optimize(long_seed(), long_dataset(), evaluator, VaryingReflector(), CONFIG, evaluation=FAST)
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG)
    assert strip_volatile(result.to_dict()) == strip_volatile(clean.to_dict())
    assert evaluator.calls == 2 * result.metric_calls  # one failure + one success per case


class Status(Exception):
    def __init__(self, code):
        super().__init__(f"HTTP {code}")
        self.status_code = code


class Wrapped(Exception):
    def __init__(self, code):
        super().__init__(f"HTTP {code}")
        self.response = Status(code)


@pytest.mark.parametrize("exc, transient", [
    (TimeoutError("read timed out"), True),
    (ConnectionResetError("reset"), True),
    (Status(429), True),
    (Status(503), True),
    (Wrapped(502), True),
    (Status(400), False),
    (Status(401), False),
    (AttributeError("x"), False),
    (ValueError("bad"), False),
    (KeyError("k"), False),
])
def test_transient_classification(exc, transient):
    assert is_transient(exc) is transient


def test_an_undeclared_provider_error_is_a_bug():
    class Other(HashEvaluator):
        def evaluate(self, artifact, cases, seed):
            raise QuotaExceeded("not declared here")

    with pytest.raises(EvaluatorError, match="evaluator Other raised QuotaExceeded: not declared here"):
        optimize(long_seed(), long_dataset(), Other(), VaryingReflector(), CONFIG, evaluation=FAST)


class BuggyReflector(VaryingReflector):
    def __init__(self):
        self.calls = 0

    def reflect(self, artifact, component, records):
        self.calls += 1
        return sorted([1, "a"])  # TypeError


def test_a_reflector_bug_stops_the_run_and_is_never_retried(tmp_path):
    reflector = BuggyReflector()
    with pytest.raises(ReflectorError) as info:
        optimize(long_seed(), long_dataset(), HashEvaluator(), reflector, CONFIG, run_dir=tmp_path,
                 reflection=ReflectionSettings(max_retries=4, retry_backoff_s=0.0))
    assert reflector.calls == 1
    assert str(info.value).startswith("reflector BuggyReflector raised TypeError: '<' not supported")
    assert RunRecord(tmp_path).kinds()[-1] == "run_failed"
    assert not (tmp_path / "result.json").exists()


class NoEvaluate:
    def score(self, artifact, cases, seed):
        return []


class TwoArgEvaluator:
    def evaluate(self, artifact, cases):
        return []


class OneArgReflector:
    def reflect(self, records):
        return {}


@pytest.mark.parametrize("evaluator, reflector, message", [
    (NoEvaluate(), VaryingReflector(), "evaluator NoEvaluate has no method evaluate(artifact, cases, seed)"),
    (TwoArgEvaluator(), VaryingReflector(), "evaluator TwoArgEvaluator.evaluate(artifact, cases) cannot be called"),
    (HashEvaluator(), OneArgReflector(), "reflector OneArgReflector.reflect(records) cannot be called"),
])
def test_protocols_are_checked_before_anything_is_spent(tmp_path, evaluator, reflector, message):
    with pytest.raises(ProtocolError) as info:
        optimize(long_seed(), long_dataset(), evaluator, reflector, CONFIG, run_dir=tmp_path)
    assert str(info.value).startswith(message)
    assert not any(tmp_path.iterdir())  # nothing written, nothing spent


class BatchEvaluator(HashEvaluator):
    evaluates_batches = True

    def __init__(self):
        self.calls: list[int] = []

    def evaluate(self, artifact, cases, seed):
        self.calls.append(len(cases))
        return super().evaluate(artifact, cases, seed)


@pytest.mark.parametrize("workers", [1, 4])
def test_batch_evaluation_is_opt_in_and_changes_no_result(workers):
    batched = BatchEvaluator()
    result = optimize(long_seed(), long_dataset(), batched, VaryingReflector(), CONFIG,
                      evaluation=EvaluationSettings(workers=workers))
    per_case = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG)
    assert strip_volatile(result.to_dict()) == strip_volatile(per_case.to_dict())
    assert sum(batched.calls) == result.metric_calls  # no cache here: every metric call was paid once
    assert max(batched.calls) == 4  # a whole validation batch in one call
    assert len(batched.calls) < result.metric_calls


# -- the command line ---------------------------------------------------------------------------
PLUGIN = '''
from gepa_lab import Evaluation


class LengthEvaluator:
    """Scores a skill by how many steps it has (a new evaluator: one class, one YAML file)."""

    def __init__(self, per_step: float = 0.1, broken: bool = False):
        self.per_step, self.broken = per_step, broken

    def evaluate(self, artifact, cases, seed):
        if self.broken:
            return artifact.no_such_field
        score = min(1.0, self.per_step * len(artifact.steps))
        return [Evaluation(c.id, score, feedback=f"{len(artifact.steps)} steps") for c in cases]
'''


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    (tmp_path / "my_evaluators.py").write_text(textwrap.dedent(PLUGIN))
    conf = tmp_path / "conf" / "evaluator"
    conf.mkdir(parents=True)
    (conf / "length.yaml").write_text("_target_: my_evaluators.LengthEvaluator\nper_step: 0.05\n")
    return tmp_path


def _gepa(plugin_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return gepa("experiment=recipe", "tracking=none", "progress=off", f"hydra.searchpath=[file://{plugin_dir / 'conf'}]",
                "evaluator=length", *args, cwd=plugin_dir, path=plugin_dir)


def test_a_new_evaluator_is_one_class_and_one_yaml_file(plugin_dir):
    done = _gepa(plugin_dir, "search.max_iterations=3")
    assert done.returncode == 0, done.stderr
    run_dir = Path(next(x for x in done.stdout.splitlines() if x.strip().startswith("record")).split()[1])
    record = RunRecord(run_dir)
    assert record.json("experiment.json")["config"]["evaluator"]["_target_"] == "my_evaluators.LengthEvaluator"
    seed_steps = len(record.candidates[0]["artifact"]["steps"])
    assert record.evaluations[0]["results"][0]["score"] == pytest.approx(0.05 * seed_steps)
    assert record.evaluations[0]["results"][0]["feedback"] == f"{seed_steps} steps"


def test_an_evaluator_bug_exits_1_with_one_line_naming_it(plugin_dir):
    done = _gepa(plugin_dir, "+evaluator.broken=true")
    assert done.returncode == 1
    errors = [x for x in done.stderr.splitlines() if x.startswith("gepa_lab: error: ")]
    assert len(errors) == 1 and "Traceback" not in done.stderr
    assert errors[0].startswith("gepa_lab: error: evaluator LengthEvaluator raised AttributeError: "
                                "'SkillSpec' object has no attribute 'no_such_field' on case ")
    assert "run_failed" in RunRecord(next(plugin_dir.glob("outputs/*/*"))).kinds()


def test_an_unknown_evaluator_argument_exits_2(plugin_dir):
    done = _gepa(plugin_dir, "+evaluator.per_stepp=1")
    assert done.returncode == 2
    assert done.stderr.strip() == ("gepa_lab: error: unknown config key 'evaluator.per_stepp'; did you mean "
                                   "'per_step'? (evaluator takes: per_step, broken)")
    assert not (plugin_dir / "outputs").exists()  # found before Hydra creates a run dir


def test_a_long_retry_chain_never_waits_past_the_cap(monkeypatch):
    """Doubling backoff is capped: past ~1000 retries 2**n overflows, and time.sleep refuses it."""
    from gepa_lab.core.settings import MAX_BACKOFF_S
    from gepa_lab.search.retry import RetryPolicy

    waits: list[float] = []
    monkeypatch.setattr("time.sleep", waits.append)
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 1100:
            raise TimeoutError("provider timed out")
        return "ok"

    assert RetryPolicy(object(), 2000, 1.0)(flaky) == "ok"
    assert len(waits) == 1099 and max(waits) <= MAX_BACKOFF_S
