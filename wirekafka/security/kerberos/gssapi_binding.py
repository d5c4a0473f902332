"""The few GSS-API (RFC 2743/2744) calls the GSSAPI SASL mechanism needs, bound with ctypes to
the system's MIT Kerberos library (libgssapi_krb5.so.2, part of every Debian/Ubuntu base system).

Why ctypes: python-gssapi has no wheel for this platform and wirekafka takes no compiled
dependencies; the handful of calls below is all a SASL acceptor uses, plus the initiator side
for the broker's start-up login (kerberos_login.log_in) and the tests' clients.
Credentials come from an explicit credential store (gss_acquire_cred_from with {"keytab": ...} or
{"client_keytab": ..., "ccache": ...}), so nothing depends on KRB5_KTNAME or other process-wide
environment and several listeners can use different keytabs. The krb5 configuration (realm,
KDCs) is the library's own: /etc/krb5.conf or KRB5_CONFIG.

Every failure becomes a GssError carrying the major and minor status and gss_display_status's
text, which is what an operator needs to see in the log. This module does file I/O through the
library (keytabs, the replay cache), so it lives outside `protocol`."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

OM_uint32 = ctypes.c_uint32

GSS_S_COMPLETE, GSS_S_CONTINUE_NEEDED = 0, 1
# supplementary status bits of gss_unwrap (RFC 2744 section 3.9.1)
GSS_S_DUPLICATE_TOKEN, GSS_S_OLD_TOKEN, GSS_S_UNSEQ_TOKEN, GSS_S_GAP_TOKEN = 2, 4, 8, 16
_ERROR_MASK = 0xFFFF0000  # calling and routine errors; the low bits are supplementary information
GSS_C_GSS_CODE, GSS_C_MECH_CODE = 1, 2
GSS_C_BOTH, GSS_C_INITIATE, GSS_C_ACCEPT = 0, 1, 2
GSS_C_MUTUAL_FLAG, GSS_C_SEQUENCE_FLAG, GSS_C_INTEG_FLAG = 2, 8, 32
GSS_C_INDEFINITE = 0xFFFFFFFF
# MIT's krb5 error table base (ERROR_TABLE_BASE_krb5): a minor status minus this is the
# Kerberos protocol error number (RFC 4120 section 7.5.9)
KRB5_ERROR_BASE = -1765328384


class _Buffer(ctypes.Structure):
    _fields_ = [("length", ctypes.c_size_t), ("value", ctypes.c_void_p)]


class _KeyValue(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class _KeyValueSet(ctypes.Structure):
    _fields_ = [("count", OM_uint32), ("elements", ctypes.POINTER(_KeyValue))]


class GssError(Exception):
    """A failed GSS-API call: what was attempted, the statuses and the library's own text."""

    def __init__(self, call: str, major: int, minor: int, text: str) -> None:
        super().__init__(f"{call}: {text}")
        self.call, self.major, self.minor = call, major, minor

    @property
    def kerberos_error(self) -> int | None:
        """The Kerberos protocol error number behind the minor status, if it is one."""
        code = ctypes.c_int32(self.minor).value - KRB5_ERROR_BASE
        return code if 0 <= code < 128 else None


@functools.cache
def _lib() -> ctypes.CDLL:
    """The MIT GSS-API library; OSError when it is not installed."""
    name = ctypes.util.find_library("gssapi_krb5") or "libgssapi_krb5.so.2"
    lib = ctypes.CDLL(name)
    p, u32 = ctypes.c_void_p, OM_uint32
    pu32, pp, pbuf = ctypes.POINTER(u32), ctypes.POINTER(p), ctypes.POINTER(_Buffer)
    signatures = {
        "gss_import_name": [pu32, pbuf, p, pp],
        "gss_acquire_cred_from": [pu32, p, u32, p, ctypes.c_int, ctypes.POINTER(_KeyValueSet), pp, pp, pu32],
        "gss_accept_sec_context": [pu32, pp, p, pbuf, p, pp, pp, pbuf, pu32, pu32, pp],
        "gss_init_sec_context": [pu32, p, pp, p, p, u32, u32, p, pbuf, pp, pbuf, pu32, pu32],
        "gss_display_name": [pu32, p, pbuf, pp],
        "gss_wrap": [pu32, p, ctypes.c_int, u32, pbuf, ctypes.POINTER(ctypes.c_int), pbuf],
        "gss_unwrap": [pu32, p, pbuf, pbuf, ctypes.POINTER(ctypes.c_int), pu32],
        "gss_display_status": [pu32, u32, ctypes.c_int, p, pu32, pbuf],
        "gss_release_buffer": [pu32, pbuf],
        "gss_release_name": [pu32, pp],
        "gss_release_cred": [pu32, pp],
        "gss_delete_sec_context": [pu32, pp, p],
    }
    for fn, args in signatures.items():
        getattr(lib, fn).argtypes = args
        getattr(lib, fn).restype = u32
    return lib


