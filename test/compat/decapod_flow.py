#!/usr/bin/env python3
"""A whole Carapace session driven the way the original Python client, decapodlib, drives it.

`DecapodClient` below is a tiny stand-in for decapodlib's `V1Client` (standard library only):
it behaves like decapodlib on the wire, as /work/shared/spec/api-v1.md describes it:

- every URL ends with a slash (`_make_url`), ids are in the path, no redirect is followed;
- the token goes raw in `Authorization: <token>`, after a lazy login on the first call; the
  no-auth calls (info, password reset) send no `Authorization` header at all;
- bodies are `json.dumps` output with `Content-Type: application/json`;
- a 2xx answer is parsed as JSON only when its `Content-Type` is exactly `application/json`
  (decapodlib compares the header literally), otherwise it is returned as text;
- an error answer is raised as `ServiceApiError`, reading `error` and `message` from the body;
- an update PUTs the whole model as last read, with only `data` changed;
- list calls take decapodlib's `page`, `per_page`, `all_items`, `filter` and `sort_by`.

The main flow runs every step of a decapodlib user's day and checks each answer. It prints
one `ok - <step>` line per step and `ALL CHECKS PASSED` at the end (exit 0); on the first
failure it prints `FAIL - <step>: <why>` with the request and response at fault (exit 1).

Inputs (arguments, or the environment):
  --url               CARAPACE_URL              base URL of the API, without /v1
  --root-password     CARAPACE_ROOT_PASSWORD    password of `root`
  --discovery-token   CARAPACE_DISCOVERY_TOKEN  the server discovery token
  --mail-url          CARAPACE_MAIL_URL         GET <mail-url>?to=<address>&subject=<text> answers
                                                the text of the latest such mail (404: none)
"""

import argparse
import gzip
import json
import os
import re
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zlib

JSON = "application/json"
CACHE_CONTROL = "private, no-store, no-cache"
WWW_AUTHENTICATE = 'Token realm="Application"'
CONTRACT_API_PERMISSIONS = sorted(
    "create_cluster create_execution create_playbook_configuration create_role create_server create_user "
    "delete_cluster delete_execution delete_playbook_configuration delete_role delete_server delete_user "
    "edit_cluster edit_playbook_configuration edit_role edit_server edit_user view_cluster "
    "view_cluster_versions view_execution view_execution_steps view_execution_version "
    "view_playbook_configuration view_playbook_configuration_version view_role view_role_versions "
    "view_server view_server_versions view_user view_user_versions".split()
)
PLAYBOOKS = ["add_osd", "cluster_deploy", "hello_world", "purge_cluster", "remove_osd"]
# Carapace's playbooks beyond the contract's (api-v1: the catalogs list every playbook the service has).
CARAPACE_PLAYBOOKS = [
    "add_mon",
    "add_pool",
    "cinder_integration",
    "maintenance_enter",
    "maintenance_exit",
    "remove_mon",
    "remove_pool",
    "replace_mon",
    "replace_osd",
    "restart_services",
    "update_ceph_configuration",
    "upgrade_ceph",
]


# --------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------


class Exchange:
    """One request and its response, as they went over the wire."""

    def __init__(self, method, url, headers, body):
        self.method = method
        self.url = url
        self.request_headers = dict(headers)
        self.request_body = body
        self.status = None
        self.reason = ""
        self.response_headers = {}
        self.response_body = b""

    def header(self, name):
        for key, value in self.response_headers.items():
            if key.lower() == name.lower():
                return value
        return None

    def request_header(self, name):
        for key, value in self.request_headers.items():
            if key.lower() == name.lower():
                return value
        return None

    @property
    def text(self):
        return self.response_body.decode("utf-8", errors="replace")

    def describe(self):
        def shown(name, value):
            if name.lower() == "authorization" and len(value) > 24:
                return value[:16] + "..."
            return value

        lines = ["  request:  {0} {1}".format(self.method, self.url)]
        lines += ["    {0}: {1}".format(k, shown(k, v)) for k, v in self.request_headers.items()]
        if self.request_body:
            lines.append("    " + self.request_body.decode("utf-8", errors="replace")[:2000])
        lines.append("  response: {0} {1}".format(self.status, self.reason))
        lines += ["    {0}: {1}".format(k, v) for k, v in self.response_headers.items()]
        if self.response_body:
            lines.append("    " + self.text[:2000])
        return "\n".join(lines)


class ServiceError(Exception):
    """decapodlib's DecapodError: the API cannot be reached or its answer cannot be read."""

    def __init__(self, exc, exchange=None):
        super().__init__(str(exc))
        self.exception = exc
        self.exchange = exchange


class ServiceApiError(ServiceError):
    """decapodlib's DecapodAPIError: the API answered with an error; reads `error` and `message`."""

    def __init__(self, exchange):
        super().__init__("HTTP {0}".format(exchange.status), exchange)
        self.code = exchange.status
        body = json.loads(exchange.text)
        self.error = body["error"]
        self.description = body["message"]

    @property
    def json(self):
        return {"code": self.code, "error": self.error, "description": self.description}

    def __str__(self):
        return "{0}[{1}]: {2}".format(self.error, self.code, self.description)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # api-v1 §1: every route answers with and without the slash, "with no redirect".
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


def no_auth(headers, client):
    """Sends no Authorization header (decapodlib's `auth.no_auth`)."""


class StaticAuth:
    """Sends a fixed `Authorization` value (the discovery token, as the first-boot script does)."""

    def __init__(self, value):
        self.value = value

    def __call__(self, headers, client):
        headers["Authorization"] = self.value


class V1Auth:
    """decapodlib's V1Auth: logs in lazily (thread-safely) and sends the raw token."""

    AUTH_URL = "/v1/auth/"

    def __init__(self):
        self.token = None
        self.token_lock = threading.RLock()

    def __call__(self, headers, client):
        with self.token_lock:
            if not self.token:
                client.login()
        headers["Authorization"] = self.token

    def revoke_token(self):
        with self.token_lock:
            self.token = None


