import { createHash, timingSafeEqual } from 'node:crypto';
import { credentialOf } from '../accounts/authorization-header.js';

/**
 * The discovery tokens servers register with. Several may be valid at once (rotation
 * without downtime); each is compared in constant time, by digest so lengths do not leak.
 */
export class DiscoveryTokens {
  private readonly digests: Buffer[];

  constructor(tokens: readonly string[]) {
    this.digests = tokens.map((t) => createHash('sha256').update(t).digest());
  }

  /** Whether the `Authorization` header holds a valid discovery token (raw or Bearer, in any case). */
  matches(header: string | undefined): boolean {
    if (!header || this.digests.length === 0) return false;
    const digest = createHash('sha256').update(credentialOf(header)).digest();
    let ok = false;
    for (const d of this.digests) ok = timingSafeEqual(d, digest) || ok;
    return ok;
  }
}
