import type { IncomingHttpHeaders, IncomingMessage, RequestOptions } from 'node:http';
import { ConnectionError } from './client-errors.js';

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
      reject(new ConnectionError(`cannot reach ${url.origin} (${error.code ?? error.message})`));
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