class DecapodClient:
    """The decapodlib V1Client, on urllib: same URLs, headers, bodies and answer handling."""

    def __init__(self, url, login, password, timeout=None, verify=True, certificate_file=None):
        url = url.strip().rstrip("/")
        self._url = url if url.startswith("http") else "http://" + url
        self._login = login
        self._password = password
        self._timeout = timeout
        self.auth = V1Auth()
        self.exchanges = []
        self.on_exchange = None

    @property
    def last(self):
        return self.exchanges[-1] if self.exchanges else None

    def _make_url(self, endpoint):
        url = self._url + endpoint
        return url if url.endswith("/") else url + "/"

    def _request(self, method, endpoint, payload=None, params=None, headers=None, auth=None, raw_response=False, slash=True):
        url = self._make_url(endpoint) if slash else self._url + endpoint
        if params:
            url += "?" + urllib.parse.urlencode(params)
        sent = {"User-Agent": "decapodlib/1.1.0", "Accept-Encoding": "gzip, deflate", "Accept": "*/*"}
        body = None
        if payload is not None:
            body = json.dumps(payload).encode("utf-8")
            sent["Content-Type"] = JSON
        elif method not in ("GET", "HEAD"):
            sent["Content-Length"] = "0"  # what requests sends on a body-less DELETE
        sent.update(headers or {})
        (auth or self.auth)(sent, self)

        exchange = Exchange(method, url, sent, body)
        self.exchanges.append(exchange)
        request = urllib.request.Request(url, data=body, headers=sent, method=method)
        try:
            try:
                response = _OPENER.open(request, timeout=self._timeout)
            except urllib.error.HTTPError as err:
                response = err
            with response:
                exchange.status = response.status if hasattr(response, "status") else response.code
                exchange.reason = response.reason
                exchange.response_headers = dict(response.headers.items())
                data = response.read()
        except (OSError, ValueError) as exc:
            raise ServiceError(exc, exchange) from exc
        encoding = (exchange.header("Content-Encoding") or "").lower()
        if encoding == "gzip":
            data = gzip.decompress(data)
        elif encoding == "deflate":
            data = zlib.decompress(data)
        exchange.response_body = data
        if self.on_exchange:
            self.on_exchange(exchange)
        if raw_response:
            return exchange

        if 300 <= exchange.status < 400:
            raise ServiceError("unexpected redirect to {0}".format(exchange.header("Location")), exchange)
        if exchange.status < 400:
            content_type = exchange.header("Content-Type") or JSON
            if content_type == JSON:
                try:
                    return json.loads(exchange.text)
                except ValueError as exc:
                    raise ServiceError(exc, exchange) from exc
            return exchange.text
        try:
            raise ServiceApiError(exchange)
        except (ValueError, KeyError, TypeError) as exc:
            raise ServiceError(exc, exchange) from exc

    @staticmethod
    def _pagination(page=None, per_page=None, all_items=None, filter=None, sort_by=None):
        params = {}
        if page is not None:
            params["page"] = page
        if per_page is not None:
            params["per_page"] = per_page
        if all_items is not None:
            params["all"] = str(int(bool(all_items)))
        if filter is not None:
            params["filter"] = json.dumps(filter, separators=(",", ":"))
        if sort_by is not None:
            params["sort_by"] = json.dumps(sort_by, separators=(",", ":"))
        return params

    # -- authentication and account ----------------------------------------------------------

    def login(self, **kwargs):
        """Logs in (POST /v1/auth/) and keeps the token; the first call does it implicitly."""
        payload = {"username": self._login, "password": self._password}
        with self.auth.token_lock:
            answer = self._request("POST", V1Auth.AUTH_URL, payload, auth=no_auth, **kwargs)
            self.auth.token = answer["id"]
        return answer

    def logout(self, **kwargs):
        if not self.auth.token:
            return {}
        try:
            return self._request("DELETE", V1Auth.AUTH_URL, **kwargs)
        except ServiceError:
            return {}
        finally:
            self.auth.revoke_token()

    def get_info(self, **kwargs):
        return self._request("GET", "/v1/info/", auth=no_auth, **kwargs)

    def request_password_reset(self, login, **kwargs):
        return self._request("POST", "/v1/password_reset/", {"login": login}, auth=no_auth, **kwargs)

    def peek_password_reset(self, reset_token, **kwargs):
        return self._request("GET", "/v1/password_reset/{0}/".format(reset_token), auth=no_auth, **kwargs)

    def reset_password(self, reset_token, new_password, **kwargs):
        path = "/v1/password_reset/{0}/".format(reset_token)
        return self._request("POST", path, {"password": new_password}, auth=no_auth, **kwargs)

    def get_user_self(self, **kwargs):
        return self._request("GET", "/v1/user/self/", **kwargs)

    def get_role_self(self, **kwargs):
        return self._request("GET", "/v1/role/self/", **kwargs)

    def get_permissions(self, **kwargs):
        return self._request("GET", "/v1/permission/", **kwargs)

    def get_playbooks(self, **kwargs):
        return self._request("GET", "/v1/playbook/", **kwargs)

    # -- the generic versioned-model calls ---------------------------------------------------

    def _list(self, path, page=None, per_page=None, all_items=None, filter=None, sort_by=None, **kwargs):
        params = self._pagination(page, per_page, all_items, filter, sort_by)
        return self._request("GET", path, params=params, **kwargs)

    def _put(self, model, model_data, **kwargs):
        return self._request("PUT", "/v1/{0}/{1}/".format(model, model_data["id"]), model_data, **kwargs)

    # users
    def get_users(self, **kwargs):
        return self._list("/v1/user/", **kwargs)

    def get_user(self, user_id, **kwargs):
        return self._request("GET", "/v1/user/{0}/".format(user_id), **kwargs)

    def get_user_versions(self, user_id, **kwargs):
        return self._list("/v1/user/{0}/version/".format(user_id), **kwargs)

    def get_user_version(self, user_id, version, **kwargs):
        return self._request("GET", "/v1/user/{0}/version/{1}/".format(user_id, version), **kwargs)

    def create_user(self, login, email, full_name="", role_id=None, **kwargs):
        payload = {"login": login, "email": email, "full_name": full_name, "role_id": role_id}
        return self._request("POST", "/v1/user/", payload, **kwargs)

    def update_user(self, model_data, **kwargs):
        return self._put("user", model_data, **kwargs)

    def delete_user(self, user_id, **kwargs):
        return self._request("DELETE", "/v1/user/{0}/".format(user_id), **kwargs)

    # roles
    def get_roles(self, **kwargs):
        return self._list("/v1/role/", **kwargs)

    def get_role(self, role_id, **kwargs):
        return self._request("GET", "/v1/role/{0}/".format(role_id), **kwargs)

    def get_role_versions(self, role_id, **kwargs):
        return self._list("/v1/role/{0}/version/".format(role_id), **kwargs)

    def get_role_version(self, role_id, version, **kwargs):
        return self._request("GET", "/v1/role/{0}/version/{1}/".format(role_id, version), **kwargs)

    def create_role(self, name, permissions, **kwargs):
        return self._request("POST", "/v1/role/", {"name": name, "permissions": permissions}, **kwargs)

    def update_role(self, model_data, **kwargs):
        return self._put("role", model_data, **kwargs)

    def delete_role(self, role_id, **kwargs):
        return self._request("DELETE", "/v1/role/{0}/".format(role_id), **kwargs)

    # clusters
    def get_clusters(self, **kwargs):
        return self._list("/v1/cluster/", **kwargs)

    def get_cluster(self, cluster_id, **kwargs):
        return self._request("GET", "/v1/cluster/{0}/".format(cluster_id), **kwargs)

    def get_cluster_versions(self, cluster_id, **kwargs):
        return self._list("/v1/cluster/{0}/version/".format(cluster_id), **kwargs)

    def get_cluster_version(self, cluster_id, version, **kwargs):
        return self._request("GET", "/v1/cluster/{0}/version/{1}/".format(cluster_id, version), **kwargs)

    def create_cluster(self, name, **kwargs):
        return self._request("POST", "/v1/cluster/", {"name": name}, **kwargs)

    def update_cluster(self, model_data, **kwargs):
        return self._put("cluster", model_data, **kwargs)

    def delete_cluster(self, cluster_id, **kwargs):
        return self._request("DELETE", "/v1/cluster/{0}/".format(cluster_id), **kwargs)

    def get_cinder_integration(self, cluster_id, root="/etc/ceph", **kwargs):
        return self._request("GET", "/v1/cinder_integration/{0}/".format(cluster_id), params={"root": root}, **kwargs)

    # servers
    def get_servers(self, **kwargs):
        return self._list("/v1/server/", **kwargs)

    def get_server(self, server_id, **kwargs):
        return self._request("GET", "/v1/server/{0}/".format(server_id), **kwargs)

    def get_server_versions(self, server_id, **kwargs):
        return self._list("/v1/server/{0}/version/".format(server_id), **kwargs)

    def get_server_version(self, server_id, version, **kwargs):
        return self._request("GET", "/v1/server/{0}/version/{1}/".format(server_id, version), **kwargs)

    def create_server(self, server_id, host, username, **kwargs):
        payload = {"id": server_id, "host": host, "username": username}
        return self._request("POST", "/v1/server/", payload, **kwargs)

    def put_server(self, model_data, **kwargs):
        return self._put("server", model_data, **kwargs)

    def delete_server(self, server_id, **kwargs):
        return self._request("DELETE", "/v1/server/{0}/".format(server_id), **kwargs)

    # playbook configurations
    def get_playbook_configurations(self, **kwargs):
        return self._list("/v1/playbook_configuration/", **kwargs)

    def get_playbook_configuration(self, pc_id, **kwargs):
        return self._request("GET", "/v1/playbook_configuration/{0}/".format(pc_id), **kwargs)

    def get_playbook_configuration_versions(self, pc_id, **kwargs):
        return self._list("/v1/playbook_configuration/{0}/version/".format(pc_id), **kwargs)

    def get_playbook_configuration_version(self, pc_id, version, **kwargs):
        return self._request("GET", "/v1/playbook_configuration/{0}/version/{1}/".format(pc_id, version), **kwargs)

    def create_playbook_configuration(self, name, cluster_id, playbook_id, server_ids, hints=None, **kwargs):
        payload = {
            "name": name,
            "cluster_id": cluster_id,
            "playbook_id": playbook_id,
            "server_ids": list(set(server_ids)),
            "hints": hints or [],
        }
        return self._request("POST", "/v1/playbook_configuration/", payload, **kwargs)

    def update_playbook_configuration(self, model_data, **kwargs):
        return self._put("playbook_configuration", model_data, **kwargs)

    def delete_playbook_configuration(self, pc_id, **kwargs):
        return self._request("DELETE", "/v1/playbook_configuration/{0}/".format(pc_id), **kwargs)

    # executions
    def get_executions(self, **kwargs):
        return self._list("/v1/execution/", **kwargs)

    def get_execution(self, execution_id, **kwargs):
        return self._request("GET", "/v1/execution/{0}/".format(execution_id), **kwargs)

    def get_execution_versions(self, execution_id, **kwargs):
        return self._list("/v1/execution/{0}/version/".format(execution_id), **kwargs)

    def get_execution_version(self, execution_id, version, **kwargs):
        return self._request("GET", "/v1/execution/{0}/version/{1}/".format(execution_id, version), **kwargs)

    def create_execution(self, playbook_configuration_id, playbook_configuration_version, **kwargs):
        payload = {"playbook_configuration": {"id": playbook_configuration_id, "version": playbook_configuration_version}}
        return self._request("POST", "/v1/execution/", payload, **kwargs)

    def cancel_execution(self, execution_id, **kwargs):
        return self._request("DELETE", "/v1/execution/{0}/".format(execution_id), **kwargs)

    def get_execution_steps(self, execution_id, **kwargs):
        return self._list("/v1/execution/{0}/steps/".format(execution_id), **kwargs)

    def get_execution_log(self, execution_id, **kwargs):
        headers = dict(kwargs.pop("headers", None) or {})
        headers.setdefault("Content-Type", JSON)
        return self._request("GET", "/v1/execution/{0}/log/".format(execution_id), headers=headers, **kwargs)


