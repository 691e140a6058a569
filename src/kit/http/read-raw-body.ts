import type { Request } from 'express';

/** A failure to read, typed as body-parser's are, so that every error handler knows it. */
export function bodyError(status: number, type: string, message: string): Error {
  return Object.assign(new Error(message), { status, type });
}

/**
 * Reads a request's raw bytes into a single buffer of the size its Content-Length declares, so
 * that a body is held once, not as chunks and then their copy (body-parser's raw reader holds
 * both at its end, twice the body): a webhook body waiting to be verified costs its own size. A
 * chunked body's buffer doubles as it grows. Over `limit` (413, `entity.too.large`), cut short
 * (400, `request.aborted`), compressed (415, `encoding.unsupported`): rejected as raw-body
 * does, and the stream is left paused.
 */
export function readRawBody(req: Request, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // Never decompressed: the cap is on what is sent, and no bomb is inflated.
    const encoding = req.get('content-encoding')?.trim().toLowerCase() ?? 'identity';
    if (encoding !== 'identity') {
      return reject(bodyError(415, 'encoding.unsupported', 'content encoding unsupported'));
    }
    const declared = req.get('content-length');
    let buffer = Buffer.allocUnsafe(
      declared === undefined ? Math.min(limit, 64 * 1024) : Math.min(limit, Number(declared)),
    );
    let received = 0;
    let done = false;
    const finish = (error: Error | null) => {
      if (done) return;
      done = true;
      req.off('aborted', onAborted);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onEnd);
      if (error) {
        req.unpipe();
        req.pause();
        reject(error);
      } else resolve(buffer.subarray(0, received));
    };
    const onAborted = () => finish(bodyError(400, 'request.aborted', 'request aborted'));
    const onData = (chunk: Buffer) => {
      if (received + chunk.length > limit) {
        return finish(bodyError(413, 'entity.too.large', 'request entity too large'));
      }
      if (received + chunk.length > buffer.length) {
        const grown = Buffer.allocUnsafe(
          Math.min(limit, Math.max(buffer.length * 2, received + chunk.length)),
        );
        buffer.copy(grown, 0, 0, received);
        buffer = grown;
      }
      chunk.copy(buffer, received);
      received += chunk.length;
    };
    const onEnd = (error?: Error) => {
      if (error) return finish(error);
      if (declared !== undefined && received !== Number(declared)) {
        return finish(
          bodyError(400, 'request.size.invalid', 'request size did not match content length'),
        );
      }
      finish(null);
    };
    req.on('aborted', onAborted);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onEnd);
  });
}
