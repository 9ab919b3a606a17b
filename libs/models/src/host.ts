import { IsIPv4, IsIPv6 } from 'typebox/format';

/** The longest DNS name (RFC 1035, without the root's trailing dot). */
export const HOST_MAX_LENGTH = 253;

// RFC 1123 labels: letters, digits and hyphens, 1 to 63 characters, no hyphen at either end.
const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const DIGITS = /^[0-9]+$/;

/**
 * Why `value` is not a host the service can hand to `ssh` and Ansible, or null when it is
 * one: an IPv4 address in dotted-quad form (each part 0–255, no leading zeros), an IPv6
 * address (no brackets, no zone id), or a DNS name (labels of 1–63 letters, digits and
 * hyphens that neither start nor end with a hyphen, at most 253 characters, no empty label,
 * a last label that is not all digits, so `999.999.999.999` is refused). Nothing accepted
 * starts with `-`, so no accepted host can be read as a command-line option.
 */
export function hostProblem(value: string): string | null {
  if (value.length === 0) return 'it is empty';
  if (value.length > HOST_MAX_LENGTH) return `it is longer than ${HOST_MAX_LENGTH} characters`;
  if (value.startsWith('-')) return 'it starts with "-"';
  if (value.includes(':')) return IsIPv6(value) ? null : 'it is not a valid IPv6 address';
  if (IsIPv4(value)) return null;
  const labels = value.split('.');
  if (labels.some((label) => label.length === 0)) return 'it has an empty label (".." or a dot at either end)';
  const bad = labels.find((label) => !LABEL.test(label));
  if (bad !== undefined) {
    return bad.length > 63
      ? 'it has a label longer than 63 characters'
      : `its label ${JSON.stringify(bad.slice(0, 63))} is not made of letters, digits and inner hyphens`;
  }
  if (DIGITS.test(labels[labels.length - 1] ?? '')) return 'it is neither a valid IPv4 address nor a DNS name (the last label is all digits)';
  return null;
}

/** Whether `value` is an IPv4 address, an IPv6 address or a DNS name (see {@link hostProblem}). */
export function isHost(value: string): boolean {
  return hostProblem(value) === null;
}
