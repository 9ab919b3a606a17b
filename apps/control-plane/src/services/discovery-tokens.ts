import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The discovery tokens servers register with. Several may be valid at once (rotation
 * without downtime); each is compared in constant time, by digest so lengths do not leak.
 */
export class DiscoveryTokens {
  private readonly digests: Buffer[];

  constructor(tokens: readonly string[]) {
    this.digests = tokens.map((t) => createHash('sha256').update(t).digest());
  }

  /** Whether the `Authorization` header holds a valid discovery token (raw or Bearer). */
  matches(header: string | undefined): boolean {
    if (!header || this.digests.length === 0) return false;
    const token = header.startsWith('Bearer ') ? header.slice(7).trim() : header.trim();
    const digest = createHash('sha256').update(token).digest();
    let ok = false;
    for (const d of this.digests) ok = timingSafeEqual(d, digest) || ok;
    return ok;
  }
}
