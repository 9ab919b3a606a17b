import { MAX_DATA_DEPTH, nestsDeeper, PREVIEW_DIFF_MAX_CHARS, PREVIEW_STATUSES, ServerFactsSchema, type StepPreview } from '@carapace/models';
import {
  ARTIFACT_LIMITS,
  PROTOCOL_VERSION,
  type ControlMessage,
  type FactsResult,
  type StatusResult,
  STATUS_LIMITS,
  type Hello,
  type LogChunk,
  type RunArtifact,
  type RunResult,
  type StepEvent,
} from '@carapace/protocol';
import { Value } from 'typebox/value';
import type { Assignment, Outcome, StepReport } from '../executions/execution.types.js';
import type { FactsAnswer, FactsRequest } from '../infrastructure/facts.scheduler.js';
import type { StatusAnswer, StatusRequest } from '../infrastructure/status.scheduler.js';
import type { RunnerHello } from '../executions/runner.service.js';

// The protocol's messages turned into the services' values and back: every check of what a
// runner sends, and every bound on it, is here.

const OUTCOMES: readonly Outcome[] = ['completed', 'failed', 'canceled'];
const STEP_RESULTS = new Set(['ok', 'error', 'skipped', 'unreachable']);
const MAX_TEXT = 4 * 1024 * 1024;
/** A step's error object: the runner's callback plugin keeps it under 64 KiB; this bounds a rogue runner. */
const MAX_STEP_ERROR_CHARS = 1024 * 1024;

/** A message that breaks the protocol: the stream ends with INVALID_ARGUMENT. */
export class ProtocolError extends Error {}

/** Which event of which execution a numbered message is. */
export interface EventHeader {
  readonly executionId: string;
  readonly seq: number;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function header(executionId: string, seq: number): EventHeader {
  if (!executionId || executionId.length > 64 || executionId.includes('\u0000')) throw new ProtocolError('execution_id is missing, too long or holds a NUL');
  if (!Number.isSafeInteger(seq) || seq < 1) throw new ProtocolError('seq must be a positive integer');
  return { executionId, seq };
}

/** A runner's hello, from the stream authenticated as runner `name`; `running` are the runs it says it still holds. */
export function decodeHello(hello: Hello, name: string, peer: string): { hello: RunnerHello; running: string[] } {
  if (hello.protocol_version !== PROTOCOL_VERSION) {
    throw new ProtocolError(`protocol version ${hello.protocol_version} is not supported (this control plane speaks ${PROTOCOL_VERSION})`);
  }
  if (hello.name !== name) throw new ProtocolError(`the token belongs to runner ${name}, not ${hello.name}`);
  if (!Number.isInteger(hello.slots) || hello.slots < 0 || hello.slots > 1024) throw new ProtocolError('slots must be between 0 and 1024');
  return {
    hello: {
      name,
      version: withoutNul(hello.version.slice(0, 64)),
      labels: withoutNulDeep({ ...hello.labels }) as Record<string, string>,
      slots: hello.slots,
      peer,
      sshPublicKey: withoutNul(hello.ssh_public_key.slice(0, 16 * 1024)),
    },
    running: hello.running_execution_ids.filter((id) => id.length <= 64 && !id.includes('\u0000')),
  };
}

/**
 * Text a runner sends (Ansible output, facts, error messages) with every NUL character
 * replaced by U+FFFD: PostgreSQL's text and JSON cannot hold one, and no reader needs it. The
 * length in characters stays the same, so log offsets still hold.
 */
export function withoutNul(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

/** `withoutNul` for every string (and key) of a parsed JSON value. */
export function withoutNulDeep(value: unknown): unknown {
  if (typeof value === 'string') return withoutNul(value);
  if (Array.isArray(value)) return value.map(withoutNulDeep);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [withoutNul(k), withoutNulDeep(v)]));
  return value;
}

export function decodeStep(step: StepEvent): EventHeader & { readonly report: StepReport } {
  const event = header(step.execution_id, step.seq);
  if (!STEP_RESULTS.has(step.result)) throw new ProtocolError(`step result ${JSON.stringify(step.result)} is not one of ok, error, skipped, unreachable`);
  if (step.error_json.length > MAX_STEP_ERROR_CHARS) throw new ProtocolError(`error_json may hold at most ${MAX_STEP_ERROR_CHARS} characters`);
  let error: unknown = {};
  try {
    error = step.error_json ? JSON.parse(step.error_json) : {};
  } catch {
    throw new ProtocolError('error_json is not JSON');
  }
  if (!isObject(error)) throw new ProtocolError('error_json must hold a JSON object');
  if (nestsDeeper(error, MAX_DATA_DEPTH)) throw new ProtocolError(`error_json may nest at most ${MAX_DATA_DEPTH} levels`);
  const preview = step.preview_json ? decodePreview(step.preview_json) : null;
  // An ignored error is marked in the error object: a relaunch of failed hosts leaves its host out.
  if (step.ignored && (step.result === 'error' || step.result === 'unreachable')) error = { ...error, ignored: true };
  return {
    ...event,
    report: {
      host: withoutNul(step.host),
      role: withoutNul(step.role.slice(0, 255)),
      name: withoutNul(step.name.slice(0, 1024)),
      result: step.result,
      error: withoutNulDeep(error) as Record<string, unknown>,
      timeStarted: Math.floor(step.time_started),
      timeFinished: Math.floor(step.time_finished),
      preview,
    },
  };
}

