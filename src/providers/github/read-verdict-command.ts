import { z } from 'zod';
import type { VerdictCommand } from '../provider.js';

// `/approve 43`, `/deny #43 not now`: on the comment's first line, nothing before it.
const COMMAND = /^\s*\/(approve|deny)\s+#?(\d{1,15})(?:\s+(.*))?$/i;

const CommentCreated = z.object({
  action: z.literal('created'),
  issue: z.object({ number: z.number().int() }),
  comment: z.object({ body: z.string() }),
});

/** A human's verdict on an approval, given as an issue or pull request comment; else null. */
export function readVerdictCommand(event: string, payload: unknown): VerdictCommand | null {
  if (event !== 'issue_comment') return null;
  const parsed = CommentCreated.safeParse(payload);
  if (!parsed.success) return null;
  const match = COMMAND.exec(parsed.data.comment.body.split('\n', 1)[0]!);
  if (!match) return null;
  return {
    verdict: match[1]!.toLowerCase() === 'approve' ? 'allow' : 'deny',
    approvalId: Number(match[2]),
    note: match[3]?.trim() || null,
    issueNumber: parsed.data.issue.number,
  };
}
