"""The project's launchers and tools (not part of the broker): real Kafka and ZooKeeper from Maven
jars, the port pool, the benchmark, the external client suites. Tests and the scripts themselves
import them from this package (``from scripts import realkafka``); each also runs as a file
(``python scripts/realkafka.py ...``), and then first puts the repository root on ``sys.path`` so
that its siblings are still imported as ``scripts.*``, once."""
