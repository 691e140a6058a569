import type { Todo } from '../data/index.js';
import type { Destination, Draft, Facts, ProviderKind } from './provider.js';

/** What a todo from a source keeps in `meta.source`: where it came from and where replies go. */
export interface SourceTodoMeta {
  name: string;
  kind: string;
  delivery_id: string;
  event: string;
  action: string | null;
  rule: string;
  actor: string;
  target: Record<string, unknown> | null;
}

/** The `meta` of a todo a source made (every provider but GitHub, which keeps its own). */
export function sourceTodoMeta(
  kind: ProviderKind,
  made: { source: string; deliveryId: string; facts: Facts; draft: Draft; attributedTo: string },
): { source: SourceTodoMeta } {
  return {
    source: {
      name: made.source,
      kind,
      delivery_id: made.deliveryId,
      event: made.facts.event,
      action: made.facts.action,
      rule: made.draft.rule,
      actor: made.attributedTo,
      target: made.draft.target,
    },
  };
}

/** Where a source's todo writes back: its source, its target, the rule that made it. */
export function sourceDestinationOf(todo: Todo): Destination | null {
  // Written by the intake itself, so trusted as it stands.
  const meta = todo.meta.source as SourceTodoMeta | undefined;
  return meta?.target ? { source: meta.name, target: meta.target, rule: meta.rule } : null;
}
