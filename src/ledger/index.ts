// The ledger: todos, leases, approvals, principals and their trail. SQL lives here; nothing
// here knows about HTTP, GitHub, MCP or the CLI.
export * from './actor.js';
export * from './cancel-session-approvals.js';
export * from './cancel-todo.js';
export * from './claim-todo.js';
export * from './complete-todo.js';
export * from './create-todo.js';
export * from './decide-approval.js';
export * from './fail-todo.js';
export * from './get-todo.js';
export * from './heartbeat-todo.js';
export * from './history-position.js';
export * from './ledger-error.js';
export * from './list-todos.js';
export * from '../contract/neutralise-text.js';
export * from './principals.js';
export * from './prune-finished-histories.js';
export * from './record-event.js';
export * from './release-quarantined-todo.js';
export * from './release-todo.js';
export * from './reply-to-todo.js';
export * from './request-approval.js';
export * from './sweep-todos.js';
export * from './todo.js';
export * from './tokens.js';
export * from './vend-principal.js';
export * from './wake-channel.js';
