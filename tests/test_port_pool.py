"""scripts/port_pool.py: the ports tests and launchers start servers on come from outside the
kernel's ephemeral range, once per round across processes, and only when free."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import port_pool as ports

REPO = Path(__file__).resolve().parent.parent


def _range_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ip_local_port_range"
    path.write_text(text)
    return path


def _all_free(host: str, port: int) -> bool:
    return True


def test_the_pool_is_the_larger_side_outside_the_ephemeral_range(tmp_path):
    assert ports.pool(_range_file(tmp_path, "32768\t60999\n")) == range(10000, 32768)
    assert ports.pool(_range_file(tmp_path, "12000 40000")) == range(40001, 65536)
    assert ports.pool(_range_file(tmp_path, "10500 64000")) is None  # too little room either side
    assert ports.pool(tmp_path / "missing") is None


def test_ports_are_handed_out_once_per_round_and_wrap_around(tmp_path):
    cursor, pool = tmp_path / "cursor", range(41000, 41005)
    assert ports.free_ports(3, cursor=cursor, ports=pool, bindable=_all_free) == [41000, 41001, 41002]
    assert ports.free_ports(3, cursor=cursor, ports=pool, bindable=_all_free) == [41003, 41004, 41000]
    assert cursor.read_text() == "41001\n"


def test_a_port_in_use_is_skipped_and_a_full_pool_refused(tmp_path):
    pool = range(41010, 41013)
    in_use = lambda host, port: port != 41011  # noqa: E731
    assert ports.free_ports(2, cursor=tmp_path / "cursor", ports=pool, bindable=in_use) == [41010, 41012]
    with pytest.raises(OSError, match="fewer than 3 free ports"):
        ports.free_ports(3, cursor=tmp_path / "other", ports=pool, bindable=in_use)


def test_a_listening_port_is_not_bindable():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert not ports._bindable("127.0.0.1", taken.getsockname()[1])


def test_processes_sharing_the_cursor_get_different_ports(tmp_path):
    """The test run and the launchers it starts (realkafka.py, zookeeper.py) pick concurrently."""
    cursor = tmp_path / "cursor"
    script = (f"import pathlib, sys; sys.path.insert(0, {str(REPO)!r}); from scripts import port_pool as ports; "
              f"print(*ports.free_ports(20, cursor=pathlib.Path({str(cursor)!r}), ports=range(42000, 42400)))")
    runs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    picked = [int(p) for run in runs for p in run.communicate(timeout=30)[0].split()]
    assert [run.returncode for run in runs] == [0] * 4
    assert len(picked) == 80 and len(set(picked)) == 80


def test_the_default_pool_on_this_machine_avoids_the_ephemeral_range():
    low, high = (int(v) for v in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    for port in ports.free_ports(5):
        assert not low <= port <= high