def available() -> bool:
    """Whether the MIT GSS-API library can be loaded."""
    try:
        _lib()
    except OSError:
        return False
    return True


def _oid(symbol: str) -> int | None:
    """One of the library's exported OID pointers (name types, the krb5 mechanism)."""
    return ctypes.c_void_p.in_dll(_lib(), symbol).value


def _take(buffer: _Buffer) -> bytes:
    """The bytes of a buffer the library allocated, which is then released."""
    try:
        return ctypes.string_at(buffer.value, buffer.length) if buffer.length else b""
    finally:
        _lib().gss_release_buffer(ctypes.byref(OM_uint32()), ctypes.byref(buffer))


def _status_text(code: int, kind: int) -> str:
    lib, parts, context = _lib(), [], OM_uint32(0)
    while True:
        minor, text = OM_uint32(), _Buffer()
        if lib.gss_display_status(ctypes.byref(minor), code, kind, None, ctypes.byref(context),
                                  ctypes.byref(text)) & _ERROR_MASK:
            break
        parts.append(_take(text).decode(errors="replace"))
        if not context.value:
            break
    return "; ".join(parts)


def _check(call: str, major: int, minor: OM_uint32) -> int:
    """major when it is not an error; GssError with the library's text otherwise."""
    if major & _ERROR_MASK:
        text = _status_text(major, GSS_C_GSS_CODE)
        if minor.value:
            text = f"{text} ({_status_text(minor.value, GSS_C_MECH_CODE)})"
        raise GssError(call, major, minor.value, text)
    return major


def _input(data: bytes) -> _Buffer:
    """A buffer over a copy of data, which the buffer keeps alive as long as itself."""
    raw = ctypes.create_string_buffer(data, len(data))
    buffer = _Buffer(len(data), ctypes.cast(raw, ctypes.c_void_p))
    buffer._memory = raw
    return buffer


def _import_principal(principal: str) -> ctypes.c_void_p:
    name, buf = ctypes.c_void_p(), _input(principal.encode())
    minor = OM_uint32()
    _check("gss_import_name", _lib().gss_import_name(ctypes.byref(minor), ctypes.byref(buf),
                                                      _oid("GSS_KRB5_NT_PRINCIPAL_NAME"), ctypes.byref(name)), minor)
    return name


def _release_name(name: ctypes.c_void_p) -> None:
    if name.value:
        _lib().gss_release_name(ctypes.byref(OM_uint32()), ctypes.byref(name))


def _display_name(name: ctypes.c_void_p) -> str:
    minor, text = OM_uint32(), _Buffer()
    _check("gss_display_name", _lib().gss_display_name(ctypes.byref(minor), name, ctypes.byref(text), None), minor)
    return _take(text).decode()


class Credential:
    """Credentials of one principal from an explicit credential store; release() frees them."""

    def __init__(self, principal: str, store: dict[str, str], usage: int) -> None:
        elements = (_KeyValue * len(store))(*[_KeyValue(k.encode(), v.encode()) for k, v in store.items()])
        cred_store = _KeyValueSet(len(store), elements)
        self.handle = ctypes.c_void_p()
        name, minor = _import_principal(principal), OM_uint32()
        try:
            _check("gss_acquire_cred_from",
                   _lib().gss_acquire_cred_from(ctypes.byref(minor), name, GSS_C_INDEFINITE, None, usage,
                                                ctypes.byref(cred_store), ctypes.byref(self.handle), None, None),
                   minor)
        finally:
            _release_name(name)

    @classmethod
    def acceptor(cls, principal: str, keytab: str) -> "Credential":
        """A service's credentials: its keys in keytab (read when a token is accepted)."""
        return cls(principal, {"keytab": keytab}, GSS_C_ACCEPT)

    @classmethod
    def initiator(cls, principal: str, keytab: str, ccache: str) -> "Credential":
        """A client's credentials: a ticket-granting ticket got with its keys in keytab, kept in
        ccache (e.g. MEMORY:name), as a Kafka client logs in with Krb5LoginModule and a keytab."""
        return cls(principal, {"client_keytab": keytab, "ccache": ccache}, GSS_C_INITIATE)

    def release(self) -> None:
        if self.handle.value:
            _lib().gss_release_cred(ctypes.byref(OM_uint32()), ctypes.byref(self.handle))

    def __del__(self) -> None:  # a connection that goes away mid-exchange just drops its context
        self.release()


