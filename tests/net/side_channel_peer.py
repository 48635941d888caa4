"""A hostile peer for mroce-perf's side channel (tests/net/perf_side_channel.sh).

  side_channel_peer.py send PORT LINE...
      connects to a server, sends each LINE (a line of JSON, or @long / @deep for a
      line past the length or nesting limit), then prints what came back until the
      server closes the connection.
  side_channel_peer.py proxy LISTEN PORT PREFIX REPLACEMENT
      relays one client to the server at PORT, replacing the first line from the server
      that starts with PREFIX by REPLACEMENT.
"""
import socket
import sys
import threading
import time


def connect(port):
    for _ in range(200):
        try:
            return socket.create_connection(("127.0.0.1", port))
        except ConnectionRefusedError:
            time.sleep(0.05)
    raise SystemExit("no server on port %d" % port)


def send(port, lines):
    s = connect(port)
    s.settimeout(30)
    try:
        for line in lines:
            if line == "@long":
                data = b'{"op": "' + b"a" * (5 << 20)  # no newline: past the limit
            elif line == "@deep":
                data = b"[" * 100000 + b"\n"
            else:
                data = line.encode() + b"\n"
            s.sendall(data)
        while s.recv(65536):
            pass
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server ended the session before reading everything: as it should
    s.close()


def proxy(listen, port, prefix, replacement):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen))
    server.listen(1)
    client, _ = server.accept()
    upstream = connect(port)

    def pump(src, dst, rewrite):
        buffer = b""
        replaced = not rewrite
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            buffer += data
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if not replaced and line.startswith(prefix.encode()):
                    line, replaced = replacement.encode(), True
                try:
                    dst.sendall(line + b"\n")
                except OSError:
                    return
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    up = threading.Thread(target=pump, args=(client, upstream, False))
    up.start()
    pump(upstream, client, True)
    up.join()


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(int(sys.argv[2]), sys.argv[3:])
    else:
        proxy(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