/** A step's preview verdict (`StepEvent.preview_json`): a status, a diff cut at its bound, a reason. */
function decodePreview(json: string): StepPreview {
  if (json.length > 4 * PREVIEW_DIFF_MAX_CHARS) throw new ProtocolError(`preview_json may hold at most ${4 * PREVIEW_DIFF_MAX_CHARS} characters`);
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new ProtocolError('preview_json is not JSON');
  }
  if (!isObject(value)) throw new ProtocolError('preview_json must hold a JSON object');
  const status = PREVIEW_STATUSES.find((s) => s === value.status);
  if (!status) throw new ProtocolError(`preview status ${JSON.stringify(value.status)} is not one of ${PREVIEW_STATUSES.join(', ')}`);
  const out: { status: StepPreview['status']; diff?: string; why?: string } = { status };
  if (typeof value.diff === 'string' && value.diff) out.diff = withoutNul(cut(value.diff, PREVIEW_DIFF_MAX_CHARS));
  if (typeof value.why === 'string' && value.why) out.why = withoutNul(value.why.slice(0, 4096));
  return out;
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n...[${text.length - max} characters cut]`;
}

export function decodeLogChunk(chunk: LogChunk): EventHeader & { readonly offset: number; readonly text: string } {
  const event = header(chunk.execution_id, chunk.seq);
  if (!Number.isSafeInteger(chunk.offset) || chunk.offset < 0) throw new ProtocolError('offset must be a non-negative integer');
  if (chunk.text.length > MAX_TEXT) throw new ProtocolError('a log chunk may hold at most 4 MiB');
  return { ...event, offset: chunk.offset, text: withoutNul(chunk.text) };
}

export function decodeArtifact(artifact: RunArtifact): EventHeader & { readonly name: string; readonly content: string } {
  const event = header(artifact.execution_id, artifact.seq);
  if (!ARTIFACT_LIMITS.name.test(artifact.name)) throw new ProtocolError('an artifact name must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$');
  if (Buffer.byteLength(artifact.content, 'utf8') > ARTIFACT_LIMITS.maxBytes) {
    throw new ProtocolError(`an artifact may hold at most ${ARTIFACT_LIMITS.maxBytes} bytes`);
  }
  return { ...event, name: artifact.name, content: withoutNul(artifact.content) };
}

export function decodeResult(result: RunResult): EventHeader & { readonly outcome: Outcome; readonly reason: string | null } {
  const event = header(result.execution_id, result.seq);
  const outcome = OUTCOMES.find((o) => o === result.outcome);
  if (!outcome) throw new ProtocolError(`outcome ${JSON.stringify(result.outcome)} is not one of completed, failed, canceled`);
  return { ...event, outcome, reason: result.reason ? withoutNul(result.reason.slice(0, 4096)) : null };
}

/** A runner's facts answer: its error, or facts that must match the schema (otherwise that is the error). */
export function decodeFactsResult(runner: string, result: FactsResult): FactsAnswer {
  const ids = { requestId: result.request_id, serverId: result.server_id };
  const error = withoutNul(result.error.slice(0, 1024));
  if (error) return { ...ids, ok: false, error };
  let facts: unknown;
  try {
    facts = withoutNulDeep(JSON.parse(result.facts_json));
  } catch {
    facts = undefined;
  }
  if (Value.Check(ServerFactsSchema, facts)) return { ...ids, ok: true, facts, hostKey: withoutNul(result.host_key) || null };
  const first = [...Value.Errors(ServerFactsSchema, facts)][0];
  return { ...ids, ok: false, error: `runner ${runner} sent invalid facts${first ? `: ${first.instancePath || '/'} ${first.message}` : ''}` };
}

export function assignmentMessage(assignment: Assignment): ControlMessage {
  return {
    assignment: {
      execution_id: assignment.execution.id,
      playbook_id: assignment.playbookId,
      configuration_json: JSON.stringify(assignment.configuration),
      server_ids: { ...assignment.serverIds },
      host_keys: { ...assignment.hostKeys },
      check_mode: assignment.checkMode,
      limit_hosts: [...assignment.limitHosts],
    },
  };
}

export function gatherFactsMessage(request: FactsRequest): ControlMessage {
  return {
    gather_facts: {
      request_id: request.requestId,
      server_id: request.serverId,
      address: request.address,
      username: request.username,
      expected_host_key: request.expectedHostKey ?? '',
    },
  };
}

/**
 * A runner's status answer: its error, or the six outputs (JSON text, parsed by the status
 * scheduler), within `STATUS_LIMITS.maxOutputBytes` together (otherwise that is the error).
 */
export function decodeStatusResult(runner: string, result: StatusResult): StatusAnswer {
  const common = { requestId: result.request_id, clusterId: result.cluster_id, monitor: withoutNul(result.monitor.slice(0, 256)), durationMs: result.duration_ms };
  const error = withoutNul(result.error.slice(0, 2000));
  if (error) return { ...common, ok: false, error };
  const texts = [result.status_json, result.df_json, result.osd_tree_json, result.osd_dump_json, result.mon_dump_json, result.mgr_json];
  const size = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
  if (size > STATUS_LIMITS.maxOutputBytes) return { ...common, ok: false, error: `runner ${runner} sent ${size} bytes of status, more than ${STATUS_LIMITS.maxOutputBytes}` };
  return {
    ...common,
    ok: true,
    outputs: {
      status: result.status_json,
      df: result.df_json,
      osdTree: result.osd_tree_json,
      osdDump: result.osd_dump_json,
      monDump: result.mon_dump_json,
      mgrDump: result.mgr_json,
    },
  };
}

export function collectStatusMessage(request: StatusRequest): ControlMessage {
  return {
    collect_status: {
      request_id: request.requestId,
      cluster_id: request.clusterId,
      monitors: request.monitors.map((m) => ({ address: m.address, username: m.username, expected_host_key: m.expectedHostKey ?? '' })),
      ceph_cluster: request.cephCluster,
      connect_timeout_s: request.connectTimeoutS,
    },
  };
}
