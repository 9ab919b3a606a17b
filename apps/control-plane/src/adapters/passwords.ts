import { randomBytes, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { ApiError } from '../errors.js';
import type { PasswordHasher } from '../ports.js';

const PARAMS = { N: 16384, r: 8, p: 1 } as const;
const KEY_LENGTH = 64;

/** How many scrypt derivations may run at once, and how many may wait for their turn. */
export interface HashLimits {
  readonly concurrency: number;
  readonly queue: number;
}

/** One derivation at a time, 64 waiting: see `PasswordHashing`. */
export const DEFAULT_HASH_LIMITS: HashLimits = { concurrency: 1, queue: 64 };

/**
 * The code of a hashing thread (CommonJS, evaluated: no file to resolve from sources or
 * build). It lowers its own scheduling priority to nice 10 (on Linux the nice value is per
 * thread): sharing a CPU with the event loop it gets about a tenth of it, so requests go
 * first; not 19, with which any other busy process on the host (a playbook run) would
 * starve logins. Then it derives keys one at a time.
 */
const WORKER_CODE = `
const { parentPort } = require('node:worker_threads');
const { scryptSync } = require('node:crypto');
try { require('node:os').setPriority(10); } catch {}
parentPort.on('message', (task) => {
  try {
    const key = scryptSync(task.password, Buffer.from(task.salt), task.keyLength, task.options);
    parentPort.postMessage({ key });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) });
  }
});
`;

/** A thread that derives one key at a time. */
class HashThread {
  private readonly worker = new Worker(WORKER_CODE, { eval: true, name: 'password-hashing' });
  private pending: { resolve: (key: Buffer) => void; reject: (err: Error) => void } | null = null;
  /** False once the thread has failed or exited: it is not used again. */
  alive = true;

  constructor() {
    this.worker.unref();
    this.worker.on('message', (m: { key?: Uint8Array; error?: string }) => {
      const pending = this.pending;
      this.pending = null;
      if (m.key) pending?.resolve(Buffer.from(m.key.buffer, m.key.byteOffset, m.key.byteLength));
      else pending?.reject(new Error(m.error ?? 'scrypt failed'));
    });
    const fail = (err: Error): void => {
      this.alive = false;
      this.pending?.reject(err);
      this.pending = null;
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`the password hashing thread exited (${code})`)));
  }

  /** Ends the thread (one more than the concurrency now allows). */
  close(): void {
    this.alive = false;
    void this.worker.terminate();
  }

  derive(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.worker.postMessage({ password, salt: new Uint8Array(salt), keyLength, options });
    });
  }
}

/**
 * Runs scrypt derivations with bounded concurrency and a bounded queue of waiting ones.
 *
 * A derivation takes tens of milliseconds of CPU and 16 MiB. On libuv's pool (4 threads,
 * shared with file system, DNS and the WebCrypto HMAC that checks every uncached token), a
 * flood of logins filled the pool and the CPUs, and every request waited behind it. Here
 * each runs on a thread of its own, at most `concurrency` of them, at a low CPU priority
 * (nice 10): the pool stays free and the event loop goes first on a busy CPU. A login past
 * a full queue is answered 503 with `Retry-After` at once, holding nothing. The container
 * makes one and hands it to the services that hash or check passwords (`PasswordHasher`);
 * its idle threads hold nothing open (they are unref'd).
 */
export class PasswordHashing implements PasswordHasher {
  private limits: HashLimits = DEFAULT_HASH_LIMITS;
  readonly dummy = DUMMY_HASH;
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  /** Threads not deriving now. */
  private readonly idle: HashThread[] = [];
  /** Mean duration of a derivation (ms), for `Retry-After`. */
  private meanMs = 100;

  constructor(limits: HashLimits = DEFAULT_HASH_LIMITS) {
    this.configure(limits);
  }

  /** Sets the bounds (from the configuration); applies to derivations started from now on. */
  configure(limits: HashLimits): void {
    if (!Number.isInteger(limits.concurrency) || limits.concurrency < 1 || !Number.isInteger(limits.queue) || limits.queue < 0) {
      throw new RangeError(`invalid hash limits ${JSON.stringify(limits)}`);
    }
    this.limits = limits;
    while (this.active < this.limits.concurrency && this.waiting.length) this.startNext();
  }

  /** Derivations running and waiting now. */
  load(): { readonly active: number; readonly waiting: number } {
    return { active: this.active, waiting: this.waiting.length };
  }

  /** Hashes a password with scrypt and a random salt: `scrypt$N$r$p$salt$hash` (base64url). */
  async hash(password: string): Promise<string> {
    const salt = randomBytes(16);
    const key = await this.derive(password, salt, KEY_LENGTH, PARAMS);
    return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
  }

  /** Checks a password against a stored hash, in constant time. */
  async verify(password: string, stored: string): Promise<boolean> {
    const [kind, n, r, p, salt, hash] = stored.split('$');
    if (kind !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
    const expected = Buffer.from(hash, 'base64url');
    const key = await this.derive(password, Buffer.from(salt, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p) });
    return key.length === expected.length && timingSafeEqual(key, expected);
  }

  private async derive(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
    await this.turn();
    const started = performance.now();
    let thread = this.idle.pop();
    while (thread && !thread.alive) thread = this.idle.pop();
    thread ??= new HashThread();
    try {
      return await thread.derive(password, salt, keyLength, { ...options, maxmem: 64 * 1024 * 1024 });
    } finally {
      this.meanMs = this.meanMs * 0.9 + (performance.now() - started) * 0.1;
      if (thread.alive && this.idle.length < this.limits.concurrency) this.idle.push(thread);
      else thread.close();
      this.active -= 1;
      if (this.waiting.length && this.active < this.limits.concurrency) this.startNext();
    }
  }

  /** Resolves when a derivation may start; throws a 503 when the queue is full. */
  private turn(): Promise<void> {
    if (this.active < this.limits.concurrency && this.waiting.length === 0) {
      this.active += 1;
      return Promise.resolve();
    }
    if (this.waiting.length >= this.limits.queue) {
      const retryAfterS = ((this.waiting.length / this.limits.concurrency + 1) * this.meanMs) / 1000;
      throw new ApiError(503, 'ServiceUnavailable', 'Too many logins at once: try again in a moment.', {
        'retry-after': String(Math.max(1, Math.ceil(retryAfterS))),
      });
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private startNext(): void {
    const next = this.waiting.shift();
    if (!next) return;
    this.active += 1;
    next();
  }
}

/**
 * What an unknown login's password is compared against, for the same timing as a known
 * one: a stored hash's shape with random bytes for the key, which no password derives to.
 */
export const DUMMY_HASH = ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, randomBytes(16).toString('base64url'), randomBytes(KEY_LENGTH).toString('base64url')].join('$');

/** A random password for a new account: 20 characters of base64url (120 bits). */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url');
}
