import {
  createPrompt,
  isDownKey,
  isEnterKey,
  isUpKey,
  useEffect,
  useKeypress,
  usePagination,
  useState,
} from '@inquirer/core';
import type { Todo } from '../src/client/api-client.js';
import { describeInboxItem } from './inbox-lines.js';

export interface InboxPromptConfig {
  /** Who is looking, for the header. */
  me: string;
  /** The inbox as first read. */
  todos: Todo[];
  /** Whether it refreshes itself as the server rings (--watch). */
  live: boolean;
  /** Reads the inbox again. */
  load(): Promise<Todo[]>;
  /** Calls back with a fresh inbox each time the server rings; returns the unsubscribe. */
  subscribe(onChange: (todos: Todo[]) => void, onProblem: (message: string) => void): () => void;
  decide(id: number, verdict: 'allow' | 'deny', note: string | undefined): Promise<string>;
}

type Mode = { kind: 'browse' } | { kind: 'note'; id: number; verdict: 'allow' | 'deny' };

const isOpenApproval = (todo: Todo) => todo.kind === 'approval' && todo.state === 'pending';

/** The keys that do something on the selected item: a and d only on an approval to decide. */
function keyHint(selected: Todo | undefined): string {
  const decide = selected && isOpenApproval(selected) ? ' · a allow · d deny' : '';
  return `↑↓ or j/k move${decide} · r refresh · q quit`;
}

/**
 * The interactive inbox: the list of what waits, the selected item in full (an approval's body
 * is the input preview of what is asked), and keys to decide. Rendered by @inquirer/core, which
 * redraws in place and restores the terminal on exit.
 */
export const inboxPrompt = createPrompt<void, InboxPromptConfig>((config, done) => {
  const [todos, setTodos] = useState(config.todos);
  const [active, setActive] = useState(0);
  const [mode, setMode] = useState<Mode>({ kind: 'browse' });
  const [note, setNote] = useState('');
  const [status, setStatus] = useState('');

  useEffect(() => config.subscribe(setTodos, setStatus), []);
  const index = Math.min(active, Math.max(0, todos.length - 1));
  const selected = todos[index];

  const refresh = async () => setTodos(await config.load());

  useKeypress(async (key, rl) => {
    if (mode.kind === 'note') {
      if (isEnterKey(key)) {
        // readline has taken the line by now: the note is what was kept while typing.
        const typed = note.trim();
        rl.clearLine(0);
        setNote('');
        setMode({ kind: 'browse' });
        setStatus(`sending your verdict on #${mode.id}…`);
        try {
          setStatus(await config.decide(mode.id, mode.verdict, typed || undefined));
        } catch (error) {
          setStatus((error as Error).message);
        }
        await refresh().catch(() => {});
      } else if (key.name === 'escape') {
        rl.clearLine(0);
        setNote('');
        setMode({ kind: 'browse' });
        setStatus('');
      } else {
        setNote(rl.line);
      }
      return;
    }
    // Browsing: keys are commands, never text.
    rl.clearLine(0);
    if (isUpKey(key) || key.name === 'k') setActive(Math.max(0, index - 1));
    else if (isDownKey(key) || key.name === 'j') setActive(Math.min(todos.length - 1, index + 1));
    else if (key.name === 'q' || key.name === 'escape') done();
    else if (key.name === 'r') {
      setStatus('');
      await refresh().catch((error: Error) => setStatus(error.message));
    } else if ((key.name === 'a' || key.name === 'd') && selected) {
      if (!isOpenApproval(selected)) {
        setStatus(`#${selected.id} is not an approval waiting for a verdict`);
      } else {
        setStatus('');
        setMode({ kind: 'note', id: selected.id, verdict: key.name === 'a' ? 'allow' : 'deny' });
      }
    }
  });

  const width = Math.max(40, process.stdout.columns || 80);
  const rows = process.stdout.rows || 24;
  const cut = (line: string) => (line.length > width - 1 ? `${line.slice(0, width - 2)}…` : line);
  const lines = [
    `switchboard inbox — ${todos.length ? `${todos.length} waiting for ${config.me}` : `nothing waits for ${config.me}`}${config.live ? ' · live' : ''}`,
  ];
  const pageSize = Math.max(3, Math.min(todos.length, Math.floor(rows / 3)));
  if (todos.length) {
    lines.push(
      usePagination({
        items: todos,
        active: index,
        pageSize,
        loop: false,
        renderItem: ({ item, isActive }) =>
          cut(`${isActive ? '❯' : ' '} ${describeInboxItem(item).line}`),
      }),
    );
  }
  if (selected) {
    const { heading, details } = describeInboxItem(selected);
    lines.push('', cut(heading));
    // What fits between the list and the key line; the rest is one command away.
    const room = Math.max(3, rows - pageSize - 7);
    const body = details.flatMap((text) => text.split('\n'));
    for (const line of body.slice(0, room)) lines.push(cut(`  ${line}`));
    if (body.length > room) {
      lines.push(
        `  … ${body.length - room} more lines: 'switchboard todo show ${selected.id}' shows them`,
      );
    }
  }
  lines.push('', status ? cut(status) : '');
  lines.push(
    mode.kind === 'note'
      ? `${mode.verdict === 'allow' ? 'allow' : 'deny'} #${mode.id} — note (optional; Enter sends, Esc cancels): ${note}`
      : keyHint(selected),
  );
  return lines.join('\n');
});
