"""The fork server's request on the wire, written by the client (sitecustomize.py, and a test's raw caller)
and read by the server (server.py): the JSON request's length as 4 bytes, sent with the caller's standard
streams as passed file descriptors, then the JSON (kind, what, args, env, cwd, unbuffered)."""
import json
import socket
import struct


def send_request(sock, request, fds):
    data = json.dumps(request).encode()
    socket.send_fds(sock, [struct.pack("!I", len(data))], fds)
    sock.sendall(data)


def receive_request(conn):
    """-> (request, its three file descriptors)"""
    head, fds, _flags, _addr = socket.recv_fds(conn, 4, 3)
    n = struct.unpack("!I", head)[0]
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return json.loads(data), fds