# --------------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------------


class CheckFailed(Exception):
    def __init__(self, message, exchange=None):
        super().__init__(message)
        self.exchange = exchange


class Flow:
    """Runs named steps; audits every response of every client it watches."""

    def __init__(self):
        self.steps = 0
        self.exchanges = 0
        self.current = None
        self.last = None

    def watch(self, client):
        client.on_exchange = self.audit
        return client

    def audit(self, ex):
        """api-v1 §1 and §2, on every response: 200 on success, exact JSON type, no-store, error shape."""
        self.exchanges += 1
        self.last = ex
        path = urllib.parse.urlsplit(ex.url).path
        content_type = ex.header("Content-Type")
        self.check(ex.header("Cache-Control") == CACHE_CONTROL, "Cache-Control is not {0!r}".format(CACHE_CONTROL), ex)
        body = None
        if ex.response_body[:1] in (b"{", b"["):
            try:
                body = json.loads(ex.text)
            except ValueError:
                body = None
        if body is not None:
            self.check(content_type == JSON, "a JSON answer with Content-Type {0!r}, not exactly {1!r}".format(content_type, JSON), ex)
        if ex.status < 400:
            self.check(ex.status == 200, "a success answered {0}, not 200".format(ex.status), ex)
            if path.endswith("/log/") and content_type != JSON:
                self.check((content_type or "").startswith("text/plain"), "a plain log answered as {0!r}".format(content_type), ex)
            else:
                self.check(body is not None, "a success whose body is not JSON", ex)
        else:
            self.check(isinstance(body, dict), "an error whose body is not a JSON object", ex)
            self.check(set(body) >= {"code", "error", "description", "message"}, "error body lacks code/error/description/message", ex)
            self.check(body["code"] == ex.status, "error code {0} differs from the status".format(body["code"]), ex)
            self.check(body["message"] == body["description"], "error message differs from its description", ex)
            if ex.status == 401:
                self.check(ex.header("WWW-Authenticate") == WWW_AUTHENTICATE, "401 without WWW-Authenticate: {0}".format(WWW_AUTHENTICATE), ex)
        if ex.status == 200 and ex.request_header("Authorization") and not path.startswith(("/v1/auth", "/v1/info", "/v1/password_reset")):
            if path != "/v1/server/" or ex.method != "POST":
                self.check((ex.header("X-Token-Expires") or "").isdigit(), "an authenticated answer without X-Token-Expires", ex)

    def check(self, condition, message, exchange=None):
        if not condition:
            raise CheckFailed(message, exchange or self.last)

    def equal(self, actual, expected, what):
        self.check(actual == expected, "{0}: expected {1!r}, got {2!r}".format(what, expected, actual))

    def step(self, name, fn):
        self.current = name
        result = fn()
        self.steps += 1
        print("ok - {0}".format(name), flush=True)
        return result

    def api_error(self, call, code, error, what):
        """Runs `call`, which must raise ServiceApiError(code, error); returns the error."""
        try:
            answer = call()
        except ServiceApiError as err:
            self.check(err.code == code and err.error == error, "{0}: expected {1} {2}, got {3}".format(what, code, error, err), err.exchange)
            self.check(bool(err.description), "{0}: the error has no message".format(what), err.exchange)
            return err
        raise CheckFailed("{0}: expected {1} {2}, got a success: {3!r}".format(what, code, error, answer)[:600])

    def is_model(self, model, kind, version=None, what=None):
        what = what or kind
        self.check(isinstance(model, dict), "{0}: not a JSON object but {1!r}".format(what, type(model).__name__))
        self.check(
            set(model) >= {"id", "model", "version", "time_updated", "time_deleted", "initiator_id", "data"},
            "{0}: not a model envelope: {1}".format(what, sorted(model)),
        )
        self.equal(model["model"], kind, what + " model")
        if version is not None:
            self.equal(model["version"], version, what + " version")
        return model

    def is_list(self, answer, what):
        self.check(isinstance(answer, dict), "{0}: a list answer must be an object, got {1!r}".format(what, type(answer).__name__))
        self.check(set(answer) >= {"items", "page", "per_page", "total"}, "{0}: not a list envelope: {1}".format(what, sorted(answer)))
        self.check(isinstance(answer["items"], list), what + ": items is not a list")
        return answer["items"]


