import type { Principal, Todo, TodoEvent } from '../src/client/api-client.js';

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
  const rows = todos.map((todo) => [
    `#${todo.id}`,
    todo.state,
    todo.queue,
    todo.kind,
    todo.claimed_by ?? todo.assignee ?? '',
    ago(todo.created_at),
    todo.title,
  ]);
  const table = formatTable(['ID', 'STATE', 'QUEUE', 'KIND', 'WHO', 'AGE', 'TITLE'], rows);
  // The title comes last and is cut at the terminal's edge, so that every todo stays one line.
  const width = process.stdout.columns;
  if (!width) return table;
  return table
    .split('\n')
    .map((line) => (line.length > width ? `${line.slice(0, width - 1)}…` : line))
    .join('\n');
}

/** One line about a todo: `#42 claimed on reviews — Review PR #482 (lease until 12:03:04)`. */
export function formatTodoLine(todo: Todo): string {
  const details: string[] = [];
  if (todo.state === 'claimed' && todo.lease_expires_at) {
    details.push(`lease until ${clock(todo.lease_expires_at)}`);
  }
  if (todo.state === 'failed') {
    details.push(
      todo.retry_at
        ? `attempt ${todo.attempt}/${todo.max_attempts}, retry at ${clock(todo.retry_at)}`
        : `no attempts left (${todo.attempt}/${todo.max_attempts})`,
    );
  }
  if (todo.verdict) details.push(`verdict ${todo.verdict} by ${todo.decided_by}`);
  const suffix = details.length ? ` (${details.join(', ')})` : '';
  return `#${todo.id} ${todo.state} on ${todo.queue} — ${todo.title}${suffix}`;
}

/** The whole todo, then its history: who did what, when, and from where. */
export function formatTodoDetails(todo: Todo, history: TodoEvent[]): string {
  const fields: [string, string | number | null][] = [
    ['state', todo.state],
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
      lines.push(`  ${`${name}:`.padEnd(15)}${String(value)}`);
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

/** Local wall-clock time, e.g. 14:03:07. */
export function clock(iso: string): string {
  return new Date(iso).toLocaleTimeString('en-GB', { hour12: false });
}

function ago(iso: string): string {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}
