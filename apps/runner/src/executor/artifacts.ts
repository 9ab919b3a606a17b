// The files a successful run hands back to the control plane: what the playbook put in the
// work dir's artifacts directory (carapace_artifacts_dir), read with bounds.
import { constants } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ARTIFACT_LIMITS } from '@carapace/protocol';

/** A file of a run, as the control plane receives it (`RunArtifact`). */
export interface RunArtifact {
  readonly name: string;
  readonly content: string;
}

/** The files, or why they are refused. */
export type CollectedArtifacts = { readonly artifacts: RunArtifact[] } | { readonly problem: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads the artifacts directory of a run: at most `ARTIFACT_LIMITS.maxFiles` regular files
 * (no directory, no symbolic link: a link could name any file of the runner), named by
 * `ARTIFACT_LIMITS.name`, each at most `ARTIFACT_LIMITS.maxBytes` of UTF-8 text; sorted by
 * name. Anything else is refused with the reason (the run then fails): the directory is
 * written by a playbook, whose hosts' files are not to be trusted.
 */
export async function collectArtifacts(dir: string): Promise<CollectedArtifacts> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    return { problem: `cannot read the artifacts directory: ${(err as Error).message}` };
  }
  if (entries.length > ARTIFACT_LIMITS.maxFiles) {
    return { problem: `the run left ${entries.length} files for the control plane, more than ${ARTIFACT_LIMITS.maxFiles}` };
  }
  const names = entries.map((e) => e.name).sort();
  const artifacts: RunArtifact[] = [];
  for (const name of names) {
    if (!ARTIFACT_LIMITS.name.test(name)) return { problem: `the file name ${JSON.stringify(name.slice(0, 200))} is not allowed (letters, digits, ".", "_", "-")` };
    const entry = entries.find((e) => e.name === name);
    if (!entry?.isFile()) return { problem: `${name} is not a regular file` };
    let handle;
    try {
      handle = await open(join(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (err) {
      return { problem: `cannot open ${name}: ${(err as Error).message}` };
    }
    try {
      const info = await handle.stat();
      if (!info.isFile()) return { problem: `${name} is not a regular file` };
      if (info.size > ARTIFACT_LIMITS.maxBytes) return { problem: `${name} has ${info.size} bytes, more than ${ARTIFACT_LIMITS.maxBytes}` };
      // one byte more than allowed tells a file that grew since stat
      const buffer = Buffer.alloc(ARTIFACT_LIMITS.maxBytes + 1);
      let length = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
        if (bytesRead === 0) break;
        length += bytesRead;
        if (length === buffer.length) break;
      }
      if (length > ARTIFACT_LIMITS.maxBytes) return { problem: `${name} has more than ${ARTIFACT_LIMITS.maxBytes} bytes` };
      let content: string;
      try {
        content = utf8.decode(buffer.subarray(0, length));
      } catch {
        return { problem: `${name} is not UTF-8 text` };
      }
      artifacts.push({ name, content });
    } finally {
      await handle.close();
    }
  }
  return { artifacts };
}
