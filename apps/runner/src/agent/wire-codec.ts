// The protocol edge of the agent: proto messages in and out, `*_json` fields parsed and
// written here only. Everything past this file speaks the domain types of agent.types.ts.
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import type { Assignment, ControlMessage__Output, GatherFacts, RunnerMessage } from '@carapace/protocol';
import type { OutboxEvent } from '../outbox.js';
import { assertNever } from '../state-machine.js';
import type { ControlCommand, ExecutionAssignment, ExecutionEvent, FactsAnswer, FactsRequest, RunConfiguration } from './agent.types.js';

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
