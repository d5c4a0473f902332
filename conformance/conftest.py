"""Targets for the conformance scenarios, and the whole-response comparison of their answers.

`--target wirekafka|kafka|both` picks the brokers; without the option wirekafka always runs, and
real Kafka runs too when WIREKAFKA_CONFORMANCE_KAFKA=1 (the test script sets it) or when Kafka's
jars are already cached. Each scenario is collected once per target, so its id carries
[wirekafka] or [kafka] (before any other parameter), and runs its own assertions on each.

Both brokers are session fixtures that live side by side, and each scenario's [kafka] item runs
right before its [wirekafka] item. Every exchange a scenario makes is recorded in a transcript
(conformance/harness/transcript.py); when the [wirekafka] item's body is done, its transcript is compared
with the [kafka] one, response by response (conformance/harness/compare.py). A difference that
deviations.toml does not explain fails the [wirekafka] item. When WIREKAFKA_CONFORMANCE_RESULTS
names a file, each scenario's comparison is written there as JSON for conformance/harness/matrix.py."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from conformance.harness import compare, transcript, wire
from testsupport.broker_process import BrokerProcess
from scripts import realkafka as _realkafka_module

log = logging.getLogger("conformance")
RESULTS_ENV = "WIREKAFKA_CONFORMANCE_RESULTS"
_SCENARIO = pytest.StashKey[str]()        # the test id without its target
_TRANSCRIPT = pytest.StashKey[transcript.Transcript]()
_TARGET_ORDER = {"kafka": 0, "wirekafka": 1}
_HERE = Path(__file__).resolve().parent  # scenario items live here; the hooks see the whole session's


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--target", choices=["wirekafka", "kafka", "both"], default=None,
                     help="conformance target broker(s)")


def _targets(config: pytest.Config) -> list[str]:
    chosen = config.getoption("--target")
    if chosen == "both":
        return ["wirekafka", "kafka"]
    if chosen:
        return [chosen]
    targets = ["wirekafka"]
    if os.environ.get("WIREKAFKA_CONFORMANCE_KAFKA") == "1":
        targets.append("kafka")
    else:
        try:
            if (_realkafka_module.kafka_home() / ".complete").exists():
                targets.append("kafka")
        except Exception:
            pass
    return targets


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" in metafunc.fixturenames:
        metafunc.parametrize("target", _targets(metafunc.config), indirect=True)


def _scenario_of(item: pytest.Item) -> str | None:
    """The test id without the target parameter: the key that pairs a [kafka] item with its
    [wirekafka] item, and the seed of the scenario's topic and group names."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or "target" not in callspec.params:
        return None
    if _HERE not in Path(str(item.path)).parents:  # the session's other directories: not scenarios
        return None
    target = callspec.params["target"]
    base, _, params = item.nodeid.partition("[")
    params = params.removesuffix("]")
    if params == target:
        return base
    if params.startswith(target + "-"):
        return f"{base}[{params.removeprefix(target + '-')}]"
    return f"{base}[{params.removesuffix('-' + target)}]"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run each scenario's [kafka] item right before its [wirekafka] item (other items keep their
    place), so that the two transcripts are compared while both brokers are up."""
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        scenario = _scenario_of(item)
        if scenario is not None:
            item.stash[_SCENARIO] = scenario
        first.setdefault(scenario or item.nodeid, i)

    def place(item: pytest.Item) -> tuple[int, int]:
        scenario = item.stash.get(_SCENARIO, None)
        if scenario is None:
            return first[item.nodeid], 0
        return first[scenario], _TARGET_ORDER[item.callspec.params["target"]]  # type: ignore[attr-defined]

    items.sort(key=place)


@dataclass
class Target:
    name: str
    bootstrap: str


@pytest.fixture(scope="session")
def wirekafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """wirekafka with the server.properties real Kafka gets (realkafka.DEFAULT_BROKER_CONFIG), so
    that config values and their sources can be compared too; keys wirekafka does not know are
    ignored with a warning, as documented."""
    proc = BrokerProcess(tmp_path_factory.mktemp("conformance-wirekafka") / "data",
                         dict(_realkafka_module.DEFAULT_BROKER_CONFIG))
    proc.start()
    yield Target("wirekafka", proc.bootstrap)
    proc.stop()


@pytest.fixture(scope="session")
def real_kafka() -> Iterator[Target]:
    kafka = _realkafka_module.RealKafka()
    kafka.start()
    yield Target("kafka", kafka.bootstrap)
    kafka.stop()


@pytest.fixture
def target(request: pytest.FixtureRequest) -> Target:
    """The broker of this item; both are session fixtures, started on first use."""
    return request.getfixturevalue("wirekafka_broker" if request.param == "wirekafka" else "real_kafka")


class _Comparisons:
    """The [kafka] transcripts waiting for their [wirekafka] item, and each scenario's outcome."""

    def __init__(self) -> None:
        # scenario -> its [kafka] transcript; None from setup until the body has passed
        self.kafka: dict[str, transcript.Transcript | None] = {}
        self.results: dict[str, dict[str, object]] = {}
        self._deviations: list[compare.Deviation] | None = None

    @property
    def deviations(self) -> list[compare.Deviation]:
        if self._deviations is None:
            self._deviations = compare.load_deviations()
        return self._deviations

    def judge(self, scenario: str, recording: transcript.Transcript) -> compare.Verdict | None:
        """Compare with the [kafka] transcript, or say (in the results) why there is none."""
        if scenario not in self.kafka:
            self.results[scenario] = {"status": "not compared", "note": "no [kafka] item ran"}
            return None
        kafka = self.kafka.pop(scenario)
        if kafka is None:
            self.results[scenario] = {"status": "not compared", "note": "the [kafka] item failed"}
            return None
        verdict = compare.compare_transcripts(kafka.exchanges, recording.exchanges, self.deviations, scenario,
                                              owned=wire.owned)
        status = "differs" if verdict.unexplained else "deliberate" if verdict.deliberate else "same"
        self.results[scenario] = {"status": status, "exchanges": len(recording.exchanges),
                                  "differs": [d.path for d in verdict.unexplained],
                                  "deliberate": [d.path for d, _ in verdict.deliberate]}
        return verdict


