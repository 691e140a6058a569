import {
  Agent,
  createServer,
  request,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RoundRobinProxy {
  url: string;
  /** Requests answered 502 because the replica they were sent to did not answer. */
  refused(): number;
  close(): Promise<void>;
}

/** Hop-by-hop headers (RFC 9110 §7.6.1): each side of the proxy has its own connection. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

const endToEnd = (headers: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));

/**
 * A load balancer as plain as they come, in front of replicas on 127.0.0.1: each request goes to
 * the next port in turn, streamed both ways (event streams included), with no health check — a
 * replica that is down answers its share 502, as a balancer that has not noticed yet would, and
 * one that dies mid-answer has its answer cut off.
 */
export async function startRoundRobinProxy(
  ports: number[],
  {
    hold,
  }: {
    /** Called with each request before it is sent on; it waits for what this returns. */
    hold?: (req: IncomingMessage) => Promise<void> | void;
  } = {},
): Promise<RoundRobinProxy> {
  const agent = new Agent({ keepAlive: true });
  let next = 0;
  let refused = 0;
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const port = ports[next++ % ports.length]!;
    const upstream = request(
      {
        host: '127.0.0.1',
        port,
        method: req.method,
        path: req.url,
        headers: endToEnd(req.headers),
        agent,
      },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.statusMessage, endToEnd(answer.headers));
        res.flushHeaders();
        answer.pipe(res);
        answer.once('aborted', () => res.destroy());
        answer.once('error', () => res.destroy());
      },
    );
    upstream.once('error', () => {
      if (res.headersSent) return void res.destroy();
      refused++;
      res
        .writeHead(502, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({ error: `replica on port ${port} did not answer`, code: 'bad_gateway' }),
        );
    });
    req.pipe(upstream);
    // The client left (an event stream closed) before the answer ended: so does the request.
    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
  };
  const server = createServer((req, res) => {
    if (!hold) return forward(req, res);
    void Promise.resolve(hold(req)).then(() => forward(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    refused: () => refused,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      agent.destroy();
      await closed;
    },
  };
}
