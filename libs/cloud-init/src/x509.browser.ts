import { base64Bytes } from './bytes.js';
import type * as NodeX509 from './x509.js';

// `#x509` in a browser (package.json `imports`, condition `browser`), which has no X.509
// parser (WebCrypto imports keys, not certificates): the block must be base64 of one DER
// `Certificate`, a SEQUENCE of exactly a SEQUENCE (tbsCertificate), a SEQUENCE
// (signatureAlgorithm) and a BIT STRING (signatureValue), each length within its parent.
// Looser than Node's check, which parses the certificate's fields too.

const SEQUENCE = 0x30;
const BIT_STRING = 0x03;

/** The DER element at `offset`: its tag and where its contents start and end, or null when malformed. */
function element(der: Uint8Array, offset: number, limit: number): { tag: number; start: number; end: number } | null {
  if (offset + 2 > limit) return null;
  const tag = der[offset] as number;
  const first = der[offset + 1] as number;
  let start = offset + 2;
  let length = first;
  if (first & 0x80) {
    const count = first & 0x7f;
    // Indefinite lengths (0x80) are BER, not DER; more than 4 length bytes is no certificate.
    if (count === 0 || count > 4 || start + count > limit) return null;
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + (der[start + i] as number);
    start += count;
  }
  const end = start + length;
  return end > limit ? null : { tag, start, end };
}

/** Whether one PEM `CERTIFICATE` block holds a DER certificate's outline. */
export function parsesAsCertificate(pem: string): boolean {
  const body = pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  let der: Uint8Array;
  try {
    der = base64Bytes(body);
  } catch {
    return false;
  }
  const certificate = element(der, 0, der.length);
  if (certificate === null || certificate.tag !== SEQUENCE || certificate.end !== der.length) return false;
  const tags: number[] = [];
  for (let offset = certificate.start; offset < certificate.end; ) {
    const field = element(der, offset, certificate.end);
    if (field === null) return false;
    tags.push(field.tag);
    offset = field.end;
  }
  return tags.length === 3 && tags[0] === SEQUENCE && tags[1] === SEQUENCE && tags[2] === BIT_STRING;
}

// The type check that this module can stand in for ./x509.ts: the same functions, the same signatures.
const _standsIn = { parsesAsCertificate } satisfies typeof NodeX509;
void _standsIn;
