import type { Actor } from '../data/actor.js';
import { conflict } from '../data/ledger-error.js';
import { showSecret as openSecret, type ShownSecret } from '../data/todos/todo-secrets.js';
import type { TodoServiceState } from './todo-service-state.js';

/** A withheld credential's value, for whoever may read its todo; the fetch is recorded. */
export function showSecret(
  state: TodoServiceState,
  actor: Actor,
  id: string,
): Promise<ShownSecret> {
  const { box } = state.hooks;
  if (!box) {
    throw conflict(
      'no secret can be opened on this server: it has no SWITCHBOARD_SECRET_KEY (a credential found without one was withheld and not kept)',
    );
  }
  return openSecret(state.sql, actor, id, (sealed) => box.open(sealed));
}
