"""An API key's names as Kafka's metrics and logs give them: the `request` label of RequestMetrics
("Produce", "ListOffsets": Kafka's ApiKeys.name) and the request log's requestApiKeyName
("PRODUCE", "LIST_OFFSETS": the enum constant). kafka-python names its classes after the same
schema names, so both come from the response class's name."""

from __future__ import annotations

import re
from functools import lru_cache

from wirekafka.protocol.served_versions import response_class

_WORD = re.compile(r"(?<!^)(?=[A-Z])")


@lru_cache(maxsize=None)
def request_name(api_key: int) -> str:
    """"Produce" for 0; "Api<key>" for a key no schema class is registered for."""
    try:
        name = response_class(api_key).__name__
    except KeyError:
        return f"Api{api_key}"
    return name.removesuffix("Response")


@lru_cache(maxsize=None)
def constant_name(api_key: int) -> str:
    """"PRODUCE" for 0, "OFFSET_FOR_LEADER_EPOCH" for 23."""
    return _WORD.sub("_", request_name(api_key)).upper()
