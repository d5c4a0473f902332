"""znode_io.read_all: a bulk read of many znodes sends every read before it collects any (one
round trip for the lot) and gives every value in the order asked; a fake kazoo client counts
the reads in flight."""

from __future__ import annotations

from kazoo.exceptions import NoNodeError

from wirekafka.broker.metadata.zk import znode_io


class _Client:
    """Async reads that stay in flight until collected, over a dict of znodes."""

    def __init__(self, data: dict[str, bytes]) -> None:
        self.data = data
        self.in_flight = 0
        self.most_in_flight = 0
        self.sent: list[str] = []
        self.watches: list[object] = []

    def get_async(self, path: str, watch=None) -> "_Read":
        self.sent.append(path)
        self.watches.append(watch)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        return _Read(self, path)


class _Read:
    def __init__(self, client: _Client, path: str) -> None:
        self.client, self.path = client, path

    def get(self) -> tuple[bytes, int]:
        self.client.in_flight -= 1
        if self.path not in self.client.data:
            raise NoNodeError()
        return self.client.data[self.path], 7


def test_every_read_is_sent_before_any_is_collected_and_values_keep_the_order() -> None:
    paths: list[str | None] = [f"/p/{i}" for i in range(50)]
    client = _Client({p: p.encode() for p in paths if p is not None})
    watch = object()
    assert znode_io.read_all(client, paths, watch) == [(p.encode(), 7) for p in paths if p is not None]
    assert client.sent == paths
    assert (client.most_in_flight, client.in_flight) == (50, 0)
    assert client.watches == [watch] * 50


def test_a_none_path_is_not_read_and_a_missing_znode_reads_none() -> None:
    paths: list[str | None] = ["/a", None, "/gone", "/b", None, "/c"]
    client = _Client({"/a": b"a", "/b": b"b", "/c": b"c"})
    assert znode_io.read_all(client, paths, None) == [(b"a", 7), None, None, (b"b", 7), None, (b"c", 7)]
    assert client.sent == ["/a", "/gone", "/b", "/c"]
    assert znode_io.read_all(client, [], None) == []
