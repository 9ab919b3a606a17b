/**
 * SSH from the runner to servers with ssh2: the pre-flight check before Ansible starts and
 * fact gathering for discovered servers, both enforcing the recorded host key.
 */
export { preflight, type PreflightOptions, type PreflightResult } from './preflight.js';
export { collectStatus, reduceMgrDump, splitStatusOutput, statusScript, STATUS_COMMANDS, type CollectStatusOptions, type CollectedStatus, type StatusOutputs, type StatusSection } from './collect-status.js';
export { gatherFacts, type GatherFactsOptions, type GatheredFacts } from './gather-facts.js';
export { openSession, hostLabel, type SshTarget, type SshConnectOptions, type SshSession, type ExecOptions, type ExecResult } from './session.js';
export { SshError, type SshErrorKind, type SshErrorDetails } from './ssh-error.js';
export { formatHostKey, parseHostKey, hostKeyFingerprint, type ParsedHostKey } from './host-key.js';
export { FACTS_SCRIPT, FACTS_COMMAND } from './facts.script.js';
export { FactsParseError, parseFactsOutput, splitFactsOutput, factsFromSections, parseLsblk, parseNetwork, parseOsRelease, type FactsSection } from './facts.parser.js';
export { parseDevNodes, type DevNode } from './facts.devices.js';
export {
  ed25519PrivateKeyFromSeed,
  ed25519PublicKeyProblem,
  encodeEd25519KeyPair,
  generateEd25519KeyPair,
  readEd25519PrivateKey,
  repairEd25519PrivateKey,
  type OpenSshKeyPair,
} from './key-pair.js';
