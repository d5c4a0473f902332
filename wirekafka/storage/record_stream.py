"""The records of a magic-v2 batch read as a stream, with bounded memory: what Kafka's
DefaultRecordBatch.streamingIterator is to its log validator.

A compressed batch may inflate to far more than its size (see codec_stream), so the records are
pulled from an inflater into a window of about `WINDOW` bytes. A record that fits is decoded in
place (its key where `key_at` says, while `in_window`); a longer one is read by its head
(length, attributes, timestamp and offset deltas, key length, and the value length when the key
is short enough to see it) and its remainder then skipped or passed on piece by piece
(`finish_record`, then `pump` while `pending`). Nothing here grows with the inflated size.

Malformed records raise `MalformedRecords`, which Kafka's iterator reports as an
InvalidRecordException (INVALID_RECORD): a negative length, a record whose fields run past its
end, a stream that ends inside a record."""

from __future__ import annotations

from typing import Callable

from wirekafka.protocol.varint import VarintTooLong, decode_varint
from wirekafka.storage.codec_stream import Inflater

WINDOW = 64 * 1024  # decompressed bytes held for records that fit; longer ones stream through
_PUMP = 256 * 1024  # bytes of a long record moved per pump
_HEAD_MAX = 26  # length, attributes, timestamp delta, offset delta, key length: varints at their longest

Sink = Callable[[memoryview | bytes], None]


class MalformedRecords(Exception):
    """The records do not parse as a batch's records must (Kafka's InvalidRecordException)."""


# A record's head: (timestamp delta, offset delta, key length, value length or None when a long
# key hides it, body length: the bytes from the offset delta to the record's end).
Head = tuple[int, int, int, "int | None", int]


class RecordStream:
    """Records pulled one at a time from `source` (None: everything is in `buf` already)."""

    __slots__ = ("_source", "buf", "pos", "rest", "key_at", "_end", "pending")

    def __init__(self, source: Inflater | None, buf: bytes = b"") -> None:
        self._source = source
        self.buf = buf
        self.pos = 0
        self.rest = 0  # where the current record's offset delta starts in buf
        self.key_at = 0  # where its key starts in buf (its bytes may run past the window)
        self._end = 0  # where it ends (past len(buf) for a record longer than the window)
        self.pending = 0  # bytes of the current record still in the source after finish_record

    def _fill(self, need: int) -> bool:
        """At least `need` bytes from pos in buf (consumed bytes dropped); False when the stream
        ends first."""
        have = len(self.buf) - self.pos
        if have >= need:
            return True
        if self._source is None:
            return False
        parts = [self.buf[self.pos:]]
        while have < need:
            chunk = self._source.read(max(WINDOW, need - have))
            if not chunk:
                self._source = None
                break
            parts.append(chunk)
            have += len(chunk)
        self.buf = b"".join(parts)
        self.pos = 0
        return have >= need

    def at_end(self) -> bool:
        """Whether no byte follows the records read so far (Kafka reads one more to know)."""
        return not self._fill(1)

    def next_head(self) -> Head | None:
        """The next record's head; None when the stream ends where a record would start. The
        record is then consumed with finish_record (and pump while pending) before the next.
        One-byte varints (and two-byte lengths) are decoded inline: this runs once per record."""
        buf, pos = self.buf, self.pos
        if len(buf) - pos < _HEAD_MAX and self._source is not None:
            self._fill(_HEAD_MAX)
            buf, pos = self.buf, self.pos
        if pos >= len(buf):
            return None
        try:
            b = buf[pos]
            if b < 0x80:
                length, p = (b >> 1) ^ -(b & 1), pos + 1
            elif buf[pos + 1] < 0x80:  # records of 64 B to 8 KiB
                v = (b & 0x7F) | (buf[pos + 1] << 7)
                length, p = (v >> 1) ^ -(v & 1), pos + 2
            else:
                length, p = decode_varint(buf, pos)
            if length <= 0:
                raise MalformedRecords(f"record of length {length}")
            end = p + length
            if end > len(buf):
                rel = p - pos
                if end - pos <= WINDOW:
                    if not self._fill(end - pos):
                        raise MalformedRecords("the records end inside a record")
                else:
                    self._fill(WINDOW)  # a long record: its head, then it streams
                buf, pos = self.buf, self.pos
                p = pos + rel
                end = p + length
            b = buf[p + 1]  # after the attributes byte
            if b < 0x80:
                ts_delta, rest = (b >> 1) ^ -(b & 1), p + 2
            else:
                ts_delta, rest = decode_varint(buf, p + 1)
            b = buf[rest]
            if b < 0x80:
                offset_delta, q = (b >> 1) ^ -(b & 1), rest + 1
            elif buf[rest + 1] < 0x80:  # offsets 64 to 8191 in the batch
                v = (b & 0x7F) | (buf[rest + 1] << 7)
                offset_delta, q = (v >> 1) ^ -(v & 1), rest + 2
            else:
                offset_delta, q = decode_varint(buf, rest)
            b = buf[q]
            if b < 0x80:
                key_len, q = (b >> 1) ^ -(b & 1), q + 1
            else:
                key_len, q = decode_varint(buf, q)
            key_at = q
            if key_len > 0:
                q += key_len
            value_len: int | None = None
            n = len(buf)
            if q < n:
                b = buf[q]
                if b < 0x80:
                    value_len, q = (b >> 1) ^ -(b & 1), q + 1
                elif end <= n and buf[q + 1] < 0x80:  # values of 64 B to 8 KiB
                    v = (b & 0x7F) | (buf[q + 1] << 7)
                    value_len, q = (v >> 1) ^ -(v & 1), q + 2
                elif q + 10 <= n or end <= n:
                    value_len, q = decode_varint(buf, q)
        except IndexError:
            raise MalformedRecords("the records end inside a record") from None
        except VarintTooLong as exc:
            raise MalformedRecords(str(exc)) from None
        if q > end or (value_len is None and end <= n):
            raise MalformedRecords("a record's fields run past its length")
        self.rest = rest
        self.key_at = key_at
        self._end = end
        return ts_delta, offset_delta, key_len, value_len, end - rest

    @property
    def in_window(self) -> bool:
        """Whether the current record lies whole in buf (from pos), so its fields read in place."""
        return self._end <= len(self.buf)

    def finish_record(self, sink: Sink | None = None) -> None:
        """Consume the current record, its bytes from the offset delta on passed to sink; what a
        long record has beyond the window is then `pending`, for pump."""
        buf, end = self.buf, self._end
        if end <= len(buf):
            if sink is not None:
                sink(memoryview(buf)[self.rest:end])
            self.pos = end
            return
        if sink is not None:
            sink(memoryview(buf)[self.rest:])
        self.pending = end - len(buf)
        self.buf = b""
        self.pos = 0

    def pump(self, sink: Sink | None = None) -> None:
        """Move the next piece of the current record's remainder to sink (or drop it)."""
        chunk = self._source.read(min(self.pending, _PUMP)) if self._source is not None else b""
        if not chunk:
            raise MalformedRecords("the records end inside a record")
        if sink is not None:
            sink(chunk)
        self.pending -= len(chunk)
