# -*- coding: utf-8 -*-
# Carapace runner: Ansible callback plugin that streams machine-readable events.
#
# Written for the Carapace project. Licensed under the Apache License 2.0.
"""Write one JSON object per line (JSONL) describing the run.

The runner agent reads these lines live and turns them into execution steps.
The plugin only observes: it runs alongside the stdout callback (which keeps
writing the human-readable log) and never makes the run fail.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = '''
    name: carapace
    type: notification
    short_description: stream Carapace execution events as JSON lines
    description:
      - Writes one JSON object per line for every play start, every task result
        per host (a "step") and the final statistics.
      - The destination is the file descriptor named by C(CARAPACE_EVENTS_FD) if
        set, otherwise the file named by C(CARAPACE_EVENTS_FILE) (opened for
        appending). Each line is flushed as soon as it is written.
      - Output of tasks with C(no_log) is never written.
      - In check mode (C(--check)), every step also carries a C(preview) verdict,
        one of C(would_change) (with the diff, bounded, never for a C(no_log) task),
        C(unchanged), C(would_fail) (with the reason) or C(unknown) (the module does
        not support check mode, or said so with C(check_mode_unknown)).
    requirements:
      - enable in configuration, e.g. C(ANSIBLE_CALLBACKS_ENABLED=carapace) and
        C(ANSIBLE_CALLBACK_PLUGINS=<directory of this file>)
'''

import difflib
import json
import math
import os
import re
import threading
import time

from ansible.plugins.callback import CallbackBase

try:
    from ansible.inventory.helpers import get_group_vars
except Exception:  # pragma: no cover
    get_group_vars = None

try:
    from ansible import context as _ansible_context
except Exception:  # pragma: no cover
    _ansible_context = None


EVENTS_FD_ENV = 'CARAPACE_EVENTS_FD'
EVENTS_FILE_ENV = 'CARAPACE_EVENTS_FILE'

CENSORED = "the output has been hidden due to the fact that 'no_log: true' was specified for this result"

# Limits applied to the "error" object of a step. The first set is tried first;
# when the encoded error is still larger than MAX_ERROR_BYTES, the next one.
_LIMIT_SETS = (
    # (max string chars, max list items, max dict keys, max depth)
    (8192, 50, 100, 6),
    (1024, 10, 30, 4),
    (256, 3, 10, 2),
)
MAX_ERROR_BYTES = 64 * 1024

# Keys of a module result that are noise or duplicates in an error report.
_DROPPED_KEYS = frozenset((
    'invocation',
    'stdout_lines',
    'stderr_lines',
    'ansible_facts',
    'diff',
))

# The fields kept when even the smallest limits are too large.
_ESSENTIAL_KEYS = ('msg', 'rc', 'stderr', 'stdout', 'reason', 'unreachable', 'failed')


# Preview (check mode): the most characters of one step's diff, and of a reason.
MAX_DIFF_CHARS = 16 * 1024
MAX_WHY_CHARS = 4096
# A module that cannot tell in check mode says so under this key (a reason), with changed: false.
CHECK_MODE_UNKNOWN_KEY = 'check_mode_unknown'
# What Ansible says when it skips a task in check mode without running it: the module does
# not support check mode ("remote module (x) does not support check mode", "check mode not
# supported for this module"), or a command that would have run.
_CHECK_MODE_SKIP = re.compile(r'check[ _]mode', re.IGNORECASE)


def _in_check_mode():
    try:
        return bool(_ansible_context.CLIARGS.get('check', False))
    except Exception:
        return False


def _diff_text(diff):
    """A unified diff (or the module's own text) of a result's diff, at most MAX_DIFF_CHARS."""
    items = diff if isinstance(diff, list) else [diff]
    parts = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get('prepared'):
            parts.append(_to_text(item.get('prepared')))
            continue
        before = item.get('before')
        after = item.get('after')
        if before is None and after is None:
            continue
        if not isinstance(before, (str, bytes)):
            before = json.dumps(before, indent=2, sort_keys=True, default=str) + '\n' if before is not None else ''
        if not isinstance(after, (str, bytes)):
            after = json.dumps(after, indent=2, sort_keys=True, default=str) + '\n' if after is not None else ''
        before = _to_text(before)
        after = _to_text(after)
        if before == after:
            continue
        lines = difflib.unified_diff(
            before.splitlines(True), after.splitlines(True),
            fromfile=_to_text(item.get('before_header') or 'before'),
            tofile=_to_text(item.get('after_header') or 'after'))
        text = ''
        for line in lines:
            text += line if line.endswith('\n') else line + '\n'
            if len(text) > MAX_DIFF_CHARS:
                break
        parts.append(text)
    text = ''.join(parts)
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS] + '\n...[diff cut at %d characters]\n' % MAX_DIFF_CHARS
    return text


def preview_verdict(status, raw, no_log):
    """The preview of one task on one host: {status, diff?, why?}."""
    def why(text):
        return _truncate_text(_to_text(text), MAX_WHY_CHARS)
    if status == 'unreachable':
        return {'status': 'would_fail', 'why': why('unreachable: %s' % ('hidden (no_log)' if no_log else raw.get('msg', '')))}
    if status == 'error':
        return {'status': 'would_fail', 'why': why('hidden (no_log)' if no_log else (raw.get('msg') or raw.get('stderr') or 'failed'))}
    unknown = raw.get(CHECK_MODE_UNKNOWN_KEY)
    if unknown:
        return {'status': 'unknown', 'why': why(unknown if isinstance(unknown, (str, bytes)) else 'the module cannot know in check mode')}
    if status == 'skipped':
        reason = _to_text(raw.get('msg') or raw.get('skip_reason') or '')
        if _CHECK_MODE_SKIP.search(reason):
            return {'status': 'unknown', 'why': why(reason)}
        return {'status': 'unchanged', 'why': why('skipped: %s' % (reason or 'condition not met'))}
    if raw.get('changed'):
        verdict = {'status': 'would_change'}
        # The project's modules say in sentences what they would do (`would_change`: the
        # devices add_osd would prepare, the units it would start): the why of the verdict.
        sentences = raw.get('would_change')
        if not no_log and isinstance(sentences, list) and sentences:
            verdict['why'] = why('; '.join(_to_text(x) for x in sentences))
        if not no_log and raw.get('diff') is not None:
            try:
                text = _diff_text(raw.get('diff'))
            except Exception:
                text = ''
            if text:
                verdict['diff'] = text
        return verdict
    return {'status': 'unchanged'}


def _truncate_text(text, limit):
    if len(text) <= limit:
        return text
    # Keep the beginning and (mostly) the end: errors tend to be at the end.
    head = limit // 4
    tail = limit - head
    omitted = len(text) - head - tail
    return '%s\n...[%d characters truncated]...\n%s' % (text[:head], omitted, text[-tail:])


def _to_text(value):
    if isinstance(value, bytes):
        return value.decode('utf-8', errors='replace')
    return str(value)


def _sanitize(value, limits, depth=0):
    """Return a JSON-serializable, size-limited copy of value."""
    max_chars, max_items, max_keys, max_depth = limits
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return float(value)
    if isinstance(value, (str, bytes)):
        # str() also turns AnsibleUnsafeText and friends into plain str
        return _truncate_text(str(_to_text(value)), max_chars)
    if depth >= max_depth:
        return _truncate_text(_to_text(repr(value)), min(max_chars, 256))
    if isinstance(value, dict):
        if value.get('_ansible_no_log'):
            return {'censored': CENSORED}
        out = {}
        count = 0
        for key, item in value.items():
            key = _to_text(key)
            if key.startswith('_ansible') or key in _DROPPED_KEYS:
                continue
            if count >= max_keys:
                out['_truncated_keys'] = len(value) - count
                break
            out[key] = _sanitize(item, limits, depth + 1)
            count += 1
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        out = [_sanitize(item, limits, depth + 1) for item in items[:max_items]]
        if len(items) > max_items:
            out.append('...[%d more items truncated]' % (len(items) - max_items))
        return out
    return _truncate_text(_to_text(value), max_chars)


def _encode(obj):
    return json.dumps(obj, ensure_ascii=True, allow_nan=False, sort_keys=False, separators=(',', ':'))


def sanitize_error(result):
    """The error object of a step: the result without noise, within MAX_ERROR_BYTES."""
    if not isinstance(result, dict):
        result = {'msg': result}
    if result.get('_ansible_no_log'):
        return {'censored': CENSORED}
    for limits in _LIMIT_SETS:
        cleaned = _sanitize(result, limits)
        if len(_encode(cleaned)) <= MAX_ERROR_BYTES:
            return cleaned
    smallest = _LIMIT_SETS[-1]
    cleaned = dict((k, _sanitize(result[k], smallest)) for k in _ESSENTIAL_KEYS if k in result)
    cleaned['_truncated'] = True
    return cleaned


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'notification'
    CALLBACK_NAME = 'carapace'
    CALLBACK_NEEDS_ENABLED = True
    # older spelling, harmless on recent ansible-core
    CALLBACK_NEEDS_WHITELIST = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._stream = None
        self._broken = False
        # (host name, task uuid) -> unix time the task was queued for that host
        self._host_starts = {}
        # task uuid -> unix time the task started (fallback)
        self._task_starts = {}
        # task uuid -> task name as templated by the strategy at task start
        self._task_names = {}
        self._addresses = {}
        self._check_mode = _in_check_mode()
        self._open_stream()

    # ------------------------------------------------------------------ output

    def _open_stream(self):
        fd = os.environ.get(EVENTS_FD_ENV, '').strip()
        path = os.environ.get(EVENTS_FILE_ENV, '').strip()
        try:
            if fd:
                self._stream = os.fdopen(int(fd), 'w', buffering=1, encoding='utf-8', closefd=False)
            elif path:
                self._stream = open(path, 'a', buffering=1, encoding='utf-8')
            else:
                self._broken = True
                self._warn('neither %s nor %s is set; no events will be written' % (EVENTS_FD_ENV, EVENTS_FILE_ENV))
        except Exception as e:
            self._broken = True
            self._warn('cannot open the events destination (%s=%r, %s=%r): %s' % (
                EVENTS_FD_ENV, fd, EVENTS_FILE_ENV, path, e))

    def _warn(self, message):
        try:
            self._display.warning('carapace callback: %s' % message)
        except Exception:
            pass

    def _emit(self, event):
        if self._broken or self._stream is None:
            return
        try:
            line = _encode(event)
        except Exception as e:
            self._warn('cannot encode a %s event: %s' % (event.get('type'), e))
            return
        with self._lock:
            try:
                self._stream.write(line + '\n')
                self._stream.flush()
            except Exception as e:
                # e.g. the reader closed the pipe: stop writing, keep the run going
                self._broken = True
                self._warn('cannot write events any more: %s' % e)

    # ----------------------------------------------------------------- helpers

    def _address(self, host):
        name = host.get_name()
        if name in self._addresses:
            return self._addresses[name]
        address = None
        try:
            address = host.vars.get('ansible_host')
            if address is None and get_group_vars is not None:
                address = get_group_vars(host.get_groups()).get('ansible_host')
            if address is not None:
                address = _to_text(address)
                if '{{' in address or '{%' in address:
                    address = None  # a template we cannot render here
        except Exception:
            address = None
        address = address or name
        self._addresses[name] = address
        return address

    @staticmethod
    def _role_name(task):
        role = getattr(task, '_role', None)
        if role is None:
            return ''
        try:
            return _to_text(role.get_name())
        except Exception:
            return _to_text(getattr(role, '_role_name', '') or '')

    @staticmethod
    def _task_name(task):
        name = getattr(task, 'name', None)
        if name:
            return _to_text(name).strip()
        return _to_text(getattr(task, 'action', '') or '')

    def _safe(self, what, func, *args):
        try:
            func(*args)
        except Exception as e:
            self._warn('error while handling %s: %s' % (what, e))

    # ------------------------------------------------------------------- steps

    def _step(self, result, status, ignored=False):
        task = result._task
        if getattr(task, 'implicit', False):
            return
        host = result._host
        host_name = host.get_name()
        finished = time.time()
        uuid = getattr(task, '_uuid', None)
        started = self._host_starts.pop((host_name, uuid), None)
        if started is None:
            started = self._task_starts.get(uuid, finished)

        raw = result._result if isinstance(result._result, dict) else {'msg': result._result}
        no_log = bool(raw.get('_ansible_no_log')) or getattr(task, 'no_log', False) is True
        if status in ('error', 'unreachable'):
            error = {'censored': CENSORED} if no_log else sanitize_error(raw)
        else:
            error = {}

        base = {
            'type': 'step',
            'host': host_name,
            'address': self._address(host),
            'role': self._role_name(task),
        }
        # A module that acts on several daemons in one task reports a step for each
        # (carapace_steps: [{name, result, changed, time_started, time_finished, error}]);
        # they replace the task's own step, which still follows when the task failed.
        substeps = [] if raw.get('_ansible_no_log') else raw.get('carapace_steps')
        if isinstance(substeps, list) and substeps:
            for item in substeps:
                if isinstance(item, dict):
                    sub = self._substep(base, item, started, finished)
                    if self._check_mode:
                        sub['preview'] = preview_verdict(sub['result'], dict(item, msg=(item.get('error') or {}).get('msg', 'failed') if isinstance(item.get('error'), dict) else 'failed'), no_log)
                    self._emit(sub)
            if status not in ('error', 'unreachable'):
                return
        step = dict(base)
        step.update({
            'name': self._task_names.get(uuid) or self._task_name(task),
            'result': status,
            'changed': bool(raw.get('changed', False)),
            'ignored': bool(ignored),
            'error': error,
            'time_started': started,
            'time_finished': finished,
        })
        if self._check_mode:
            step['preview'] = preview_verdict(status, raw, no_log)
        self._emit(step)

    @staticmethod
    def _substep(base, item, started, finished):
        def when(key, default):
            value = item.get(key)
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else default
        result = item.get('result') if item.get('result') in ('ok', 'error', 'skipped') else 'ok'
        step = dict(base)
        step.update({
            'name': _truncate_text(_to_text(item.get('name') or 'step'), 1024),
            'result': result,
            'changed': bool(item.get('changed', False)),
            'ignored': False,
            'error': sanitize_error(item.get('error') or {'msg': 'failed'}) if result == 'error' else {},
            'time_started': when('time_started', started),
            'time_finished': when('time_finished', finished),
        })
        return step

    # --------------------------------------------------------------- callbacks

    def v2_playbook_on_play_start(self, play):
        def handle():
            self._emit({'type': 'play_start', 'name': _to_text(play.get_name()).strip()})
        self._safe('play start', handle)

    def _task_start(self, task):
        # The strategy templates the task name only while sending this callback
        # (e.g. "Install {{ pkg }}"), so this is the moment to remember it.
        self._task_starts[task._uuid] = time.time()
        self._task_names[task._uuid] = self._task_name(task)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._safe('task start', self._task_start, task)

    def v2_playbook_on_handler_task_start(self, task):
        self._safe('handler start', self._task_start, task)

    def v2_playbook_on_cleanup_task_start(self, task):
        self._safe('cleanup task start', self._task_start, task)

    def v2_runner_on_start(self, host, task):
        def handle():
            self._host_starts[(host.get_name(), task._uuid)] = time.time()
        self._safe('runner start', handle)

    def v2_runner_on_ok(self, result):
        self._safe('ok result', self._step, result, 'ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._safe('failed result', self._step, result, 'error', bool(ignore_errors))

    def v2_runner_on_skipped(self, result):
        self._safe('skipped result', self._step, result, 'skipped')

    def v2_runner_on_unreachable(self, result):
        def handle():
            ignored = getattr(result._task, 'ignore_unreachable', False) is True
            self._step(result, 'unreachable', ignored)
        self._safe('unreachable result', handle)

    def v2_playbook_on_stats(self, stats):
        def handle():
            hosts = {}
            for host_name in sorted(stats.processed.keys()):
                summary = stats.summarize(host_name)
                hosts[_to_text(host_name)] = dict(
                    (key, int(summary.get(key, 0) or 0))
                    for key in ('ok', 'changed', 'failures', 'unreachable', 'skipped', 'rescued', 'ignored'))
            self._emit({'type': 'stats', 'hosts': hosts})
        self._safe('stats', handle)
