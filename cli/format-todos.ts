import type { HeldBack, Principal, Todo, TodoEvent } from '../src/client/api-client.js';

/** A plain-text table: a header and left-aligned columns two spaces apart. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function formatTodoTable(todos: Todo[]): string {
  // An approval is waited for by who asks, until it expires: its assignee is the reader. Any
  // other todo names who holds it, else who alone may claim it, else the human it is
  // attributed to (a GitHub todo's sender), as `todo show` does.
  const approvals = todos.some((todo) => todo.kind === 'approval');
  const rows = todos.map((todo) => [
    `#${todo.id}`,
    todo.state,
    todo.queue,
    todo.kind,
    todo.kind === 'approval'
      ? `${todo.requested_by} asks`
      : (todo.claimed_by ?? todo.assignee ?? todo.attributed_to ?? ''),
    ago(todo.created_at),
    ...(approvals ? [todo.kind === 'approval' ? expiry(todo) : ''] : []),
    // The link follows the title rather than taking a column before it: the title is what
    // tells todos apart, and a column of links would push it off a terminal's edge.
    todo.url ? `${todo.title} <${todo.url}>` : todo.title,
  ]);
  const header = ['ID', 'STATE', 'QUEUE', 'KIND', 'WHO', 'AGE'];
  const table = formatTable([...header, ...(approvals ? ['EXPIRES'] : []), 'TITLE'], rows);
  return fitToTerminal(table);
}

/** The title comes last and is cut at the terminal's edge, so that every todo stays one line. */
export function fitToTerminal(table: string): string {
  const width = process.stdout.columns;
  if (!width) return table;
  return table
    .split('\n')
    .map((line) => (line.length > width ? `${line.slice(0, width - 1)}…` : line))
    .join('\n');
}

/**
 * One line about a todo: `#42 claimed on reviews — Review PR #482 (lease until 2026-…Z)`. An
 * approval with a verdict says the verdict first: `#43 denied by ada — May I merge? (note: …)`.
 */
export function formatTodoLine(todo: Todo): string {
  if (todo.kind === 'approval' && todo.verdict) {
    const verdict = todo.verdict === 'allow' ? 'allowed' : 'denied';
    const note = todo.summary ? ` (note: ${oneLine(todo.summary)})` : '';
    return `#${todo.id} ${verdict} by ${todo.decided_by} — ${todo.title}${note}`;
  }
  const details: string[] = [];
  if (todo.state === 'claimed' && todo.lease_expires_at) {
    details.push(`lease until ${todo.lease_expires_at}`);
  }
  if (todo.state === 'failed') {
    details.push(
      todo.retry_at
        ? `attempt ${todo.attempt}/${todo.max_attempts}, retry at ${todo.retry_at}`
        : `no attempts left (${todo.attempt}/${todo.max_attempts})`,
    );
  }
  if (todo.kind === 'approval' && todo.state === 'pending' && todo.expires_at) {
    details.push(`${todo.requested_by} asks, expires at ${todo.expires_at}`);
  }
  const suffix = details.length ? ` (${details.join(', ')})` : '';
  return `#${todo.id} ${todo.state} on ${todo.queue} — ${todo.title}${suffix}`;
}

/** Why a todo is quarantined: the reason its `quarantined` history event keeps. */
export function quarantineReason(history: TodoEvent[]): string | null {
  const event = history.findLast((entry) => entry.action === 'quarantined');
  const reason = event?.data?.reason;
  return typeof reason === 'string' ? reason : null;
}

/**
 * The whole todo, then its history: who did what, when, and from where. `heldBack`: its queue is
 * at a limit, so it waits although it could be claimed.
 */
export function formatTodoDetails(
  todo: Todo,
  history: TodoEvent[],
  heldBack: HeldBack | null = null,
): string {
  const fields: [string, string | number | null][] = [
    ['state', todo.state],
    ['held back', heldBack && `queue ${heldBack.queue} is ${heldBack.message}`],
    [
      'quarantined',
      todo.state === 'quarantined'
        ? `${quarantineReason(history) ?? 'no reason recorded'} — 'switchboard quarantine release ${todo.id}' lets agents work it`
        : null,
    ],
    ['queue', todo.queue],
    ['kind', todo.kind],
    ['source', todo.source],
    ['url', todo.url],
    ['attributed to', todo.attributed_to],
    ['assignee', todo.assignee],
    ['claimed by', todo.claimed_by],
    ['lease until', todo.lease_expires_at],
    ['retry at', todo.retry_at],
    ['attempt', todo.attempt ? `${todo.attempt} of ${todo.max_attempts}` : null],
    ['requested by', todo.requested_by],
    ['about', todo.about_todo_id === null ? null : `#${todo.about_todo_id}`],
    ['expires at', todo.expires_at],
    ['verdict', todo.verdict],
    ['decided by', todo.decided_by],
    ['decided at', todo.decided_at],
    ['summary', todo.summary],
    ['result', todo.result === null ? null : JSON.stringify(todo.result)],
    ['created', todo.created_at],
    ['updated', todo.updated_at],
  ];
  const lines = [`#${todo.id} ${todo.title}`];
  for (const [name, value] of fields) {
    if (value !== null && value !== undefined && value !== '') {
      // A value of several lines (a summary) continues under its first line, not at the margin.
      const text = String(value).replace(/\r?\n/g, `\n${' '.repeat(17)}`);
      lines.push(`  ${`${name}:`.padEnd(15)}${text}`);
    }
  }
  if (todo.body) lines.push('', indent(todo.body));
  lines.push('', 'History');
  lines.push(
    indent(
      formatTable(
        ['WHEN', 'WHO', 'VIA', 'WHAT', 'DETAILS'],
        history.map((event) => [
          event.at,
          `${event.actor} (${event.actor_kind})`,
          event.via,
          event.action,
          event.data ? JSON.stringify(event.data) : '',
        ]),
      ),
    ),
  );
  return lines.join('\n');
}

export function formatPrincipal(principal: Principal): string {
  if (principal.kind === 'agent') {
    return `${principal.name} (agent of ${principal.owner}, queues ${(principal.queues ?? []).join(', ')})`;
  }
  return `${principal.name} (human${principal.is_admin ? ', admin' : ''})`;
}

function indent(text: string): string {
  return text.replace(/^/gm, '  ');
}

/** Text shown on one line: its line breaks become spaces. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}

/** When a pending approval expires, from now: `in 14m`, or `expired`. */
export function expiry(todo: Todo): string {
  if (todo.state !== 'pending' || !todo.expires_at) return '';
  const seconds = Math.round((Date.parse(todo.expires_at) - Date.now()) / 1000);
  return seconds > 0 ? `in ${duration(seconds)}` : 'expired';
}

export function ago(iso: string): string {
  return duration(Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000)));
}

function duration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}
