#!/usr/bin/python3
# Carapace hello world service: answers every HTTP GET with {"result": "ok"}.
#
# Installed by the hello_world playbook to /usr/local/lib/carapace/hello_world.py
# and run by carapace-hello-world.service. Python 3 standard library only.
#
#   hello_world.py [--port 8085] [--bind ADDRESS]
#
# Without --bind it listens on all IPv6 and IPv4 addresses when the host has
# IPv6, otherwise on all IPv4 addresses. --port 0 picks a free port. Once
# listening, it prints "listening on <address> port <port>" on stdout.
"""A tiny HTTP service answering {"result": "ok"}."""

import argparse
import json
import signal
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = json.dumps({"result": "ok"}).encode("utf-8")


class HelloWorldHandler(BaseHTTPRequestHandler):
    server_version = "carapace-hello-world/1"
    protocol_version = "HTTP/1.1"

    def _headers(self, status=200, length=len(BODY)):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()

    def do_GET(self):  # noqa: N802 (http.server naming)
        self._headers()
        self.wfile.write(BODY)

    def do_HEAD(self):  # noqa: N802
        self._headers()

    def log_message(self, format, *args):  # noqa: A002 (http.server signature)
        # stderr ends up in the journal under systemd
        sys.stderr.write("%s %s\n" % (self.address_string(), format % args))


class DualStackServer(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True

    def server_bind(self):
        # accept IPv4 too (as ::ffff:a.b.c.d)
        try:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        except (AttributeError, OSError):
            pass
        super().server_bind()


class IPv4Server(ThreadingHTTPServer):
    daemon_threads = True


def make_server(bind, port):
    if bind:
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        cls = DualStackServer if family == socket.AF_INET6 else IPv4Server
        return cls((bind, port), HelloWorldHandler)
    if socket.has_ipv6:
        try:
            return DualStackServer(("::", port), HelloWorldHandler)
        except OSError:
            pass  # no IPv6 on this host: fall back to IPv4
    return IPv4Server(("0.0.0.0", port), HelloWorldHandler)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8085, help="TCP port (default 8085, 0: any free port)")
    parser.add_argument("--bind", default="", help="address to listen on (default: all)")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error("--port must be between 0 and 65535")

    server = make_server(args.bind, args.port)

    def stop(_signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    host, port = server.server_address[:2]
    print("listening on %s port %d" % (host, port), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
