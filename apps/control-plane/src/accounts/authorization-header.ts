const BEARER = /^bearer[ \t]+/i;

/**
 * The credential of an `Authorization` header: the header itself (what the original client
 * sends, api-v1 §3) or what follows the `Bearer` scheme, whose name is case-insensitive
 * (RFC 9110 §11.1): `Bearer`, `bearer` and `BEARER` alike.
 */
export function credentialOf(header: string): string {
  const scheme = BEARER.exec(header);
  return (scheme ? header.slice(scheme[0].length) : header).trim();
}
