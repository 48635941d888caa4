"""bench/net/resend_delay.py on a capture built here: the delay it reports is the time
from the ACK that first shows a PSN missing to that PSN leaving again."""

import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "net", "resend_delay.py")
SENDER, RECEIVER = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
PATH_PORT, LISTEN = 49152, 4793


def ip_udp(src, dst, sport, dport, payload):
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, src, dst)
    return head + udp


def data(psn, path=0):
    common = bytes([0x11, 0, path, 0]) + struct.pack("!IQ", 7, 9)
    return ip_udp(SENDER, RECEIVER, PATH_PORT, LISTEN,
                  common + struct.pack("!IIIIBBHII", psn, 0, 0, 0, 3, 0, 0, 0, 0))


def ack(cumulative, sack_bits, path=0):
    common = bytes([0x12, 0, path, 0]) + struct.pack("!IQ", 8, 9)
    words = [(sack_bits >> (64 * w)) & (2**64 - 1) for w in range(4)]
    body = struct.pack("!6I4Q", cumulative, 0, 0, 0, 0, 0, *words)
    return ip_udp(RECEIVER, SENDER, LISTEN, PATH_PORT, common + body)


def pcap(frames):
    """A classic pcap of raw IP frames (link type 101), times in microseconds."""
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101)
    for us, frame in frames:
        out += struct.pack("<IIII", us // 1000000, us % 1000000, len(frame), len(frame))
        out += frame
    return out


def run(frames):
    with tempfile.NamedTemporaryFile(suffix=".pcap", delete=False) as f:
        f.write(pcap(frames))
    try:
        r = subprocess.run([sys.executable, TOOL, f.name, "--port", str(LISTEN)],
                           capture_output=True, text=True, check=True)
        return json.loads(r.stdout)
    finally:
        os.unlink(f.name)


def test_delay_runs_from_the_ack_that_shows_the_gap():
    # PSN 11 lost; the ACK of 12 (cumulative 11, bit 0) shows it 300 us later; a second
    # ACK showing it again does not restart the clock; the resend leaves 70 us after the
    # first.
    frames = [(1000, data(10)), (1010, data(11)), (1020, data(12)), (1200, ack(11, 0)),
              (1300, ack(11, 0b1)), (1330, ack(11, 0b11)), (1370, data(11))]
    out = run(frames)
    assert out["resends"] == 1
    assert out["median_us"] == 70.0
    assert out["early_resends"] == 0


def test_a_resend_before_any_ack_showed_the_gap_is_counted_apart():
    frames = [(1000, data(10)), (1010, data(11)), (5000, data(10)), (5100, ack(12, 0))]
    out = run(frames)
    assert out["resends"] == 0
    assert out["early_resends"] == 1


def test_a_bad_capture_is_one_line_and_exit_2():
    with tempfile.NamedTemporaryFile(suffix=".pcap", delete=False) as f:
        f.write(b"not a capture at all, just text")
    try:
        r = subprocess.run([sys.executable, TOOL, f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
