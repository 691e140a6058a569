/**
 * What a consumer is told: one line of content for people and models, and the ids to act on.
 * The work itself is fetched by claiming; a doorbell never carries a body.
 */
export type Doorbell =
  | {
      type: 'wake';
      event: 'claimable';
      todo_id: number;
      queue: string;
      kind: string;
      title: string;
      url: string | null;
      content: string;
    }
  | {
      type: 'approval';
      event: 'approval';
      todo_id: number;
      queue: string;
      kind: 'approval';
      title: string;
      requested_by: string | null;
      request_id: string | null;
      content: string;
    }
  | {
      type: 'verdict';
      event: 'verdict';
      todo_id: number;
      queue: string;
      kind: 'approval';
      verdict: 'allow' | 'deny';
      decided_by: string;
      note: string | null;
      request_id: string | null;
      about_todo_id: number | null;
      content: string;
    }
  | {
      type: 'digest';
      todos: { todo_id: number; queue: string; kind: string; title: string }[];
      /** How many more wait beyond those listed. */
      more: number;
      content: string;
    };

const CONTENT_MAX = 300;

/** Titles are neutralised at ingest; this only keeps the line short. */
export function oneLine(text: string): string {
  const chars = Array.from(text);
  return chars.length <= CONTENT_MAX ? text : chars.slice(0, CONTENT_MAX - 1).join('') + '…';
}

export function wakeContent(todo: { id: number; queue: string; title: string }): string {
  return oneLine(`switchboard: todo #${todo.id} on ${todo.queue} — ${todo.title}`);
}

export function digestContent(todos: { todo_id: number; queue: string }[], more: number): string {
  const total = todos.length + more;
  const listed = todos.map((t) => `#${t.todo_id} on ${t.queue}`).join(', ');
  return oneLine(
    `switchboard: ${total} todo${total === 1 ? '' : 's'} wait${total === 1 ? 's' : ''} for you: ${listed}${more ? ', …' : ''}`,
  );
}
