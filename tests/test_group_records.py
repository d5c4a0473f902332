"""The `__consumer_offsets` record codec (wirekafka/broker/coordinator/group_records.py), built on
Kafka's JSON schemas (wirekafka/protocol/coordinator_records.py), writes the very bytes the
hand-written codec it replaced wrote, for every version it writes, and reads every value version
Kafka wrote as that codec did. (The same for `__transaction_state`: tests/test_txn_records.py.)

These records sit on disk and Kafka's tools read them, so the expected bytes are literals: they
were captured from the hand-written codec (commit 0977755) before the change, and the decoded
values of the hand-built inputs are what that codec read from them."""

from __future__ import annotations

import pytest

from wirekafka.broker.coordinator import group_records as gr

_MEMBERS = [gr.MemberValue("m1", "inst", "cid", "/127.0.0.1", 30000, 10000, b"sub", b"asg"),
            gr.MemberValue("m2", None, "cid-2", "/10.0.0.2", -1, 45000, b"", b"\x00\x01")]

GROUP_KEYS = [
    (gr.OffsetKey("grp", "topic", 3), "000100036772700005746f70696300000003"),
    (gr.OffsetKey("grüppe-é", "tópic", 2147483647), "0001000a6772c3bc7070652dc3a9000674c3b37069637fffffff"),
    (gr.GroupKey("grp"), "00020003677270"),
    (gr.GroupKey(""), "00020000"),
]

OFFSET_VALUES = [  # v3, and v1 for an offset with an expire timestamp
    (gr.OffsetValue(99, 4, "md", 12345), "000300000000000000630000000400026d640000000000003039"),
    (gr.OffsetValue(1 << 40, -1, "", 1_700_000_000_000), "00030000010000000000ffffffff00000000018bcfe56800"),
    (gr.OffsetValue(99, -1, "md", 12345, 99999), "0001000000000000006300026d640000000000003039000000000001869f"),
    (gr.OffsetValue(0, -1, "métadonnée", 1, 2),
     "00010000000000000000000c6dc3a97461646f6e6ec3a96500000000000000010000000000000002"),
]

GROUP_VALUES = [  # v3
    (gr.GroupValue("consumer", 5, "range", "m1", 1000, _MEMBERS),
     "00030008636f6e73756d657200000005000572616e676500026d3100000000000003e80000000200026d310004696e7374"
     "0003636964000a2f3132372e302e302e310000753000002710000000037375620000000361736700026d32ffff0005636964"
     "2d3200092f31302e302e302e32ffffffff0000afc800000000000000020001"),
    (gr.GroupValue("consumer", 0, None, None, -1, []),
     "00030008636f6e73756d657200000000ffffffffffffffffffffffff00000000"),
]

# Hand-built values of every version Kafka has written, and what the hand-written codec read.
READ_OFFSET_VALUES = [
    ("0000000000000000001100026d3000000000000003e8", gr.OffsetValue(17, -1, "m0", 1000)),
    ("0001000000000000001200026d3100000000000003e900000000000007d1", gr.OffsetValue(18, -1, "m1", 1001, 2001)),
    ("00020000000000000013000000000000000003ea", gr.OffsetValue(19, -1, "", 1002)),
    ("000300000000000000140000000600026d3300000000000003eb", gr.OffsetValue(20, 6, "m3", 1003)),
    ("0004000000000000001500000007036d3400000000000003ec010010000102030405060708090a0b0c0d0e0f",  # a topic id tag
     gr.OffsetValue(21, 7, "m4", 1004)),
    ("00040000000000000016ffffffff0100000000000003ed00", gr.OffsetValue(22, -1, "", 1005)),
]

