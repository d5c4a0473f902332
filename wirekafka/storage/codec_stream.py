"""Kafka's four codecs as bounded streams: an `Inflater` hands out a compressed records section a
piece at a time, a `Deflater` compresses one written a piece at a time.

Why streams: a client's 1 MB batch may inflate to gigabytes (a run of zeros compresses ~20,000:1
under zstd), so nothing that looks inside a batch may decompress it whole. Kafka reads a
compressed batch through an InputStream and never holds more than a record; these are that
stream. Each inflater holds at most its codec's own working state plus the piece asked for:
- gzip: zlib with its 32 KiB window; concatenated members are read on, as Java's GZIPInputStream
  reads them, and anything after the last member that is not another member ends the stream;
- snappy: Kafka's xerial framing (a 16-byte header, then blocks, each a 4-byte length and a raw
  snappy block) or, without that header, one raw block, as snappy-java reads it. A raw block is
  decompressed whole, but snappy's format cannot inflate more than ~21.3x (a 3-byte copy yields
  at most 64 bytes), so a block whose declared length exceeds that is refused before anything is
  allocated;
- lz4: Kafka's lz4 frame, through lz4's frame decompressor with a bounded output per call (its
  blocks are at most 4 MiB);
- zstd: frames read on until the data ends (zstd-jni's continuous stream), with zstd-jni's
  default window limit of 128 MiB (2^27): a frame asking for more is corrupt to Kafka too. A
  truncated frame ends the stream quietly (python-zstandard's reader does not tell), so the
  records read from it come up short, which the record reader refuses.
Deflaters write what Kafka's writers write: gzip members, xerial snappy with 32 KiB blocks, lz4
frames of independent blocks (Kafka's lz4 reader has no dependent blocks), zstd frames."""

from __future__ import annotations

import struct
import zlib
from typing import Protocol

import lz4.frame
import snappy
import zstandard

CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD = range(5)
ZSTD_MAX_WINDOW = 1 << 27  # zstd-jni's ZSTD_WINDOWLOG_LIMIT_DEFAULT, the largest window Kafka decodes
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, compatible version 1
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_SNAPPY_MAX_RATIO = 22  # above ~21.3x (64 bytes out of a 3-byte copy) a raw block is not snappy
_GZIP_MAGIC = b"\x1f\x8b"
_I32 = struct.Struct(">i")


class CorruptStream(Exception):
    """The compressed records cannot be decompressed (damaged, truncated or not that codec)."""


class UnknownCodec(Exception):
    """Compression bits naming no codec Kafka has (5 to 7)."""


class Inflater(Protocol):
    def read(self, n: int) -> bytes:
        """Up to n (> 0) bytes of the decompressed stream; b"" once it has ended."""
        ...


class Deflater(Protocol):
    def write(self, data: bytes | memoryview) -> None:
        """Compress data onto the output."""
        ...

    def finish(self) -> bytes:
        """The whole compressed output, the codec's trailer included; the deflater is spent."""
        ...

    @property
    def size(self) -> int:
        """Compressed bytes produced so far (what the codec has not flushed yet is not counted)."""
        ...


def inflater(codec: int, data: bytes | memoryview) -> Inflater:
    """A bounded stream of data decompressed with Kafka's codec id (0: data as it is)."""
    if codec == CODEC_NONE:
        return _Plain(data)
    if codec == CODEC_GZIP:
        return _GzipInflater(bytes(data))
    if codec == CODEC_SNAPPY:
        return _SnappyInflater(bytes(data))
    if codec == CODEC_LZ4:
        return _Lz4Inflater(bytes(data))
    if codec == CODEC_ZSTD:
        return _ZstdInflater(bytes(data))
    raise UnknownCodec(f"unknown compression codec {codec}")


def deflater(codec: int, level: int | None = None) -> Deflater:
    """A streaming compressor for Kafka's codec id; level as Kafka's compression.<codec>.level
    (None: the library's default; -1 for gzip: zlib's default, 6)."""
    if codec == CODEC_NONE:
        return _Collect()
    if codec == CODEC_GZIP:
        gzip_level = 6 if level is None or level == -1 else level
        return _Flushing(zlib.compressobj(gzip_level, zlib.DEFLATED, 31))
    if codec == CODEC_SNAPPY:
        return _SnappyDeflater()
    if codec == CODEC_LZ4:
        frame = lz4.frame.LZ4FrameCompressor(compression_level=level or 0, block_linked=False)
        return _Flushing(frame, frame.begin())
    if codec == CODEC_ZSTD:
        return _Flushing(zstandard.ZstdCompressor(level=3 if level is None else level).compressobj())
    raise UnknownCodec(f"unknown compression codec {codec}")


class _Plain:
    """An uncompressed section: slices of the bytes already in memory."""

    def __init__(self, data: bytes | memoryview) -> None:
        self._data = data
        self._pos = 0

    def read(self, n: int) -> bytes:
        chunk = bytes(self._data[self._pos:self._pos + n])
        self._pos += len(chunk)
        return chunk


