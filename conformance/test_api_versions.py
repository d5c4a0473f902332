"""ApiVersions and the advertised API table."""

from __future__ import annotations

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from conformance.wire import Connection


@pytest.mark.parametrize("version", range(0, 5))
def test_api_versions(target, version):
    with Connection(target.bootstrap) as conn:
        resp = conn.call(ApiVersionsRequest(client_software_name="conformance", client_software_version="1"),
                         version)
    assert resp.error_code == 0
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[18] == (0, 4)
    for api in (0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 19, 20, 22):
        assert api in keys, f"api {api} not advertised"


def test_unsupported_api_versions_version_gets_v0_error_body(target):
    with Connection(target.bootstrap) as conn:
        resp = conn.call(ApiVersionsRequest(client_software_name="x", client_software_version="1"), 4)
        assert resp.error_code == 0
        req = ApiVersionsRequest(client_software_name="x", client_software_version="1")
        # Version 127 of ApiVersions: encode as v4 (flexible) but claim 127 in the header.
        conn._cid += 1
        req.with_header(correlation_id=conn._cid, client_id="conformance")
        body = bytes(req.encode(version=4))
        import struct
        header = struct.pack(">hhih", 18, 127, conn._cid, 11) + b"conformance" + b"\x00"
        frame = header + body
        conn.sock.sendall(struct.pack(">i", len(frame)) + frame)
        resp = conn.receive(18, 127, conn._cid)
    assert resp.error_code == 35  # UNSUPPORTED_VERSION
    assert any(k.api_key == 18 and k.max_version == 4 for k in resp.api_keys)
