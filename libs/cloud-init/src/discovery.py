#!/usr/bin/env python3
# Carapace server discovery: registers this host with the Carapace control plane.
#
# Installed by the cloud-init user-data that @carapace/cloud-init generates, and run by
# carapace-discovery.service at every boot. Python 3 standard library only.
#
# It POSTs {"id": <hardware UUID>, "host": <address facing the control plane>,
# "username": <automation user>} to <url>/v1/server/ with "Authorization: <token>".
# HTTP 2xx: done (exit 0). Connection errors, 5xx and 429: retried with capped
# exponential backoff and jitter until the deadline (then exit 3). Any other status
# (a wrong token, say): logged, not retried (exit 1). Bad configuration: exit 2.
#
# TLS certificates are always verified: against "cafile" from the configuration if it
# is set, else against the system's trust store. Redirects are never followed (the
# token would go with them). The token is never written to the log.
#
# Options: --config PATH (default /etc/carapace/discovery.json),
#          --log PATH (default /var/log/carapace-discovery.log).
# Environment (for tests): CARAPACE_DISCOVERY_DMI_PATH replaces
# /sys/class/dmi/id/product_uuid, CARAPACE_DISCOVERY_MACHINE_ID_PATH replaces
# /etc/machine-id.
#
# Configuration (JSON object): url, token, username (strings); timeout (seconds per
# request, default 20); deadline (seconds before giving up, default 1800); cafile
# (optional path of a PEM CA bundle); backoff_initial (default 1) and backoff_max
# (default 60) in seconds.

import argparse
import http.client
import json
import os
import random
import re
import socket
import ssl
import subprocess
import sys
import time
import urllib.parse

DEFAULT_CONFIG = "/etc/carapace/discovery.json"
DEFAULT_LOG = "/var/log/carapace-discovery.log"
DMI_PATH = "/sys/class/dmi/id/product_uuid"
MACHINE_ID_PATH = "/etc/machine-id"
USER_AGENT = "carapace-discovery/1"

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_CONFIG = 2
EXIT_GAVE_UP = 3

UUID_RE = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MACHINE_ID_RE = re.compile(r"^[0-9a-f]{32}$")
# Placeholders that firmware is known to report instead of a real UUID.
BOGUS_UUIDS = frozenset([
    "00000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "03000200-0400-0500-0006-000700080009",
])


class ConfigError(Exception):
    pass


class Log(object):
    """Writes timestamped lines to stderr and to the log file; masks secrets."""

    def __init__(self, path):
        self.secrets = []
        self.stream = None
        if path:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
                self.stream = os.fdopen(fd, "a", encoding="utf-8")
            except OSError as exc:
                self._emit("cannot open log file %s: %s" % (path, exc))

    def hide(self, secret):
        if secret:
            self.secrets.append(secret)

    def _emit(self, line):
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if self.stream is not None:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass

    def __call__(self, message):
        text = str(message)
        for secret in self.secrets:
            text = text.replace(secret, "<token>")
        text = text.replace("\r", "\\r").replace("\n", "\\n")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._emit("%s carapace-discovery[%d]: %s" % (stamp, os.getpid(), text))


def read_text(path):
    try:
        with open(path, "r", encoding="ascii", errors="replace") as handle:
            return handle.read().strip().lower()
    except OSError:
        return None


def host_id(log):
    """Hardware UUID (DMI product UUID), else /etc/machine-id as a UUID."""
    dmi_path = os.environ.get("CARAPACE_DISCOVERY_DMI_PATH") or DMI_PATH
    value = read_text(dmi_path)
    if value is not None and UUID_RE.match(value) and value not in BOGUS_UUIDS:
        return value
    if value is None:
        log("no DMI product UUID at %s" % dmi_path)
    else:
        log("ignoring unusable DMI product UUID %r" % value)
    mid_path = os.environ.get("CARAPACE_DISCOVERY_MACHINE_ID_PATH") or MACHINE_ID_PATH
    value = read_text(mid_path)
    if value is not None and MACHINE_ID_RE.match(value) and value != "0" * 32:
        return "%s-%s-%s-%s-%s" % (
            value[0:8], value[8:12], value[12:16], value[16:20], value[20:32])
    raise ConfigError("no usable host id: neither %s nor %s holds one"
                      % (dmi_path, mid_path))


def host_address(hostname, port, log):
    """The local address that packets to the control plane leave from."""
    try:
        infos = socket.getaddrinfo(hostname, port, 0, socket.SOCK_DGRAM)
    except OSError as exc:
        log("cannot resolve %s: %s" % (hostname, exc))
        infos = []
    for family, socktype, proto, _name, sockaddr in infos:
        sock = None
        try:
            sock = socket.socket(family, socktype, proto)
            # connect() on a UDP socket sends nothing: it only picks a route.
            sock.connect(sockaddr)
            address = sock.getsockname()[0]
        except OSError:
            continue
        finally:
            if sock is not None:
                sock.close()
        if address and address not in ("0.0.0.0", "::"):
            return address
    log("no route to %s; falling back to the host name" % hostname)
    try:
        name = subprocess.check_output(
            ["hostname", "-f"], stderr=subprocess.DEVNULL, timeout=10
        ).decode("utf-8", "replace").strip()
        if name:
            return name
    except (OSError, subprocess.SubprocessError):
        pass
    return socket.getfqdn()