def fetch_mail(mail_url, to, subject):
    """The text of the latest mail to `to` about `subject`, as the test's mail endpoint answers."""
    url = mail_url + "?" + urllib.parse.urlencode({"to": to, "subject": subject})
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode("utf-8")


def wait_until(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise CheckFailed("timed out waiting for " + what)
        time.sleep(0.1)


# --------------------------------------------------------------------------------------------
# The flow
# --------------------------------------------------------------------------------------------


def run(args, f):
    url = args.url
    suffix = uuid.uuid4().hex[:8]
    now = int(time.time())

    def client(login, password):
        return f.watch(DecapodClient(url, login, password, timeout=30))

    anonymous = client("", "")
    root = client("root", args.root_password)

    # --- information, trailing slash, wrong login -------------------------------------------
    def info():
        answer = anonymous.get_info()
        f.check(anonymous.last.request_header("Authorization") is None, "get_info sent an Authorization header")
        f.check(isinstance(answer.get("version"), str), "info has no version string")
        f.check(set(answer.get("time", {})) >= {"local", "utc", "unix"}, "info.time lacks local/utc/unix")
        f.check(abs(answer["time"]["unix"] - time.time()) < 300, "info.time.unix is not now")
        f.check(anonymous.last.url.endswith("/v1/info/"), "the client sends the trailing slash")
        bare = anonymous._request("GET", "/v1/info", auth=no_auth, slash=False)
        f.check(anonymous.last.url.endswith("/v1/info"), "the request went without the slash")
        f.equal(sorted(bare), sorted(answer), "info keys without the slash")

    f.step("get_info without a token (GET /v1/info/), also without the trailing slash", info)

    def wrong_login():
        wrong = client("root", "not-the-password-" + suffix)
        err = f.api_error(wrong.get_clusters, 401, "Unauthorized", "a call with a wrong password")
        f.equal([(e.method, urllib.parse.urlsplit(e.url).path) for e in wrong.exchanges], [("POST", "/v1/auth/")], "requests sent")
        f.equal(err.exchange.header("WWW-Authenticate"), WWW_AUTHENTICATE, "WWW-Authenticate")

    f.step("a wrong password: 401 Unauthorized with WWW-Authenticate, from the lazy login", wrong_login)

    def bad_token():
        forged = client("root", args.root_password)
        forged.auth.token = "not-a-token"
        f.api_error(forged.get_users, 401, "Unauthorized", "a call with a forged token")

    f.step("a forged token: 401 Unauthorized", bad_token)

    # --- root logs in -----------------------------------------------------------------------
    state = {}

    def root_login():
        token = f.is_model(root.login(), "token", 1, "login answer")
        f.equal(root.last.request_header("Content-Type"), JSON, "login request Content-Type")
        f.equal(json.loads(root.last.request_body), {"username": "root", "password": args.root_password}, "login body")
        f.check(isinstance(token["id"], str) and len(token["id"]) > 20, "the token id is not a token")
        f.equal(token["time_deleted"], 0, "token time_deleted")
        user = f.is_model(token["data"]["user"], "user", what="token.data.user")
        f.equal(user["data"]["login"], "root", "token user login")
        f.equal(token["initiator_id"], user["id"], "token initiator_id")
        f.check(token["data"]["expires_at"] > now, "token expires_at is not in the future")
        me = f.is_model(root.get_user_self(), "user", what="get_user_self")
        f.equal(root.last.request_header("Authorization"), token["id"], "Authorization header (the raw token)")
        f.equal(me["id"], user["id"], "get_user_self id")
        role = f.is_model(root.get_role_self(), "role", what="get_role_self")
        f.equal(role["id"], me["data"]["role_id"], "root's role")
        state["root"] = me

    f.step("login as root: a token model; calls send Authorization: <token> (no Bearer)", root_login)

    def lazy_login():
        lazy = client("root", args.root_password)
        lazy.get_users()
        lazy.get_roles()
        paths = [(e.method, urllib.parse.urlsplit(e.url).path) for e in lazy.exchanges]
        f.equal(paths, [("POST", "/v1/auth/"), ("GET", "/v1/user/"), ("GET", "/v1/role/")], "requests sent")
        lazy.logout()

    f.step("first call logs in lazily, once", lazy_login)

    def catalogs():
        perms = root.get_permissions()
        f.check(isinstance(perms, dict) and isinstance(perms.get("items"), list), "get_permissions is not {items: [...]}")
        groups = {g["name"]: g["permissions"] for g in perms["items"]}
        f.check(set(CONTRACT_API_PERMISSIONS) <= set(groups.get("api", [])), "api permissions lack some of the contract's 30")
        # the contract's five, and Carapace's own: cinder_integration (issue 9), the day-2 playbooks (issues 27, 28)
        f.equal(sorted(groups.get("playbook", [])), sorted(PLAYBOOKS + CARAPACE_PLAYBOOKS), "playbook permissions")
        books = {p["id"]: p for p in root.get_playbooks()["items"]}
        f.equal(sorted(books), sorted(PLAYBOOKS + CARAPACE_PLAYBOOKS), "playbook ids")
        f.equal(books["hello_world"]["required_server_list"], False, "hello_world required_server_list")
        f.check(any(h["id"] == "dmcrypt" and h["type"] == "boolean" for h in books["cluster_deploy"]["hints"]), "cluster_deploy lacks the dmcrypt hint")

    f.step("get_permissions and get_playbooks: {items: [...]}", catalogs)

    # --- a role and a user --------------------------------------------------------------------
    role_name = "compat-operators-" + suffix
    first_perms = [
        {"name": "api", "permissions": ["view_cluster", "view_role", "view_user"]},
        {"name": "playbook", "permissions": ["hello_world"]},
    ]

    def create_role():
        role = f.is_model(root.create_role(role_name, first_perms), "role", 1)
        f.equal(role["data"]["name"], role_name, "role name")
        f.equal(role["time_deleted"], 0, "role time_deleted")
        f.equal(role["initiator_id"], state["root"]["id"], "role initiator_id")
        got = {g["name"]: g["permissions"] for g in role["data"]["permissions"]}
        f.equal(got.get("api"), ["view_cluster", "view_role", "view_user"], "role api permissions")
        listed = f.is_list(root.get_roles(filter={"name": role_name}), "get_roles")
        f.equal([r["id"] for r in listed], [role["id"]], "roles listed by name")
        state["role"] = role

    f.step("create_role (POST /v1/role/)", create_role)

    login = "compat-" + suffix
    email = "compat-{0}@example.com".format(suffix)

    def create_user():
        user = f.is_model(root.create_user(login, email, "Compat User", state["role"]["id"]), "user", 1)
        f.equal(user["data"], {"login": login, "email": email, "full_name": "Compat User", "role_id": state["role"]["id"]}, "user data")
        f.equal(user["initiator_id"], state["root"]["id"], "user initiator_id")
        mail = fetch_mail(args.mail_url, email, "account")
        match = re.search(r"Password: (\S+)", mail)
        f.check(match is not None, "no password in the welcome mail:\n" + mail)
        state["user"] = user
        state["password"] = match.group(1)
        f.api_error(lambda: root.create_user(login, "other-" + email), 409, "ImpossibleToCreateSuchModel", "a second user with the same login")
        bare = f.is_model(root.create_user("bare-" + login, "bare-" + email), "user", 1)
        f.equal(json.loads(root.last.request_body)["role_id"], None, "role_id sent by default")
        f.equal((bare["data"]["full_name"], bare["data"]["role_id"]), ("", None), "defaults of a new user")
        state["bare_user"] = bare

    f.step("create_user: the generated password arrives by e-mail; a taken login is 409", create_user)

    def update_user():
        v1 = state["user"]
        model = json.loads(json.dumps(v1))
        model["data"]["full_name"] = "Compat User, renamed"
        v2 = f.is_model(root.update_user(model), "user", 2)
        f.equal(root.last.method + " " + urllib.parse.urlsplit(root.last.url).path, "PUT /v1/user/{0}/".format(v1["id"]), "update request")
        f.equal(json.loads(root.last.request_body), model, "the PUT body is the whole model")
        f.equal(v2["id"], v1["id"], "updated user id")
        f.equal(v2["data"]["full_name"], "Compat User, renamed", "updated full_name")
        f.equal(v2["data"]["login"], login, "updated login")
        stale = json.loads(json.dumps(v1))
        stale["data"]["email"] = "stale-" + email
        f.api_error(lambda: root.update_user(stale), 409, "CannotUpdateManagedFieldsError", "a PUT of the stale version 1")
        f.equal(root.get_user(v1["id"])["version"], 2, "version after the refused PUT")
        versions = f.is_list(root.get_user_versions(v1["id"]), "get_user_versions")
        f.equal([v["version"] for v in versions], [2, 1], "user versions, newest first")
        f.equal(root.get_user_version(v1["id"], 1)["data"]["full_name"], "Compat User", "full_name of version 1")
        found = f.is_list(root.get_users(filter={"login": login}), "get_users filtered")
        f.equal([(u["id"], u["version"]) for u in found], [(v1["id"], 2)], "users listed by login")
        state["user"] = v2

    f.step("update_user (PUT of the whole model): version 2; a stale PUT is 409; versions listed", update_user)

    def user_session():
        user = client(login, state["password"])
        me = user.get_user_self()
        f.equal((me["id"], me["version"]), (state["user"]["id"], 2), "the user's own model")
        f.is_list(user.get_clusters(), "get_clusters as the user")
        f.api_error(lambda: user.create_cluster("forbidden-" + suffix), 403, "Forbidden", "create_cluster without create_cluster")
        f.api_error(user.get_servers, 403, "Forbidden", "get_servers without view_server")
        state["user_client"] = user

    f.step("login as the user with the e-mailed password; 403 Forbidden without the permission", user_session)

    def update_role():
        v1 = state["role"]
        model = json.loads(json.dumps(v1))
        model["data"]["permissions"] = [
            {"name": "api", "permissions": ["view_cluster", "view_role", "view_server", "view_user"]},
            {"name": "playbook", "permissions": ["hello_world"]},
        ]
        v2 = f.is_model(root.update_role(model), "role", 2)
        got = {g["name"]: g["permissions"] for g in v2["data"]["permissions"]}
        f.equal(got.get("api"), ["view_cluster", "view_role", "view_server", "view_user"], "updated role api permissions")
        versions = f.is_list(root.get_role_versions(v1["id"]), "get_role_versions")
        f.equal([v["version"] for v in versions], [2, 1], "role versions, newest first")
        old = {g["name"]: g["permissions"] for g in root.get_role_version(v1["id"], 1)["data"]["permissions"]}
        f.check("view_server" not in old.get("api", []), "version 1 of the role changed")
        f.api_error(lambda: root.update_role(v1), 409, "CannotUpdateManagedFieldsError", "a PUT of the stale role")
        f.is_list(state["user_client"].get_servers(), "get_servers as the user, right after the role change")
        state["role"] = v2

    f.step("update_role: version 2, and the user's very next call has the new permission", update_role)

    # --- password reset -----------------------------------------------------------------------
    new_password = "new-password-" + suffix

    def password_reset():
        requested = {"message": "Password reset was requested."}
        f.equal(anonymous.request_password_reset(login), requested, "request_password_reset")
        f.check(anonymous.last.request_header("Authorization") is None, "request_password_reset sent an Authorization header")
        f.equal(anonymous.request_password_reset("nobody-" + suffix), requested, "request_password_reset of an unknown login")
        mail = fetch_mail(args.mail_url, email, "password reset")
        match = re.search(r"reset token: (\S+)", mail)
        f.check(match is not None, "no reset token in the mail:\n" + mail)
        token = match.group(1)
        f.check(token in mail.split("reset token:")[0], "the mail's link does not carry the token")
        f.equal(anonymous.peek_password_reset(token), requested, "peek_password_reset")
        f.equal(anonymous.reset_password(token, new_password), {"message": "Password has been reset."}, "reset_password")
        f.api_error(lambda: anonymous.peek_password_reset(token), 404, "NotFound", "peek of a used reset token")
        f.api_error(lambda: anonymous.reset_password(token, new_password + "x"), 404, "NotFound", "a second reset with the same token")

    f.step("request_password_reset, peek_password_reset, reset_password with the e-mailed token", password_reset)

    def after_reset():
        f.api_error(state["user_client"].get_user_self, 401, "Unauthorized", "the user's token from before the reset")
        f.api_error(client(login, state["password"]).get_user_self, 401, "Unauthorized", "login with the old password")
        user = client(login, new_password)
        f.equal(user.get_user_self()["id"], state["user"]["id"], "the user, logged in with the new password")
        user.logout()

    f.step("after the reset: old token and old password refused, new password works", after_reset)

    # --- cluster and servers --------------------------------------------------------------------
    cluster_name = "compat-cluster-" + suffix

    def cluster():
        created = f.is_model(root.create_cluster(cluster_name), "cluster", 1)
        f.equal(created["data"]["name"], cluster_name, "cluster name")
        f.equal(created["data"]["configuration"], {}, "configuration of a new cluster")
        model = json.loads(json.dumps(created))
        model["data"]["name"] = cluster_name + "-renamed"
        updated = f.is_model(root.update_cluster(model), "cluster", 2)
        f.equal(updated["data"]["name"], cluster_name + "-renamed", "renamed cluster")
        f.equal(f.is_list(root.get_cluster_versions(created["id"]), "get_cluster_versions")[0]["version"], 2, "latest cluster version")
        f.api_error(lambda: root.create_cluster(cluster_name + "-renamed"), 409, "ImpossibleToCreateSuchModel", "a taken cluster name")
        state["cluster"] = updated

    f.step("create_cluster and update_cluster", cluster)

    ids = [str(uuid.uuid4()), str(uuid.uuid4())]
    hosts = ["10.0.7.11", "10.0.7.12"]

    def register():
        discovery = client("", "")
        auth = StaticAuth(args.discovery_token)
        for server_id, host in zip(ids, hosts):
            server = f.is_model(discovery.create_server(server_id, host, "ansible", auth=auth), "server", 1)
            f.equal(discovery.last.request_header("Authorization"), args.discovery_token, "registration Authorization header")
            f.equal((server["id"], server["data"]["ip"], server["data"]["username"]), (server_id, host, "ansible"), "registered server")
            f.equal(server["initiator_id"], None, "initiator of a self-registered server")
        again = f.is_model(discovery.create_server(ids[0], hosts[0], "ansible", auth=auth), "server")
        f.equal(again["id"], ids[0], "re-registration id")
        # a new version only if it changes something (a write that changes nothing stores no
        # version: README, API decisions); here the facts may still be gathered, or not
        f.equal((again["data"]["ip"], again["data"]["username"]), (hosts[0], "ansible"), "re-registered server")
        f.api_error(
            lambda: discovery.create_server(str(uuid.uuid4()), "10.0.7.13", "ansible", auth=StaticAuth("wrong-" + suffix)),
            401,
            "Unauthorized",
            "registration with a wrong discovery token",
        )

    f.step("create_server by discovery token (POST /v1/server/): two servers, one registered twice", register)

    def servers_ready():
        def ready():
            servers = [root.get_server(i) for i in ids]
            return servers if all(s["data"]["state"] == "operational" for s in servers) else None

        wait_until(ready, 20, "the servers' facts (state operational)")
        listed = f.is_list(root.get_servers(filter={"id": {"in": ids}}), "get_servers")
        f.equal(sorted(s["id"] for s in listed), sorted(ids), "servers listed")
        everything = root.get_servers(all_items=True)
        f.is_list(everything, "get_servers(all_items=True)")
        f.equal((everything["page"], everything["per_page"]), (1, everything["total"]), "page and per_page of all_items")
        second = root.get_servers(filter={"id": {"in": ids}}, page=2, per_page=1, sort_by={"id": -1})
        f.equal(root.last.url.split("?", 1)[1].count("&"), 3, "query parameters sent")
        f.equal((second["page"], second["per_page"], second["total"]), (2, 1, 2), "page 2 of 1")
        f.equal([s["id"] for s in second["items"]], [min(ids)], "page 2 sorted by id descending")

    f.step("get_servers: both registered, facts gathered, operational", servers_ready)

    def rename_server():
        model = root.get_server(ids[0])
        version = model["version"]
        model["data"]["name"] = "compat-renamed-" + suffix
        renamed = f.is_model(root.put_server(model), "server", version + 1)
        f.equal(renamed["data"]["name"], "compat-renamed-" + suffix, "renamed server")
        f.equal(renamed["data"]["ip"], hosts[0], "ip kept by the rename")
        versions = f.is_list(root.get_server_versions(ids[0]), "get_server_versions")
        f.equal(versions[0]["version"], version + 1, "latest server version")
        f.equal(root.get_server_version(ids[0], 1)["data"]["name"], hosts[0], "name of server version 1")

    f.step("put_server renames a server (PUT of the whole model)", rename_server)

    # --- playbook configuration ---------------------------------------------------------------
    def playbook_configuration():
        cluster_id = state["cluster"]["id"]
        f.api_error(
            lambda: root.create_playbook_configuration("bad-" + suffix, cluster_id, "no_such_playbook", ids),
            400,
            "UnknownPlaybookError",
            "an unknown playbook",
        )
        pc = f.is_model(root.create_playbook_configuration("compat-hello-" + suffix, cluster_id, "hello_world", ids), "playbook_configuration", 1)
        sent = json.loads(root.last.request_body)
        f.equal(sorted(sent), ["cluster_id", "hints", "name", "playbook_id", "server_ids"], "create body keys")
        data = pc["data"]
        f.equal((data["name"], data["playbook_id"], data["cluster_id"]), ("compat-hello-" + suffix, "hello_world", cluster_id), "configuration data")
        f.equal(sorted(data["server_ids"]), sorted(ids), "configuration servers")
        configuration = data["configuration"]
        f.check(set(configuration) >= {"global_vars", "inventory"}, "configuration lacks global_vars/inventory")
        inventory_hosts = set(configuration["inventory"].get("_meta", {}).get("hostvars", {}))
        f.check(set(hosts) <= inventory_hosts, "inventory hostvars lack the servers' addresses: {0}".format(sorted(inventory_hosts)))
        state["pc"] = pc

    f.step("create_playbook_configuration (hello_world, two servers); unknown playbook is 400", playbook_configuration)

    def edit_playbook_configuration():
        v1 = state["pc"]
        model = json.loads(json.dumps(v1))
        model["data"]["name"] = v1["data"]["name"] + "-edited"
        model["data"]["configuration"]["global_vars"]["compat_marker"] = suffix
        v2 = f.is_model(root.update_playbook_configuration(model), "playbook_configuration", 2)
        f.equal(v2["data"]["name"], v1["data"]["name"] + "-edited", "edited name")
        f.equal(v2["data"]["configuration"]["global_vars"].get("compat_marker"), suffix, "edited global var")
        versions = f.is_list(root.get_playbook_configuration_versions(v1["id"]), "get_playbook_configuration_versions")
        f.equal([v["version"] for v in versions], [2, 1], "configuration versions, newest first")
        old = root.get_playbook_configuration_version(v1["id"], 1)
        f.check("compat_marker" not in old["data"]["configuration"]["global_vars"], "version 1 changed")
        listed = f.is_list(root.get_playbook_configurations(filter={"id": v1["id"]}), "get_playbook_configurations")
        f.equal([(p["id"], p["version"]) for p in listed], [(v1["id"], 2)], "configurations listed")
        state["pc"] = v2

    f.step("update_playbook_configuration: version 2; versions listed", edit_playbook_configuration)

    # --- execution ----------------------------------------------------------------------------
    def execution():
        pc = state["pc"]
        created = f.is_model(root.create_execution(pc["id"], pc["version"]), "execution", 1)
        f.equal(json.loads(root.last.request_body), {"playbook_configuration": {"id": pc["id"], "version": 2}}, "create_execution body")
        f.equal(created["data"]["state"], "created", "state of a new execution")
        ref = created["data"]["playbook_configuration"]
        f.equal((ref["id"], ref["version"], ref["playbook_name"]), (pc["id"], 2, "hello_world"), "execution.playbook_configuration")
        f.equal(root.get_execution(created["id"])["data"]["state"], "created", "state with no runner (queued)")
        listed = f.is_list(root.get_executions(filter={"id": created["id"]}), "get_executions")
        f.equal([e["id"] for e in listed], [created["id"]], "executions listed")
        canceled = f.is_model(root.cancel_execution(created["id"]), "execution")
        f.equal(root.last.method + " " + urllib.parse.urlsplit(root.last.url).path, "DELETE /v1/execution/{0}/".format(created["id"]), "cancel request")
        f.equal(canceled["data"]["state"], "canceled", "state after cancel of a queued execution")
        f.equal(root.get_execution(created["id"])["data"]["state"], "canceled", "state read back")
        versions = f.is_list(root.get_execution_versions(created["id"]), "get_execution_versions")
        f.equal(versions[0]["data"]["state"], "canceled", "latest execution version")
        f.equal(root.get_execution_version(created["id"], 1)["data"]["state"], "created", "execution version 1")
        state["execution"] = canceled

    f.step("create_execution stays queued (no runner); cancel_execution (DELETE /v1/execution/{id}/) cancels it", execution)

    def steps_and_log():
        execution_id = state["execution"]["id"]
        steps = f.is_list(root.get_execution_steps(execution_id), "get_execution_steps")
        f.check(all(s.get("model") == "execution_step" for s in steps), "a step is not an execution_step model")
        log = root.get_execution_log(execution_id)
        f.equal(root.last.request_header("Content-Type"), JSON, "log request Content-Type")
        f.check(isinstance(log, dict) and isinstance(log.get("data"), str), "the JSON log is not {{\"data\": text}}: {0!r}".format(log))
        text = root._request("GET", "/v1/execution/{0}/log/".format(execution_id))
        f.check(isinstance(text, str), "the plain log did not come back as text")
        download = root._request("GET", "/v1/execution/{0}/log/".format(execution_id), params={"download": "yes"}, raw_response=True)
        f.equal(download.header("Content-Disposition"), "attachment; filename={0}.log".format(execution_id), "log download header")

    f.step("get_execution_steps and get_execution_log ({\"data\": ...} and plain text)", steps_and_log)

    # --- error shapes -------------------------------------------------------------------------
    def errors():
        f.api_error(lambda: root.get_user(str(uuid.uuid4())), 404, "NotFound", "an unknown user id")
        f.api_error(lambda: root.get_cluster_version(state["cluster"]["id"], 99), 404, "NotFound", "an unknown version")
        f.api_error(lambda: root._request("GET", "/v1/no_such_thing/"), 404, "NotFound", "an unknown route")
        f.api_error(lambda: root._request("PATCH", "/v1/info/", {}), 405, "MethodNotAllowed", "a method the route lacks")
        # decapodlib 1.x's cancel_execution sends DELETE /v1/execution/ without the id: refused, not a silent success.
        f.api_error(lambda: root._request("DELETE", "/v1/execution/"), 405, "MethodNotAllowed", "DELETE /v1/execution/ without an id")
        f.api_error(lambda: root.create_cluster(""), 400, "InvalidJSONError", "a cluster without a name")
        f.api_error(lambda: root.get_users(filter={"password": "x"}), 400, "BadRequest", "a filter on an unknown field")
        f.api_error(lambda: root.cancel_execution(str(uuid.uuid4())), 404, "NotFound", "cancel of an unknown execution")

    f.step("error shapes: 404 NotFound, 405, 400; {code, error, description, message}", errors)

    # --- deletes ------------------------------------------------------------------------------
    def deletes():
        role_id, user_id = state["role"]["id"], state["user"]["id"]
        f.api_error(lambda: root.delete_role(role_id), 409, "CannotDeleteRoleWithActiveUsers", "delete of a role in use")
        user = client(login, new_password)
        user.get_user_self()
        deleted = f.is_model(root.delete_user(user_id), "user", 3)
        f.is_model(root.delete_user(state["bare_user"]["id"]), "user", 2)
        f.check(deleted["time_deleted"] > 0, "a deleted user has time_deleted 0")
        f.api_error(user.get_user_self, 401, "Unauthorized", "a token of a deleted user")
        role = f.is_model(root.delete_role(role_id), "role", 3)
        f.check(role["time_deleted"] > 0, "a deleted role has time_deleted 0")
        f.api_error(lambda: root.update_role(role), 409, "CannotUpdateDeletedModel", "a PUT of a deleted role")
        f.equal(root.get_role(role_id)["time_deleted"], role["time_deleted"], "get_role of a deleted role")
        f.equal(f.is_list(root.get_roles(filter={"name": role_name}), "get_roles")[0:1], [], "deleted role in the default list")
        archived = f.is_list(root.get_roles(filter={"name": role_name, "time_deleted": {"ne": 0}}), "archived roles")
        f.equal([r["id"] for r in archived], [role_id], "archived roles")
        f.is_model(root.delete_playbook_configuration(state["pc"]["id"]), "playbook_configuration", 3)
        for server_id in ids:
            f.check(root.delete_server(server_id)["time_deleted"] > 0, "a deleted server has time_deleted 0")
        f.check(root.delete_cluster(state["cluster"]["id"])["time_deleted"] > 0, "a deleted cluster has time_deleted 0")

    f.step("deletes: role in use is 409; deleted user's token refused; deleted role cannot be PUT; archived list", deletes)

    # --- logout -------------------------------------------------------------------------------
    def logout():
        token = root.auth.token
        f.check(token is not None, "root has no token")
        f.equal(root.logout(), {}, "logout answer")
        f.equal((root.last.method, urllib.parse.urlsplit(root.last.url).path), ("DELETE", "/v1/auth/"), "logout request")
        f.check(root.auth.token is None, "the client kept its token")
        stale = client("root", args.root_password)
        stale.auth.token = token
        f.api_error(stale.get_user_self, 401, "Unauthorized", "the logged-out token")
        f.equal(len(stale.exchanges), 1, "requests sent with the logged-out token")
        f.equal(root.get_user_self()["data"]["login"], "root", "the next call logs in again")
        f.equal((root.exchanges[-2].method, urllib.parse.urlsplit(root.exchanges[-2].url).path), ("POST", "/v1/auth/"), "re-login")
        root.logout()

    f.step("logout: {} and the token is refused (401) afterwards; the client logs in again", logout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=os.environ.get("CARAPACE_URL"))
    parser.add_argument("--root-password", default=os.environ.get("CARAPACE_ROOT_PASSWORD"))
    parser.add_argument("--discovery-token", default=os.environ.get("CARAPACE_DISCOVERY_TOKEN"))
    parser.add_argument("--mail-url", default=os.environ.get("CARAPACE_MAIL_URL"))
    args = parser.parse_args()
    missing = [name for name in ("url", "root_password", "discovery_token", "mail_url") if not getattr(args, name)]
    if missing:
        parser.error("missing: " + ", ".join("--" + m.replace("_", "-") for m in missing))

    flow = Flow()
    try:
        run(args, flow)
    except Exception as err:  # noqa: BLE001 - any failure is reported with the exchange at fault
        exchange = getattr(err, "exchange", None) or flow.last
        reason = str(err) if isinstance(err, CheckFailed) else "{0}: {1}".format(type(err).__name__, err)
        print("FAIL - {0}: {1}".format(flow.current, reason), flush=True)
        if not isinstance(err, (CheckFailed, ServiceError)):
            traceback.print_exc(file=sys.stdout)
        if exchange is not None:
            print(exchange.describe(), flush=True)
        return 1
    print("ALL CHECKS PASSED: {0} steps, {1} responses audited".format(flow.steps, flow.exchanges), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
