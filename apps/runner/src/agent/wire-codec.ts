// The protocol edge of the agent: proto messages in and out, `*_json` fields parsed and
// written here only. Everything past this file speaks the domain types of agent.types.ts.
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import { STATUS_LIMITS, type Assignment, type CollectStatus, type ControlMessage__Output, type GatherFacts, type RunnerMessage } from '@carapace/protocol';
import type { OutboxEvent } from '../outbox.js';
import { assertNever } from '../state-machine.js';
import type { ControlCommand, ExecutionAssignment, ExecutionEvent, FactsAnswer, FactsRequest, RunConfiguration, StatusAnswer, StatusRequest } from './agent.types.js';

const ConfigurationSchema = Type.Object({
  global_vars: Type.Record(Type.String(), Type.Unknown()),
  inventory: Type.Record(Type.String(), Type.Unknown()),
});

/** A control-plane message, decoded: the session's own messages, a command for the agent, or nothing known. */
export type DecodedControl =
  | { readonly kind: 'welcome'; readonly heartbeatIntervalMs: number; readonly abandoned: readonly string[] }
  | { readonly kind: 'ack'; readonly executionId: string; readonly seq: number }
  | { readonly kind: 'command'; readonly command: ControlCommand }
  | { readonly kind: 'none' }
  | { readonly kind: 'unknown' };

const NONE = { kind: 'none' } as const;

/** Decodes a control-plane message; a member without its body decodes to `none`. */
export function decodeControl(message: ControlMessage__Output): DecodedControl {
  switch (message.body) {
    case 'welcome':
      return message.welcome
        ? { kind: 'welcome', heartbeatIntervalMs: message.welcome.heartbeat_interval_ms, abandoned: message.welcome.abandoned_execution_ids }
        : NONE;
    case 'assignment':
      return message.assignment ? { kind: 'command', command: { kind: 'assignment', assignment: decodeAssignment(message.assignment) } } : NONE;
    case 'cancel':
      return {
        kind: 'command',
        command: { kind: 'cancel', executionId: message.cancel?.execution_id ?? '', reason: message.cancel?.reason || 'canceled' },
      };
    case 'ack':
      return message.ack ? { kind: 'ack', executionId: message.ack.execution_id, seq: message.ack.seq } : NONE;
    case 'drain':
      return { kind: 'command', command: { kind: 'drain', reason: message.drain?.reason || 'drain asked by the control plane' } };
    case 'gather_facts':
      return message.gather_facts ? { kind: 'command', command: { kind: 'gather_facts', request: decodeFactsRequest(message.gather_facts) } } : NONE;
    case 'collect_status':
      return message.collect_status ? { kind: 'command', command: { kind: 'collect_status', request: decodeStatusRequest(message.collect_status) } } : NONE;
    case undefined:
      return { kind: 'unknown' };
    default:
      return assertNever(message.body);
  }
}

function decodeAssignment(assignment: Assignment): ExecutionAssignment {
  return {
    executionId: assignment.execution_id,
    playbookId: assignment.playbook_id,
    configuration: parseConfiguration(assignment.configuration_json),
    addresses: Object.keys(assignment.server_ids),
    hostKeys: { ...assignment.host_keys },
    checkMode: assignment.check_mode === true,
    limitHosts: [...(assignment.limit_hosts ?? [])],
  };
}

function parseConfiguration(json: string): RunConfiguration | null {
  let configuration: unknown;
  try {
    configuration = JSON.parse(json);
  } catch {
    return null;
  }
  return Value.Check(ConfigurationSchema, configuration) ? configuration : null;
}

function decodeFactsRequest(request: GatherFacts): FactsRequest {
  return {
    requestId: request.request_id,
    serverId: request.server_id,
    target: { address: request.address, username: request.username, expectedHostKey: request.expected_host_key || null },
  };
}

function decodeStatusRequest(request: CollectStatus): StatusRequest {
  return {
    requestId: request.request_id,
    clusterId: request.cluster_id,
    monitors: request.monitors
      .slice(0, STATUS_LIMITS.maxMonitors)
      .map((m) => ({ address: m.address, username: m.username, expectedHostKey: m.expected_host_key || null })),
    cephCluster: request.ceph_cluster || 'ceph',
    connectTimeoutS: request.connect_timeout_s || 10,
  };
}

/** The wire form of a status answer. */
export function encodeStatus(answer: StatusAnswer): Required<Pick<RunnerMessage, 'status'>> {
  const common = { request_id: answer.requestId, cluster_id: answer.clusterId, monitor: answer.monitor, duration_ms: Math.min(0xffffffff, Math.round(answer.durationMs)) };
  if (!answer.ok) {
    return { status: { ...common, status_json: '', df_json: '', osd_tree_json: '', osd_dump_json: '', mon_dump_json: '', mgr_json: '', error: answer.error } };
  }
  const o = answer.outputs;
  return {
    status: { ...common, status_json: o.status, df_json: o.df, osd_tree_json: o.osd_tree, osd_dump_json: o.osd_dump, mon_dump_json: o.mon_dump, mgr_json: o.mgr_dump, error: '' },
  };
}

/** The wire form of an execution's event, numbered `seq`. */
export function encodeEvent(executionId: string, seq: number, event: ExecutionEvent): OutboxEvent {
  switch (event.kind) {
    case 'step': {
      const { step } = event;
      return {
        step: {
          execution_id: executionId,
          seq,
          // the control plane knows its servers by address
          host: step.address || step.host,
          role: step.role,
          name: step.name,
          result: step.result,
          error_json: JSON.stringify(step.error ?? {}),
          time_started: step.time_started,
          time_finished: step.time_finished,
          preview_json: step.preview ? JSON.stringify(step.preview) : '',
          ignored: step.ignored,
        },
      };
    }
    case 'log':
      return { log: { execution_id: executionId, seq, offset: event.offset, text: event.text } };
    case 'artifact':
      return { artifact: { execution_id: executionId, seq, name: event.artifact.name, content: event.artifact.content } };
    case 'result':
      return { result: { execution_id: executionId, seq, outcome: event.outcome, reason: event.reason ?? '' } };
    default:
      return assertNever(event);
  }
}

/** The wire form of a facts answer. */
export function encodeFacts(answer: FactsAnswer): Required<Pick<RunnerMessage, 'facts'>> {
  const ids = { request_id: answer.requestId, server_id: answer.serverId };
  return answer.ok
    ? { facts: { ...ids, facts_json: JSON.stringify(answer.facts), host_key: answer.hostKey, error: '' } }
    : { facts: { ...ids, facts_json: '', host_key: '', error: answer.error } };
}
