import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ApiRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface FakeApi {
  /** http://127.0.0.1:PORT: a source's API URL (the server must allow 127.0.0.1/32). */
  origin: string;
  /** Every request, in order of arrival. */
  requests: ApiRequest[];
  close(): Promise<void>;
}

/**
 * A provider's API (Gitea's, GitLab's, Linear's) as a real HTTP server on 127.0.0.1: each
 * request is recorded and answered with what `answer` returns for it (JSON unless a string).
 */
export async function startFakeApi(
  answer: (
    request: ApiRequest,
    index: number,
  ) => {
    status: number;
    body?: unknown;
    headers?: Record<string, string>;
  },
): Promise<FakeApi> {
  const requests: ApiRequest[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const request = { method: req.method!, path: req.url!, headers: req.headers, body };
      requests.push(request);
      const { status, body: answered, headers = {} } = answer(request, requests.length - 1);
      const text =
        answered === undefined
          ? ''
          : typeof answered === 'string'
            ? answered
            : JSON.stringify(answered);
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
