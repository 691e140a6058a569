import type { IncomingHttpHeaders, IncomingMessage, RequestOptions } from 'node:http';
import { CertificateError, ConnectionError } from './client-errors.js';

export interface RequestInit {
  method: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Gives up on a server that accepts the connection but stays silent this long. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface TextResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * Opens a request and resolves with the response once its headers arrived; the body is the
 * caller's to read (the event stream reads it for as long as it lasts).
 *
 * node:http rather than fetch: fetch loads undici on first use, which costs about 60 ms of every
 * CLI start, and agents call the CLI in loops. node:https is loaded only for https URLs.
 */
export async function openRequest(url: URL, init: RequestInit): Promise<IncomingMessage> {
  const { request } =
    url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  const options: RequestOptions = {
    method: init.method,
    headers: {
      ...init.headers,
      ...(init.body === undefined
        ? {}
        : { 'content-length': String(Buffer.byteLength(init.body)) }),
    },
    signal: init.signal,
  };
  return new Promise((resolve, reject) => {
    const req = request(url, options, resolve);
    req.setTimeout(init.timeoutMs ?? DEFAULT_TIMEOUT_MS, () =>
      req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })),
    );
    req.once('error', (error: NodeJS.ErrnoException) => {
      if (error.name === 'AbortError') return reject(error);
      reject(
        tlsFailure(url, error) ??
          new ConnectionError(`cannot reach ${url.origin} (${error.code ?? error.message})`),
      );
    });
    req.end(init.body);
  });
}

/** A whole request: the response body read as text. */
export async function sendRequest(url: URL, init: RequestInit): Promise<TextResponse> {
  const response = await openRequest(url, init);
  response.setEncoding('utf8');
  let body = '';
  try {
    for await (const chunk of response) body += chunk as string;
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    throw new ConnectionError(`${url.origin} closed the connection before answering in full`);
  }
  return { status: response.statusCode ?? 0, headers: response.headers, body };
}

/** OpenSSL's verify errors that mean "signed by a CA this machine does not know". */
const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_UNTRUSTED',
]);
/** The rest of them, and Node's own for a certificate of another host. */
const REFUSED = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * A failed TLS handshake said as what it is: a certificate this machine does not trust (your
 * own CA's: NODE_EXTRA_CA_CERTS adds it to Node's), one that is wrong, or no TLS at all.
 */
function tlsFailure(url: URL, error: NodeJS.ErrnoException): CertificateError | undefined {
  const code = error.code ?? '';
  const why = `${error.message.split(/[:.]\s/)[0]} (${code})`;
  if (UNTRUSTED.has(code)) {
    return new CertificateError(
      `the certificate of ${url.origin} is not trusted here: ${why} — if your own CA signed it, set NODE_EXTRA_CA_CERTS to that CA's PEM file`,
    );
  }
  if (REFUSED.has(code)) {
    return new CertificateError(
      `the certificate of ${url.origin} is refused: ${why} — the server's certificate must be fixed`,
    );
  }
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'EPROTO') {
    return new CertificateError(
      `${url.origin} does not answer in TLS (${code}) — is it an http:// address?`,
    );
  }
  return undefined;
}
