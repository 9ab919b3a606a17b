import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { Assignment as _carapace_runner_v1_Assignment, Assignment__Output as _carapace_runner_v1_Assignment__Output } from './carapace/runner/v1/Assignment.js';
import type { Cancel as _carapace_runner_v1_Cancel, Cancel__Output as _carapace_runner_v1_Cancel__Output } from './carapace/runner/v1/Cancel.js';
import type { CollectStatus as _carapace_runner_v1_CollectStatus, CollectStatus__Output as _carapace_runner_v1_CollectStatus__Output } from './carapace/runner/v1/CollectStatus.js';
import type { ControlMessage as _carapace_runner_v1_ControlMessage, ControlMessage__Output as _carapace_runner_v1_ControlMessage__Output } from './carapace/runner/v1/ControlMessage.js';
import type { Drain as _carapace_runner_v1_Drain, Drain__Output as _carapace_runner_v1_Drain__Output } from './carapace/runner/v1/Drain.js';
import type { Draining as _carapace_runner_v1_Draining, Draining__Output as _carapace_runner_v1_Draining__Output } from './carapace/runner/v1/Draining.js';
import type { EventAck as _carapace_runner_v1_EventAck, EventAck__Output as _carapace_runner_v1_EventAck__Output } from './carapace/runner/v1/EventAck.js';
import type { FactsResult as _carapace_runner_v1_FactsResult, FactsResult__Output as _carapace_runner_v1_FactsResult__Output } from './carapace/runner/v1/FactsResult.js';
import type { GatherFacts as _carapace_runner_v1_GatherFacts, GatherFacts__Output as _carapace_runner_v1_GatherFacts__Output } from './carapace/runner/v1/GatherFacts.js';
import type { Heartbeat as _carapace_runner_v1_Heartbeat, Heartbeat__Output as _carapace_runner_v1_Heartbeat__Output } from './carapace/runner/v1/Heartbeat.js';
import type { Hello as _carapace_runner_v1_Hello, Hello__Output as _carapace_runner_v1_Hello__Output } from './carapace/runner/v1/Hello.js';
import type { LogChunk as _carapace_runner_v1_LogChunk, LogChunk__Output as _carapace_runner_v1_LogChunk__Output } from './carapace/runner/v1/LogChunk.js';
import type { MonitorHost as _carapace_runner_v1_MonitorHost, MonitorHost__Output as _carapace_runner_v1_MonitorHost__Output } from './carapace/runner/v1/MonitorHost.js';
import type { RunArtifact as _carapace_runner_v1_RunArtifact, RunArtifact__Output as _carapace_runner_v1_RunArtifact__Output } from './carapace/runner/v1/RunArtifact.js';
import type { RunResult as _carapace_runner_v1_RunResult, RunResult__Output as _carapace_runner_v1_RunResult__Output } from './carapace/runner/v1/RunResult.js';
import type { RunnerMessage as _carapace_runner_v1_RunnerMessage, RunnerMessage__Output as _carapace_runner_v1_RunnerMessage__Output } from './carapace/runner/v1/RunnerMessage.js';
import type { RunnerServiceClient as _carapace_runner_v1_RunnerServiceClient, RunnerServiceDefinition as _carapace_runner_v1_RunnerServiceDefinition } from './carapace/runner/v1/RunnerService.js';
import type { StatusResult as _carapace_runner_v1_StatusResult, StatusResult__Output as _carapace_runner_v1_StatusResult__Output } from './carapace/runner/v1/StatusResult.js';
import type { StepEvent as _carapace_runner_v1_StepEvent, StepEvent__Output as _carapace_runner_v1_StepEvent__Output } from './carapace/runner/v1/StepEvent.js';
import type { Welcome as _carapace_runner_v1_Welcome, Welcome__Output as _carapace_runner_v1_Welcome__Output } from './carapace/runner/v1/Welcome.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  carapace: {
    runner: {
      v1: {
        Assignment: MessageTypeDefinition<_carapace_runner_v1_Assignment, _carapace_runner_v1_Assignment__Output>
        Cancel: MessageTypeDefinition<_carapace_runner_v1_Cancel, _carapace_runner_v1_Cancel__Output>
        CollectStatus: MessageTypeDefinition<_carapace_runner_v1_CollectStatus, _carapace_runner_v1_CollectStatus__Output>
        ControlMessage: MessageTypeDefinition<_carapace_runner_v1_ControlMessage, _carapace_runner_v1_ControlMessage__Output>
        Drain: MessageTypeDefinition<_carapace_runner_v1_Drain, _carapace_runner_v1_Drain__Output>
        Draining: MessageTypeDefinition<_carapace_runner_v1_Draining, _carapace_runner_v1_Draining__Output>
        EventAck: MessageTypeDefinition<_carapace_runner_v1_EventAck, _carapace_runner_v1_EventAck__Output>
        FactsResult: MessageTypeDefinition<_carapace_runner_v1_FactsResult, _carapace_runner_v1_FactsResult__Output>
        GatherFacts: MessageTypeDefinition<_carapace_runner_v1_GatherFacts, _carapace_runner_v1_GatherFacts__Output>
        Heartbeat: MessageTypeDefinition<_carapace_runner_v1_Heartbeat, _carapace_runner_v1_Heartbeat__Output>
        Hello: MessageTypeDefinition<_carapace_runner_v1_Hello, _carapace_runner_v1_Hello__Output>
        LogChunk: MessageTypeDefinition<_carapace_runner_v1_LogChunk, _carapace_runner_v1_LogChunk__Output>
        MonitorHost: MessageTypeDefinition<_carapace_runner_v1_MonitorHost, _carapace_runner_v1_MonitorHost__Output>
        RunArtifact: MessageTypeDefinition<_carapace_runner_v1_RunArtifact, _carapace_runner_v1_RunArtifact__Output>
        RunResult: MessageTypeDefinition<_carapace_runner_v1_RunResult, _carapace_runner_v1_RunResult__Output>
        RunnerMessage: MessageTypeDefinition<_carapace_runner_v1_RunnerMessage, _carapace_runner_v1_RunnerMessage__Output>
        RunnerService: SubtypeConstructor<typeof grpc.Client, _carapace_runner_v1_RunnerServiceClient> & { service: _carapace_runner_v1_RunnerServiceDefinition }
        StatusResult: MessageTypeDefinition<_carapace_runner_v1_StatusResult, _carapace_runner_v1_StatusResult__Output>
        StepEvent: MessageTypeDefinition<_carapace_runner_v1_StepEvent, _carapace_runner_v1_StepEvent__Output>
        Welcome: MessageTypeDefinition<_carapace_runner_v1_Welcome, _carapace_runner_v1_Welcome__Output>
      }
    }
  }
}