class _GzipInflater:
    def __init__(self, data: bytes) -> None:
        self._z = zlib.decompressobj(31)
        self._input = data

    def read(self, n: int) -> bytes:
        try:
            while True:
                if self._z.eof:
                    rest = self._z.unused_data
                    if not rest.startswith(_GZIP_MAGIC):
                        return b""  # the last member: what follows is ignored, as GZIPInputStream does
                    self._z = zlib.decompressobj(31)
                    self._input = rest
                out = self._z.decompress(self._input, n)
                self._input = self._z.unconsumed_tail
                if out:
                    return out
                if not self._input and not self._z.eof:
                    raise CorruptStream("gzip stream ends inside a member")
        except zlib.error as exc:
            raise CorruptStream(f"gzip: {exc}") from exc


class _SnappyInflater:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._xerial = data.startswith(_XERIAL_MAGIC) and len(data) >= len(_XERIAL_HEADER)
        self._pos = len(_XERIAL_HEADER) if self._xerial else 0
        self._out = b""
        self._out_pos = 0

    def read(self, n: int) -> bytes:
        while self._out_pos >= len(self._out):
            block = self._next_block()
            if block is None:
                return b""
            self._out = _snappy_block(block)
            self._out_pos = 0
        chunk = self._out[self._out_pos:self._out_pos + n]
        self._out_pos += len(chunk)
        return chunk

    def _next_block(self) -> bytes | memoryview | None:
        data = self._data
        if self._pos >= len(data):
            return None
        if not self._xerial:
            self._pos = len(data)
            return data
        if self._pos + 4 > len(data):
            raise CorruptStream("snappy: truncated block length")
        (size,) = _I32.unpack_from(data, self._pos)
        start = self._pos + 4
        if size < 0 or start + size > len(data):
            raise CorruptStream(f"snappy: block of {size} bytes overruns the data")
        self._pos = start + size
        return memoryview(data)[start:start + size]


def _snappy_block(block: bytes | memoryview) -> bytes:
    """One raw snappy block decompressed, its declared length checked first (a varint at its
    start) so that a lying one allocates nothing."""
    declared, shift, i = 0, 0, 0
    while True:
        if i >= len(block) or i >= 5:
            raise CorruptStream("snappy: bad block length")
        b = block[i]
        declared |= (b & 0x7F) << shift
        shift += 7
        i += 1
        if b < 0x80:
            break
    if declared > _SNAPPY_MAX_RATIO * len(block):
        raise CorruptStream(f"snappy: a {len(block)}-byte block cannot hold {declared} bytes")
    try:
        out = snappy.uncompress(bytes(block))
    except Exception as exc:  # noqa: BLE001 - the binding's errors differ between versions
        raise CorruptStream(f"snappy: {exc}") from exc
    if not isinstance(out, bytes):  # the binding decodes text when asked to; bytes in, bytes out
        raise CorruptStream("snappy: the block did not decompress to bytes")
    return out


class _Lz4Inflater:
    def __init__(self, data: bytes) -> None:
        self._d = lz4.frame.LZ4FrameDecompressor()
        self._input = data

    def read(self, n: int) -> bytes:
        try:
            while not self._d.eof:
                out = self._d.decompress(self._input, max_length=n)
                self._input = b""
                if out:
                    return out
                if self._d.needs_input and not self._d.eof:
                    raise CorruptStream("lz4: the frame ends early")
        except RuntimeError as exc:  # lz4 reports a damaged frame as RuntimeError
            raise CorruptStream(f"lz4: {exc}") from exc
        return b""


class _ZstdInflater:
    def __init__(self, data: bytes) -> None:
        d = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
        self._reader = d.stream_reader(data, read_across_frames=True)

    def read(self, n: int) -> bytes:
        try:
            return self._reader.read(n)
        except zstandard.ZstdError as exc:
            raise CorruptStream(f"zstd: {exc}") from exc


class _Collect:
    """No codec: the written bytes, joined."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes | memoryview) -> None:
        self._parts.append(bytes(data))
        self.size += len(data)

    def finish(self) -> bytes:
        return b"".join(self._parts)


class _Compressor(Protocol):
    def compress(self, data: bytes, /) -> bytes: ...

    def flush(self) -> bytes: ...


class _Flushing:
    """A compressobj-style compressor (zlib's, zstd's, lz4's frame): compress pieces, flush at
    the end; header: what the format writes before the first piece (lz4's frame header)."""

    def __init__(self, compressor: _Compressor, header: bytes = b"") -> None:
        self._c = compressor
        self._parts: list[bytes] = [header] if header else []
        self.size = len(header)

    def write(self, data: bytes | memoryview) -> None:
        out = self._c.compress(bytes(data))
        if out:
            self._parts.append(out)
            self.size += len(out)

    def finish(self) -> bytes:
        self._parts.append(self._c.flush())
        return b"".join(self._parts)


class _SnappyDeflater:
    """xerial framing: the header, then 32 KiB of input per block."""

    def __init__(self) -> None:
        self._parts: list[bytes] = [_XERIAL_HEADER]
        self._pending = bytearray()
        self.size = len(_XERIAL_HEADER)

    def write(self, data: bytes | memoryview) -> None:
        self._pending += data
        while len(self._pending) >= _XERIAL_BLOCK:
            self._block(bytes(self._pending[:_XERIAL_BLOCK]))
            del self._pending[:_XERIAL_BLOCK]

    def _block(self, data: bytes) -> None:
        out = snappy.compress(data)
        self._parts.append(_I32.pack(len(out)) + out)
        self.size += 4 + len(out)

    def finish(self) -> bytes:
        if self._pending:
            self._block(bytes(self._pending))
            self._pending.clear()
        return b"".join(self._parts)
