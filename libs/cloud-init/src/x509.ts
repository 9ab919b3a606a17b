import { X509Certificate } from 'node:crypto';

// `#x509` in Node (package.json `imports`): the CA bundle check with OpenSSL's parser. The
// browser's is ./x509.browser.ts.

/** Whether one PEM `CERTIFICATE` block parses as an X.509 certificate. */
export function parsesAsCertificate(pem: string): boolean {
  try {
    new X509Certificate(pem);
    return true;
  } catch {
    return false;
  }
}
