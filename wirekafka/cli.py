"""`wirekafka serve [server.properties] [--override KEY=VALUE]...`, like kafka-server-start.sh."""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import logging
import os
import sys
from pathlib import Path

import trio

from wirekafka.startup_errors import ConfigError, StartupError
from wirekafka.config.loader import load_config
from wirekafka.server import logging_setup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="wirekafka", description=__doc__)
    parser.add_argument("--version", action="version", version=f"wirekafka {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the broker")
    serve.add_argument("config", nargs="?", type=Path, help="server.properties file")
    serve.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                       help="set a config key, overriding the file and KAFKA_* environment variables "
                            "(which override the file, as in Apache Kafka's container image)")
    serve.add_argument("--log-level", default="INFO")
    serve.add_argument("--log-format", choices=logging_setup.FORMATS, default="text",
                       help="text lines, or one JSON object per line")
    args = parser.parse_args(argv)
    logging_setup.configure(args.log_level, args.log_format)
    try:
        config = load_config(args.config, args.override, os.environ)
    except (ConfigError, OSError) as exc:
        logging.getLogger("wirekafka").error("invalid configuration: %s", exc)
        return 2
    from wirekafka.server.allocator import keep_freed_buffers
    from wirekafka.broker.replica.log_dir_failure import LogDirFailed
    from wirekafka.server.tcp import run_broker

    keep_freed_buffers()
    try:
        trio.run(functools.partial(run_broker, freeze_heap=True), config)  # its own process
    except StartupError as exc:
        logging.getLogger("wirekafka").error("fatal error during startup: %s", exc)
        return 1
    except BaseExceptionGroup as group:  # the broker's tasks ended it
        failed = group.subgroup((LogDirFailed, StartupError))  # StartupError: a background task's start
        if failed is None:
            raise
        leaf = _first_leaf(failed)
        logging.getLogger("wirekafka").error("fatal error during startup: %s" if isinstance(leaf, StartupError)
                                             else "%s", leaf)
        return 1
    return 0


def version() -> str:
    """The installed distribution's version; in a source tree that was never installed, the
    package's own __version__."""
    try:
        return importlib.metadata.version("wirekafka")
    except importlib.metadata.PackageNotFoundError:
        from wirekafka import __version__

        return __version__


def _first_leaf(group: BaseExceptionGroup) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


if __name__ == "__main__":
    sys.exit(main())
