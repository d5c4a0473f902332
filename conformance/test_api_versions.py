"""ApiVersions and the advertised API table."""

from __future__ import annotations

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from conformance.harness.wire import Connection


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
        # Version 127 of ApiVersions: a v4 (flexible) body under a header that claims 127.
        resp = conn.call_claiming(ApiVersionsRequest(client_software_name="x", client_software_version="1"),
                                  body_version=4, claimed_version=127)
    assert resp.error_code == 35  # UNSUPPORTED_VERSION
    assert any(k.api_key == 18 and k.max_version == 4 for k in resp.api_keys)