_ONE_MEMBER = gr.MemberValue("m", None, "c", "/h", -1, 10000, b"s", b"a")
_TWO_MEMBERS = [gr.MemberValue("m", "i", "c", "/h", 1, 2, b"s", b"a"), gr.MemberValue("n", None, "c2", "/h2", 3, 4, b"", b"")]
READ_GROUP_VALUES = [
    ("00000008636f6e73756d657200000001000572616e676500016d0000000100016d00016300022f68000027100000000173"
     "0000000161", gr.GroupValue("consumer", 1, "range", "m", -1, [_ONE_MEMBER])),
    ("00010008636f6e73756d657200000002ffffffff0000000100016d00016300022f68000493e000002710000000000000000161",
     gr.GroupValue("consumer", 2, None, None, -1, [
         gr.MemberValue("m", None, "c", "/h", 300000, 10000, b"", b"a")])),
    ("00020007636f6e6e65637400000003000973657373696f6e656400016d000000000000004d0000000100016d00016300022f"
     "68000493e00000271000000001730000000161", gr.GroupValue("connect", 3, "sessioned", "m", 77, [
         gr.MemberValue("m", None, "c", "/h", 300000, 10000, b"s", b"a")])),
    ("00030008636f6e73756d657200000004000572616e676500016d000000000000004e0000000200016d00016900016300022f"
     "6800000001000000020000000173000000016100016effff0002633200032f683200000003000000040000000000000000",
     gr.GroupValue("consumer", 4, "range", "m", 78, _TWO_MEMBERS)),
    ("000409636f6e73756d6572000000050672616e6765026d000000000000004f03026d02690263032f68000000010000000202"
     "73026100026e00036332042f6832000000030000000401010105027a7a00",  # a member's unknown tag
     gr.GroupValue("consumer", 5, "range", "m", 79, _TWO_MEMBERS)),
    ("000401000000000000ffffffffffffffff0100", gr.GroupValue("", 0, None, None, -1, [])),
]

READ_KEYS = [
    ("000000016700017400000005", gr.OffsetKey("g", "t", 5)),  # the legacy record type
    ("000100016700017400000005", gr.OffsetKey("g", "t", 5)),
    ("0002000167", gr.GroupKey("g")),
    ("0003000167", None),  # a record type this broker does not own
    ("0005000167", None),
]


@pytest.mark.parametrize("key, expected", GROUP_KEYS)
def test_group_key_bytes(key: gr.OffsetKey | gr.GroupKey, expected: str) -> None:
    encoded = gr.encode_offset_key(key) if isinstance(key, gr.OffsetKey) else gr.encode_group_key(key)
    assert encoded.hex() == expected
    assert gr.decode_key(encoded) == key


@pytest.mark.parametrize("value, expected", OFFSET_VALUES)
def test_offset_value_bytes(value: gr.OffsetValue, expected: str) -> None:
    assert gr.encode_offset_value(value).hex() == expected
    assert gr.decode_offset_value(bytes.fromhex(expected)) == value


@pytest.mark.parametrize("value, expected", GROUP_VALUES)
def test_group_value_bytes(value: gr.GroupValue, expected: str) -> None:
    assert gr.encode_group_value(value).hex() == expected
    assert gr.decode_group_value(bytes.fromhex(expected)) == value


@pytest.mark.parametrize("data, expected", READ_OFFSET_VALUES + READ_GROUP_VALUES,
                         ids=[f"{kind}-v{v}" for kind in ("offset", "group") for v in (0, 1, 2, 3, 4, 4)])
def test_value_versions_read(data: str, expected: gr.OffsetValue | gr.GroupValue) -> None:
    decode = gr.decode_offset_value if isinstance(expected, gr.OffsetValue) else gr.decode_group_value
    assert decode(bytes.fromhex(data)) == expected


@pytest.mark.parametrize("data, expected", READ_KEYS)
def test_group_keys_read(data: str, expected: gr.OffsetKey | gr.GroupKey | None) -> None:
    assert gr.decode_key(bytes.fromhex(data)) == expected


def test_malformed_values_are_value_errors() -> None:
    """What the loaders catch or let fail: every malformed record is a ValueError."""
    for data in (b"", b"\x00", bytes.fromhex(OFFSET_VALUES[0][1])[:-3]):
        with pytest.raises(ValueError):
            gr.decode_offset_value(data)
    with pytest.raises(ValueError):
        gr.decode_key(bytes.fromhex(GROUP_KEYS[0][1])[:-1])
    with pytest.raises(ValueError):
        gr.decode_group_value(bytes.fromhex(GROUP_VALUES[0][1])[:-4])