class SecurityContext:
    """One GSS-API security context, either side; delete() frees it."""

    def __init__(self) -> None:
        self._context = ctypes.c_void_p()
        self.established = False

    def wrap(self, message: bytes, confidential: bool = False) -> bytes:
        """message, integrity-protected (and encrypted if confidential) for the peer."""
        minor, out, buf = OM_uint32(), _Buffer(), _input(message)
        _check("gss_wrap", _lib().gss_wrap(ctypes.byref(minor), self._context, int(confidential), 0,
                                           ctypes.byref(buf), None, ctypes.byref(out)), minor)
        return _take(out)

    def unwrap(self, token: bytes) -> tuple[bytes, int]:
        """The peer's wrapped message and the call's supplementary status bits (duplicate, old,
        out of sequence, gap); GssError if the token does not verify."""
        minor, out, buf = OM_uint32(), _Buffer(), _input(token)
        major = _check("gss_unwrap", _lib().gss_unwrap(ctypes.byref(minor), self._context, ctypes.byref(buf),
                                                       ctypes.byref(out), None, None), minor)
        return _take(out), major & 0xFFFF

    def delete(self) -> None:
        if self._context.value:
            _lib().gss_delete_sec_context(ctypes.byref(OM_uint32()), ctypes.byref(self._context), None)

    def __del__(self) -> None:
        self.delete()


class AcceptorContext(SecurityContext):
    """The service's side: accept() each initiator token until established; then `peer` is the
    initiator's principal name (e.g. alice@REALM)."""

    def __init__(self, credential: Credential) -> None:
        super().__init__()
        self._credential = credential
        self.peer: str | None = None

    def accept(self, token: bytes) -> bytes:
        """The answer token (possibly empty) to an initiator token."""
        minor, out, source = OM_uint32(), _Buffer(), ctypes.c_void_p()
        buf = _input(token)
        major = _check("gss_accept_sec_context", _lib().gss_accept_sec_context(
            ctypes.byref(minor), ctypes.byref(self._context), self._credential.handle, ctypes.byref(buf), None,
            ctypes.byref(source), None, ctypes.byref(out), None, None, None), minor)
        try:
            answer = _take(out)
            if not major & GSS_S_CONTINUE_NEEDED:
                self.established = True
                self.peer = _display_name(source)
        finally:
            _release_name(source)
        return answer


class InitiatorContext(SecurityContext):
    """The client's side towards `service` (e.g. kafka/127.0.0.1@REALM), asking for mutual
    authentication as Java's and Cyrus SASL's GSSAPI clients do."""

    def __init__(self, credential: Credential, service: str) -> None:
        super().__init__()
        self._credential = credential
        self._target = ctypes.c_void_p()  # set before the import can fail, for delete()
        self._target = _import_principal(service)

    def step(self, token: bytes = b"") -> bytes:
        """The next token for the acceptor, given its last answer (nothing at first)."""
        minor, out = OM_uint32(), _Buffer()
        buf = _input(token)
        major = _check("gss_init_sec_context", _lib().gss_init_sec_context(
            ctypes.byref(minor), self._credential.handle, ctypes.byref(self._context), self._target,
            _oid("gss_mech_krb5"), GSS_C_MUTUAL_FLAG | GSS_C_SEQUENCE_FLAG | GSS_C_INTEG_FLAG, 0, None,
            ctypes.byref(buf), None, ctypes.byref(out), None, None), minor)
        self.established = not major & GSS_S_CONTINUE_NEEDED
        return _take(out)

    def delete(self) -> None:
        super().delete()
        _release_name(self._target)


def default_realm() -> str:
    """The krb5 configuration's default realm, "" when there is none (or no library), as Kafka
    falls back to "" when the JVM's Kerberos configuration names none."""
    try:
        krb5 = ctypes.CDLL(ctypes.util.find_library("krb5") or "libkrb5.so.3")
    except OSError:
        return ""
    context, realm = ctypes.c_void_p(), ctypes.c_char_p()
    if krb5.krb5_init_context(ctypes.byref(context)) != 0:
        return ""
    try:
        if krb5.krb5_get_default_realm(context, ctypes.byref(realm)) != 0:
            return ""
        value = (realm.value or b"").decode()
        krb5.krb5_free_default_realm(context, realm)
        return value
    finally:
        krb5.krb5_free_context(context)
