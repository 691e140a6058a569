/** The NOTIFY channel the todos triggers send wakes on (see migrations/0002_create_todos.sql). */
export const wakeChannel = (schema: string) => `${schema}.wakes`;

export interface Wake {
  todo_id: number;
  queue: string;
  event: 'claimable' | 'approval' | 'verdict';
}
