/**
 * A credential withheld from a todo's text (src/contract/withhold-secrets.ts), as the API, MCP
 * and the CLI hand it to whoever may read the todo and asks for it. Imports nothing: the channel
 * and the CLI check ids without loading the patterns.
 */

/** A secret's id: 12 characters of an alphabet without look-alikes (0/o, 1/l), 60 random bits. */
export const SECRET_ID = /^[a-km-np-z2-9]{12}$/;

/** How a reference to a kept credential reads: `[secret:k3j9x2m4q7ab]`. */
export const secretReference = (id: string) => `[secret:${id}]`;

/** What stands in a text for a credential that is not kept (no server key to seal it with). */
export const WITHHELD = '[secret:withheld]';

export interface Secret {
  id: string;
  /** The todo whose text it was withheld from, whose history records each fetch. */
  todo_id: number;
  /** The rule that found it: `github`, `aws`, `slack`, `privatekey`, `jwt`, `generic`, … */
  rule: string;
  value: string;
  created_at: Date;
}
