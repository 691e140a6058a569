import { CommandError, EXIT } from './command-error.js';

export interface TextField {
  /** As the user gave it: `--body`, `the question`. */
  name: string;
  /** Longer is refused by the server (the request's limit). */
  accepted: number;
  /** Longer is cut by the server to this many characters. */
  kept: number;
  /** What to do instead, for the refusal and the note: `put the rest in --body`. */
  advice: string;
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * Says in words what the server would do with a text that is too long, before it is sent: a
 * text over what a request may carry is a usage error (the server's refusal would name a schema
 * rule); one it would silently cut gets a note on stderr, saying how much it keeps.
 */
export function checkTextLength(text: string | undefined, field: TextField): void {
  if (text === undefined) return;
  if (text.length > field.accepted) {
    throw new CommandError(
      `${field.name} is ${count(text.length)} characters, over the ${count(field.accepted)} a request may carry (a todo keeps ${count(field.kept)}) — ${field.advice}`,
      EXIT.usage,
    );
  }
  // The server cuts between characters, not UTF-16 units: a text this short in units is kept.
  if (text.length <= field.kept) return;
  const characters = Array.from(text).length;
  if (characters > field.kept) {
    process.stderr.write(
      `note: ${field.name} is ${count(characters)} characters; a todo keeps the first ${count(field.kept)} and cuts the rest — ${field.advice}\n`,
    );
  }
}
