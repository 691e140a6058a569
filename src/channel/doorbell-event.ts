import type { Doorbell } from '../contract/doorbell.js';
import type { ChannelEvent } from './channel-protocol.js';

/**
 * The channel event a doorbell becomes. Verdicts are not mapped here: one answers a relayed
 * permission prompt or a question of this session's, or is another session's (approval-relay.ts).
 */
export function doorbellEvent(doorbell: Exclude<Doorbell, { type: 'verdict' }>): ChannelEvent {
  switch (doorbell.type) {
    case 'wake':
      return {
        content: doorbell.content,
        meta: {
          event: 'claimable',
          todo_id: doorbell.todo_id,
          queue: doorbell.queue,
          kind: doorbell.kind,
          url: doorbell.url,
        },
      };
    case 'digest':
      return {
        content: doorbell.content,
        meta: {
          event: 'digest',
          todo_ids: doorbell.todos.map((t) => t.todo_id).join(','),
          count: doorbell.todos.length + doorbell.more,
        },
      };
    case 'approval':
      return {
        content: doorbell.content,
        meta: {
          event: 'approval',
          todo_id: doorbell.todo_id,
          queue: doorbell.queue,
          kind: 'approval',
          requested_by: doorbell.requested_by,
        },
      };
  }
}
