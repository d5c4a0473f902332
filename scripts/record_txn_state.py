#!/usr/bin/env python3
"""Record the `__transaction_state` records a real Apache Kafka (scripts/realkafka.py) writes, as
the reference for wirekafka's transaction-log codec (wirekafka/broker/coordinator/txn_records.py).

One broker run covers every value version Kafka reads:
  1. confluent-kafka (librdkafka, transaction version 0 on the client side) with transactional id
     ``confluent``: one transaction over both partitions of a 2-partition topic, committed, and one
     aborted; value version 1, as transaction.version is 2 on a freshly formatted cluster;
  2. Kafka's Java producer (kafka-producer-perf-test, transactional id ``java``): client
     transaction version 2 (ClientTransactionVersion tag, an epoch bump at each commit);
  3. ``kafka-features downgrade --feature transaction.version=0``, then confluent-kafka again
     (transactional id ``confluent-tv0``, one commit): value version 0.
The broker then stops, and every record of the non-empty __transaction_state segments is saved
with its whole batch, its key and value bytes, and what ``kafka-dump-log --transaction-log-decoder``
(Kafka's own decoder) printed for it.

Refresh the checked-in fixture (after a Kafka version change, say) with

    .venv/bin/python scripts/record_txn_state.py [--out tests/data/kafka_transaction_state.json]

It takes ~30 s. The compat test compat-tests/test_txn_log_java.py calls :func:`record` directly."""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if not __package__:  # run as a file (`python scripts/record_txn_state.py`): siblings are imported as scripts.*,
    sys.path.insert(0, str(REPO))  # from the repository root, never as top-level modules
from scripts import realkafka  # noqa: E402
from wirekafka.protocol.records import iter_records, parse_header, split_batches  # noqa: E402

log = logging.getLogger("record_txn_state")

DEFAULT_OUT = REPO / "tests" / "data" / "kafka_transaction_state.json"
TOPIC = "txn-records"
#: kafka-dump-log prints one line per record; the decoder's key and value are JSON at its end.
_DUMPED_RECORD = re.compile(r"^\| offset: (?P<offset>\d+) .*? key: (?P<key>\{.*?\}) payload: (?P<value>.*)$")


def _confluent_transactions(bootstrap: str, transactional_id: str, abort_too: bool) -> None:
    """One committed transaction over partitions 0 and 1, then (``abort_too``) an aborted one.
    The flushes make the records, and so the partitions' registration, precede commit/abort:
    librdkafka skips EndTxn for a transaction that never registered a partition."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "log_level": 3})
    producer.init_transactions(60)
    for commit in (True, False) if abort_too else (True,):
        producer.begin_transaction()
        for partition in (0, 1):
            producer.produce(TOPIC, f"{commit}-{partition}".encode(), partition=partition)
        producer.flush(60)
        if commit:
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)
    producer.close()


def _create_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(60)


def _tool(kafka: Any, name: str, *args: str) -> str:
    proc = kafka.run_tool(name, list(args), timeout=180)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)} failed ({proc.returncode}):\n"
                           f"{proc.stdout.decode(errors='replace')}{proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode(errors="replace")


def _segment_records(segment: Path) -> list[dict[str, Any]]:
    data = segment.read_bytes()
    out = []
    for start, end in split_batches(data):
        batch = data[start:end]
        header = parse_header(batch)
        for rec in iter_records(batch):
            out.append({"offset": rec.offset, "timestamp": rec.timestamp, "batch": batch.hex(),
                        "leader_epoch": header.partition_leader_epoch,
                        "key": rec.key.hex() if rec.key is not None else None,
                        "value": rec.value.hex() if rec.value is not None else None})
    return out


def _kafka_decoded(kafka: Any, segment: Path) -> dict[int, tuple[Any, Any]]:
    """offset -> (key, value) as Kafka's --transaction-log-decoder printed them (JSON)."""
    dumped = _tool(kafka, "kafka-dump-log", "--files", str(segment), "--transaction-log-decoder")
    decoded = {}
    for line in dumped.splitlines():
        if m := _DUMPED_RECORD.match(line):
            value = m["value"].strip()
            decoded[int(m["offset"])] = (json.loads(m["key"]), None if value == "<DELETE>" else json.loads(value))
    return decoded


def record(workdir: Path) -> dict[str, Any]:
    """Run the scenario on a real Kafka in ``workdir`` and return the fixture document."""
    kafka = realkafka.RealKafka(workdir)
    kafka.start()
    try:
        _create_topic(kafka.bootstrap)
        _confluent_transactions(kafka.bootstrap, "confluent", abort_too=True)
        _tool(kafka, "kafka-producer-perf-test", "--topic", TOPIC, "--num-records", "4", "--record-size", "10",
              "--throughput", "-1", "--transactional-id", "java", "--transaction-duration-ms", "1",
              "--command-property", f"bootstrap.servers={kafka.bootstrap}")
        _tool(kafka, "kafka-features", "--bootstrap-server", kafka.bootstrap, "downgrade", "--feature",
              "transaction.version=0")
        _confluent_transactions(kafka.bootstrap, "confluent-tv0", abort_too=False)
    finally:
        kafka.stop()
    records = []
    for segment in sorted(kafka.data_dir.glob("__transaction_state-*/*.log")):
        if segment.stat().st_size == 0:
            continue
        partition = int(segment.parent.name.rsplit("-", 1)[1])
        decoded = _kafka_decoded(kafka, segment)
        for rec in _segment_records(segment):
            rec["partition"] = partition
            rec["kafka_key"], rec["kafka_value"] = decoded[rec["offset"]]
            records.append(rec)
    log.info("recorded %d __transaction_state records", len(records))
    return {"kafka_version": realkafka.KAFKA_VERSION, "generated_by": "scripts/record_txn_state.py",
            "num_partitions": 50, "records": records}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ns = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    with tempfile.TemporaryDirectory(prefix="record-txn-state-") as tmp:
        doc = record(Path(tmp))
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(json.dumps(doc, indent=1) + "\n")
    log.info("wrote %s", ns.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
