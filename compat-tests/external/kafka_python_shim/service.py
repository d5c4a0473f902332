"""Stand-in for kafka-python's test/service.py, which its sdist does not ship. The integration
tests only need the external-broker service (KAFKA_URI); spawning brokers is not supported."""


class ExternalService:
    def __init__(self, host, port):
        self.host = host
        self.port = port

    def start(self):
        pass

    def stop(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("kafka-python's spawned brokers are not supported here; set KAFKA_URI")
