"""The two ways startup stops, shared by every layer that reads configuration or data at start:
the CLI turns either into a message and an exit code, as Kafka's startup does."""


class ConfigError(ValueError):
    """An invalid config value; startup stops with this message."""


class StartupError(RuntimeError):
    """The broker cannot start with this log dir or cluster (another cluster's or broker's data,
    a broker id registered by a live broker); it exits with this message, as Kafka does."""
