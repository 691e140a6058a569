import { neutraliseLine, neutraliseText } from '../../contract/neutralise-text.js';

/** What an approval's message shows: the todo as it stands, and how its verdict was given. */
export interface ApprovalShown {
  id: number;
  title: string;
  body: string | null;
  requested_by: string | null;
  assignee: string | null;
  state: string;
  expires_at: Date | null;
  verdict: 'allow' | 'deny' | null;
  decided_by: string | null;
  decided_at: Date | null;
  /** The verdict's note, or why it was canceled. */
  summary: string | null;
  /** Where the verdict came from (`slack`, `cli`, `web`, `github`, …). */
  decided_via: string | null;
}

export const ALLOW_ACTION = 'approval_allow';
export const DENY_ACTION = 'approval_deny';
export const DENY_MODAL = 'approval_deny_note';
export const NOTE_BLOCK = 'note';
export const NOTE_ACTION = 'note';

/** Slack's cap on a section's text is 3000 characters: the preview leaves room for its mark. */
export const PREVIEW_MAX = 2500;
const QUESTION_MAX = 2900;

/** Slack's mrkdwn: only `&`, `<` and `>` are escaped (anything else would show as an entity). */
export const escapeMrkdwn = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * Text from anyone (the question, the input, a note) goes in plain_text objects: Slack formats
 * none of it, so it can neither mention `@channel` nor pass for switchboard's own words.
 */
const plain = (text: string) => ({ type: 'plain_text', text, emoji: false });
const mrkdwn = (text: string) => ({ type: 'mrkdwn', text });

/** A time every reader sees in their own zone; the fallback is for clients that cannot. */
const slackDate = (at: Date) =>
  `<!date^${Math.floor(at.getTime() / 1000)}^{date_short_pretty} at {time}|${at.toISOString()}>`;

const consoleUrl = (publicUrl: string, id: number) => `${publicUrl}/approvals/${id}`;

/** The notification's one line: what a phone shows; formatted as mrkdwn by Slack, so escaped. */
export function fallbackText(todo: ApprovalShown): string {
  const asker = todo.requested_by ? ` from ${todo.requested_by}` : '';
  const line = `Approval #${todo.id}${asker}: ${neutraliseLine(todo.title, 150)}`;
  return escapeMrkdwn(`${line} — ${outcomeOf(todo) ?? 'waits for your verdict'}`);
}

/** How the approval ended, in a line; null while it waits. */
export function outcomeOf(todo: ApprovalShown): string | null {
  if (todo.verdict) {
    const via = todo.decided_via ? ` via ${todo.decided_via}` : '';
    return `${todo.verdict === 'allow' ? 'Allowed' : 'Denied'} by ${todo.decided_by}${via}`;
  }
  if (todo.state === 'canceled' && todo.summary === 'expired without a verdict')
    return 'Expired without a verdict';
  if (todo.state === 'canceled') return 'Canceled';
  if (todo.state === 'pending' && todo.expires_at && todo.expires_at <= new Date()) {
    return 'Expired without a verdict';
  }
  return todo.state === 'pending' ? null : `Ended (${todo.state})`;
}

/**
 * The approval as a Block Kit message: who asks, the question, the input (neutralised, cut with
 * a link to the whole of it on the console), until when, and Allow and Deny — or, once it has
 * ended, who decided, how and when, with no buttons.
 */
export function approvalBlocks(todo: ApprovalShown, publicUrl: string): unknown[] {
  const link = consoleUrl(publicUrl, todo.id);
  const blocks: unknown[] = [
    {
      type: 'section',
      text: mrkdwn(
        `*Approval <${link}|#${todo.id}>*` +
          (todo.requested_by ? ` — asked by *${escapeMrkdwn(todo.requested_by)}*` : '') +
          (todo.assignee ? ` for *${escapeMrkdwn(todo.assignee)}*` : ''),
      ),
    },
    { type: 'section', text: plain(neutraliseLine(todo.title, QUESTION_MAX)) },
  ];
  if (todo.body) {
    const input = neutraliseText(todo.body);
    const cut = input.length > PREVIEW_MAX;
    blocks.push({ type: 'section', text: plain(cut ? `${input.slice(0, PREVIEW_MAX)}…` : input) });
    if (cut) {
      blocks.push({
        type: 'context',
        elements: [mrkdwn(`The input is cut here: <${link}|read all of it on switchboard>.`)],
      });
    }
  }
  const outcome = outcomeOf(todo);
  if (outcome === null) {
    blocks.push({
      type: 'context',
      elements: [
        mrkdwn(
          todo.expires_at ? `Expires ${slackDate(todo.expires_at)}` : 'Waits for your verdict',
        ),
      ],
    });
    blocks.push({
      type: 'actions',
      block_id: `approval:${todo.id}`,
      elements: [
        {
          type: 'button',
          action_id: ALLOW_ACTION,
          text: plain('Allow'),
          style: 'primary',
          value: String(todo.id),
        },
        {
          type: 'button',
          action_id: DENY_ACTION,
          text: plain('Deny'),
          style: 'danger',
          value: String(todo.id),
        },
      ],
    });
    return blocks;
  }
  const when = todo.decided_at ? ` ${slackDate(todo.decided_at)}` : '';
  blocks.push({ type: 'section', text: mrkdwn(`*${escapeMrkdwn(outcome)}*${when}`) });
  if (todo.summary && todo.verdict) {
    blocks.push({
      type: 'context',
      elements: [plain(`Note: ${neutraliseLine(todo.summary, 500)}`)],
    });
  }
  return blocks;
}

/** The modal Deny opens: a note, optional, then Deny. It carries the approval and where it was pressed. */
export function denyModal(
  todo: { id: number; title: string },
  pressedIn: { channel: string | null },
): unknown {
  return {
    type: 'modal',
    callback_id: DENY_MODAL,
    private_metadata: JSON.stringify({ todo_id: todo.id, channel: pressedIn.channel }),
    title: plain(`Deny #${todo.id}`.slice(0, 24)),
    submit: plain('Deny'),
    close: plain('Cancel'),
    blocks: [
      { type: 'section', text: plain(neutraliseLine(todo.title, QUESTION_MAX)) },
      {
        type: 'input',
        block_id: NOTE_BLOCK,
        optional: true,
        label: plain('Note (why not)'),
        element: {
          type: 'plain_text_input',
          action_id: NOTE_ACTION,
          multiline: true,
          max_length: 3000,
        },
      },
    ],
  };
}
