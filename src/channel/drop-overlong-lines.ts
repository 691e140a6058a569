import { Transform } from 'node:stream';

/**
 * Passes stdin on a whole line at a time and drops any line longer than `max` bytes (up to its
 * newline), so that no single line can overflow the transport's read buffer.
 */
export function dropOverlongLines(max: number, onDrop: (bytes: number) => void): Transform {
  let held: Buffer[] = [];
  let heldBytes = 0;
  let dropping = false;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      let rest = chunk;
      while (rest.length > 0) {
        const newline = rest.indexOf(0x0a);
        const end = newline === -1 ? rest.length : newline + 1;
        const piece = rest.subarray(0, end);
        rest = rest.subarray(end);
        if (!dropping && heldBytes + piece.length > max + 1) {
          onDrop(heldBytes + piece.length);
          held = [];
          heldBytes = 0;
          dropping = true;
        }
        if (dropping) {
          if (newline !== -1) dropping = false;
          continue;
        }
        held.push(piece);
        heldBytes += piece.length;
        if (newline !== -1) {
          this.push(held.length === 1 ? held[0] : Buffer.concat(held));
          held = [];
          heldBytes = 0;
        }
      }
      done();
    },
  });
}