def load_config(path):
    try:
        with open(path, "r", encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ConfigError("cannot read configuration %s: %s" % (path, exc))
    if not isinstance(config, dict):
        raise ConfigError("configuration %s is not a JSON object" % path)
    for key in ("url", "token", "username"):
        if not isinstance(config.get(key), str) or not config[key]:
            raise ConfigError("configuration key %r must be a non-empty string" % key)
    for key, default in (("timeout", 20), ("deadline", 1800),
                         ("backoff_initial", 1), ("backoff_max", 60)):
        value = config.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError("configuration key %r must be a positive number" % key)
        config[key] = value
    cafile = config.get("cafile")
    if cafile is not None and (not isinstance(cafile, str) or not cafile):
        raise ConfigError("configuration key 'cafile' must be a path")
    url = urllib.parse.urlsplit(config["url"])
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigError("configuration key 'url' must be an http(s) URL")
    try:
        url.port
    except ValueError:
        raise ConfigError("configuration key 'url' has an invalid port")
    return config


def post(config, url, body, context):
    """One registration request. Returns (status, response, start of the body text)."""
    port = url.port or (443 if url.scheme == "https" else 80)
    if url.scheme == "https":
        conn = http.client.HTTPSConnection(
            url.hostname, port, timeout=config["timeout"], context=context)
    else:
        conn = http.client.HTTPConnection(url.hostname, port, timeout=config["timeout"])
    path = url.path.rstrip("/") + "/v1/server/"
    try:
        conn.request("POST", path, body=body, headers={
            "Authorization": config["token"],
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        })
        response = conn.getresponse()
        text = response.read(4096).decode("utf-8", "replace")
        return response.status, response, text
    finally:
        conn.close()


def retry_after(response):
    value = response.getheader("Retry-After") if response is not None else None
    if value is not None and value.strip().isdigit():
        return float(value.strip())
    return None


def run(config, log):
    log.hide(config["token"])
    url = urllib.parse.urlsplit(config["url"])
    port = url.port or (443 if url.scheme == "https" else 80)
    context = None
    if url.scheme == "https":
        # Verification stays on: a CA bundle can only add trust, never disable it.
        context = ssl.create_default_context(cafile=config.get("cafile"))
    server_id = host_id(log)
    endpoint = urllib.parse.urlunsplit(
        (url.scheme, url.netloc, url.path.rstrip("/") + "/v1/server/", "", ""))
    deadline_at = time.monotonic() + config["deadline"]
    attempt = 0
    while True:
        attempt += 1
        # Recomputed on every attempt: the address may change while the network settles.
        address = host_address(url.hostname, port, log)
        body = json.dumps({"id": server_id, "host": address, "username": config["username"]},
                          separators=(",", ":")).encode("utf-8")
        log("attempt %d: POST %s id=%s host=%s username=%s"
            % (attempt, endpoint, server_id, address, config["username"]))
        delay = None
        try:
            status, response, text = post(config, url, body, context)
        except (OSError, http.client.HTTPException) as exc:
            log("attempt %d: cannot reach the control plane: %s: %s"
                % (attempt, type(exc).__name__, exc))
        else:
            if 200 <= status < 300:
                log("attempt %d: registered (HTTP %d)" % (attempt, status))
                return EXIT_OK
            if status == 429 or 500 <= status < 600:
                log("attempt %d: HTTP %d, will retry: %s" % (attempt, status, text[:500]))
                delay = retry_after(response)
            else:
                log("attempt %d: HTTP %d, giving up (not retried): %s"
                    % (attempt, status, text[:500]))
                return EXIT_REJECTED
        # Capped exponential backoff with "equal jitter": between half and all of
        # backoff_initial * 2^(attempt-1), at most backoff_max. A Retry-After from the
        # server can lengthen the wait, never shorten it.
        backoff = min(config["backoff_max"],
                      config["backoff_initial"] * (2 ** min(attempt - 1, 30)))
        jittered = random.uniform(backoff / 2.0, backoff)
        delay = jittered if delay is None else max(jittered, delay)
        if time.monotonic() + delay >= deadline_at:
            log("giving up after %d attempts: deadline of %ss reached"
                % (attempt, config["deadline"]))
            return EXIT_GAVE_UP
        log("retrying in %.1fs" % delay)
        time.sleep(delay)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Register this host with the Carapace control plane.")
    parser.add_argument("--config", default=DEFAULT_CONFIG,
                        help="configuration file (default: %(default)s)")
    parser.add_argument("--log", default=DEFAULT_LOG,
                        help="log file (default: %(default)s)")
    args = parser.parse_args(argv)
    log = Log(args.log)
    try:
        config = load_config(args.config)
        return run(config, log)
    except ConfigError as exc:
        log("configuration error: %s" % exc)
        return EXIT_CONFIG
    except ssl.SSLError as exc:
        log("TLS setup error: %s" % exc)
        return EXIT_CONFIG
    except OSError as exc:
        # ssl.create_default_context raises FileNotFoundError for a missing cafile.
        log("error: %s: %s" % (type(exc).__name__, exc))
        return EXIT_CONFIG


if __name__ == "__main__":
    sys.exit(main())
