import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import type { ProtoGrpcType } from './generated/runner.js';
import type { ControlMessage, ControlMessage__Output } from './generated/carapace/runner/v1/ControlMessage.js';
import type { RunnerMessage, RunnerMessage__Output } from './generated/carapace/runner/v1/RunnerMessage.js';
import type { RunnerServiceClient, RunnerServiceHandlers } from './generated/carapace/runner/v1/RunnerService.js';

export type { ControlMessage, ControlMessage__Output, RunnerMessage, RunnerMessage__Output, RunnerServiceClient, RunnerServiceHandlers };
export type { Assignment__Output as Assignment } from './generated/carapace/runner/v1/Assignment.js';
export type { Hello__Output as Hello } from './generated/carapace/runner/v1/Hello.js';
export type { StepEvent__Output as StepEvent } from './generated/carapace/runner/v1/StepEvent.js';
export type { LogChunk__Output as LogChunk } from './generated/carapace/runner/v1/LogChunk.js';
export type { RunResult__Output as RunResult } from './generated/carapace/runner/v1/RunResult.js';
export type { RunArtifact__Output as RunArtifact } from './generated/carapace/runner/v1/RunArtifact.js';
export type { GatherFacts__Output as GatherFacts } from './generated/carapace/runner/v1/GatherFacts.js';
export type { FactsResult__Output as FactsResult } from './generated/carapace/runner/v1/FactsResult.js';
export type { CollectStatus__Output as CollectStatus } from './generated/carapace/runner/v1/CollectStatus.js';
export type { StatusResult__Output as StatusResult } from './generated/carapace/runner/v1/StatusResult.js';
export type { Welcome__Output as Welcome } from './generated/carapace/runner/v1/Welcome.js';

export { startHeartbeats, type Heartbeats } from './heartbeats.js';

/** The protocol version of proto/runner/v1/runner.proto that this package speaks. */
export const PROTOCOL_VERSION = 1;

/**
 * Bounds of the files a run hands back (`RunArtifact`), which the runner and the control
 * plane both enforce: how many per execution, how long each (UTF-8 bytes), and their names.
 */
export const ARTIFACT_LIMITS = {
  maxFiles: 32,
  maxBytes: 64 * 1024,
  name: /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
} as const;

/**
 * Bounds of a status collection (`CollectStatus` / `StatusResult`), which the runner and the
 * control plane both enforce: the most bytes the four `ceph` outputs may take together (a
 * cluster of a few thousand OSDs fits), and the most monitor hosts tried.
 */
export const STATUS_LIMITS = {
  maxOutputBytes: 4 * 1024 * 1024,
  maxMonitors: 16,
} as const;

/** Absolute path of the runner protocol's .proto file. */
export const PROTO_PATH = fileURLToPath(new URL('../../../proto/runner/v1/runner.proto', import.meta.url));

/**
 * The one set of loader options, matching how the types in src/generated were generated:
 * field names as in the .proto, 64-bit integers as numbers, defaults filled in, and the
 * name of the set oneof member in `body`.
 */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

let loaded: ProtoGrpcType | undefined;

/** Loads the runner protocol (once) and returns its typed gRPC definitions. */
export function loadRunnerProtocol(): ProtoGrpcType {
  loaded ??= grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_PATH, LOADER_OPTIONS)) as unknown as ProtoGrpcType;
  return loaded;
}

/** The `RunnerService` definition, for `server.addService`. */
export function runnerServiceDefinition(): grpc.ServiceDefinition {
  return loadRunnerProtocol().carapace.runner.v1.RunnerService.service;
}

/** Creates a client of `RunnerService`. */
export function createRunnerClient(address: string, credentials: grpc.ChannelCredentials, options?: grpc.ChannelOptions): RunnerServiceClient {
  const Ctor = loadRunnerProtocol().carapace.runner.v1.RunnerService;
  return new Ctor(address, credentials, options);
}

/**
 * Keepalive settings both sides use: pings every 20 s, a dead peer noticed within 30 s,
 * on top of the application heartbeat (HOUSE-STYLE 9).
 */
export const KEEPALIVE_OPTIONS: grpc.ChannelOptions = {
  'grpc.keepalive_time_ms': 20_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.http2.min_ping_interval_without_data_ms': 10_000,
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
};

/** The server side of keepalive: accepts the runners' pings. */
export const SERVER_KEEPALIVE_OPTIONS: grpc.ChannelOptions = {
  'grpc.keepalive_time_ms': 20_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.http2.min_ping_interval_without_data_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
};

export { grpc };
