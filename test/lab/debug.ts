/** The lab's debug log (`CARAPACE_LAB_DEBUG=1`): each step with the milliseconds since the lab was loaded. */

const DEBUG = process.env.CARAPACE_LAB_DEBUG === '1';
const debugStart = Date.now();
export function debug(line: string): void {
  if (DEBUG) process.stderr.write(`[carapace-lab +${Date.now() - debugStart}ms] ${line}\n`);
}