_comparisons = _Comparisons()


@pytest.fixture(autouse=True)
def _record_transcript(request: pytest.FixtureRequest) -> Iterator[None]:
    """A fresh transcript and fresh scenario names for each item."""
    scenario = request.node.stash.get(_SCENARIO, None)
    if scenario is None:
        yield
        return
    if request.node.callspec.params["target"] == "kafka":
        _comparisons.kafka[scenario] = None  # until its body has passed
    wire.begin_scenario(scenario)
    request.node.stash[_TRANSCRIPT] = recording = transcript.Transcript()
    transcript.activate(recording)
    try:
        yield
    finally:
        transcript.activate(None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After a [kafka] body, keep its transcript; after a [wirekafka] body, compare the two and
    fail the item (in its call phase) on any difference deviations.toml does not explain."""
    scenario = item.stash.get(_SCENARIO, None)
    if scenario is None:
        return (yield)
    is_kafka = item.callspec.params["target"] == "kafka"  # type: ignore[attr-defined]
    recording = item.stash[_TRANSCRIPT]
    try:
        result = yield
    except BaseException:
        if not is_kafka:
            _comparisons.judge(scenario, recording)  # for the report; the body's failure is the news
        raise
    if is_kafka:
        _comparisons.kafka[scenario] = recording
        return result
    verdict = _comparisons.judge(scenario, recording)
    if verdict is not None:
        for d, deviation in verdict.deliberate:
            log.info("%s: deliberate difference %s (%s)", scenario, d, deviation.reason)
        if verdict.unexplained:
            lines = "\n".join(f"  {d}" for d in verdict.unexplained)
            pytest.fail(f"wirekafka's answers differ from Kafka's in {len(verdict.unexplained)} field(s) "
                        f"not explained by conformance/deviations.toml:\n{lines}", pytrace=False)
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get(RESULTS_ENV)
    if path and _comparisons.results:
        Path(path).write_text(json.dumps(_comparisons.results, indent=1, sort_keys=True))
