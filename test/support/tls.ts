import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';

/** The files of a throw-away PKI made with `openssl`. */
export interface TestPki {
  /** The CA certificate (PEM). */
  readonly caFile: string;
  /** Server certificate and key, valid for 127.0.0.1 and localhost. */
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  /** Client certificate and its key in one PEM file (`CN=carapace-client`). */
  readonly clientBundleFile: string;
  /** A client certificate from another CA, with its key. */
  readonly strangerBundleFile: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir: string, name: string): void {
  openssl(
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${name}`],
    dir,
  );
}

function makeLeaf(dir: string, ca: string, name: string, cn: string, extensions: string): void {
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`], dir);
  openssl(
    ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-set_serial', String(Date.now()), '-days', '2', '-out', `${name}.pem`, '-extfile', `${name}.ext`],
    dir,
  );
}

/** Makes a test CA, a server certificate for 127.0.0.1, and client certificates, in `dir`. */
export function makePki(dir: string): TestPki {
  makeCa(dir, 'test-ca');
  makeCa(dir, 'other-ca');
  makeLeaf(dir, 'test-ca', 'server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  makeLeaf(dir, 'test-ca', 'client', 'carapace-client', 'extendedKeyUsage=clientAuth\n');
  makeLeaf(dir, 'other-ca', 'stranger', 'stranger', 'extendedKeyUsage=clientAuth\n');
  const bundle = (name: string) => {
    const file = join(dir, `${name}-bundle.pem`);
    writeFileSync(file, readFileSync(join(dir, `${name}.pem`), 'utf8') + readFileSync(join(dir, `${name}.key`), 'utf8'));
    return file;
  };
  return {
    caFile: join(dir, 'test-ca.pem'),
    serverCertFile: join(dir, 'server.pem'),
    serverKeyFile: join(dir, 'server.key'),
    clientBundleFile: bundle('client'),
    strangerBundleFile: bundle('stranger'),
  };
}

/**
 * An HTTPS server on 127.0.0.1 (port 0) in front of a plain HTTP upstream (the control
 * plane), passing requests and streamed answers through. With `requireClientCert` it asks
 * for a client certificate signed by the test CA and refuses connections without one. It
 * records the common name of each client certificate it saw.
 */
export class TlsProxy {
  readonly clientNames: string[] = [];
  url = '';
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;

  private constructor(pki: TestPki, upstream: string, requireClientCert: boolean) {
    const target = new URL(upstream);
    this.server = createServer(
      {
        cert: readFileSync(pki.serverCertFile),
        key: readFileSync(pki.serverKeyFile),
        ca: readFileSync(pki.caFile),
        requestCert: requireClientCert,
        rejectUnauthorized: requireClientCert,
      },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        if (peer.subject?.CN) this.clientNames.push(String(peer.subject.CN));
        const forward = httpRequest(
          { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        forward.on('error', () => res.destroy());
        req.pipe(forward);
      },
    );
    this.server.on('secureConnection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Starts a proxy to `upstream`. */
  static async start(pki: TestPki, upstream: string, options: { requireClientCert?: boolean } = {}): Promise<TlsProxy> {
    const proxy = new TlsProxy(pki, upstream, options.requireClientCert ?? false);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    proxy.url = `https://127.0.0.1:${(proxy.server.address() as AddressInfo).port}`;
    return proxy;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
