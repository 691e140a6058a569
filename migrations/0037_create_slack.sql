-- Slack as a surface for humans (issue 24): the app's credentials, sealed as sources' secrets
-- are; each human's Slack user, linked before any press of theirs decides anything; the message
-- each approval was sent as, so that every verdict, expiry and cancel can update it; where each
-- human wants to be told; and Slack as a kind of write-back target of the one outbox.

-- The Slack app of this deployment: one workspace. Its bot token, signing secret and OAuth
-- client secret are AES-256-GCM sealed under the server key (src/sources/secret-box.ts), never
-- shown again. An app added for the console's install flow (client id and secret) has no bot
-- token, and no workspace, until it is installed.
create table slack_apps (
  id boolean primary key default true
    constraint slack_apps_one_row check (id),
  team_id text
    constraint slack_apps_team_id_is_slacks check (team_id ~ '^[TE][A-Z0-9]{2,30}$'),
  team_name text
    constraint slack_apps_team_name_is_bounded check (length(team_name) <= 200),
  bot_user_id text
    constraint slack_apps_bot_user_id_is_slacks check (bot_user_id ~ '^[UW][A-Z0-9]{2,30}$'),
  bot_token bytea,
  signing_secret bytea not null,
  client_id text
    constraint slack_apps_client_id_is_bounded check (client_id ~ '^[0-9.]{3,64}$'),
  client_secret bytea,
  added_by text not null,
  -- Slack refused the bot token (revoked, the app uninstalled): said once, in the log and on the
  -- console, and nothing more is sent with it until it is replaced.
  token_refused_at timestamptz,
  token_refused_reason text
    constraint slack_apps_token_refused_reason_is_bounded check (length(token_refused_reason) <= 200),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint slack_apps_installed_apps_name_their_workspace
    check ((bot_token is null) = (team_id is null) and (bot_token is null) = (bot_user_id is null)),
  constraint slack_apps_client_secrets_go_with_ids
    check ((client_id is null) = (client_secret is null)),
  constraint slack_apps_refusals_say_why
    check ((token_refused_at is null) = (token_refused_reason is null))
);

-- A human's Slack user: one each way. Deleting the row (unlinking) is immediate: a press is
-- checked against this table when it arrives. `channel_id` is where the human chose to get their
-- approvals, if not in a direct message from the bot.
create table slack_links (
  principal_id bigint primary key references principals (id) on delete cascade,
  team_id text not null
    constraint slack_links_team_id_is_slacks check (team_id ~ '^[TE][A-Z0-9]{2,30}$'),
  slack_user_id text not null
    constraint slack_links_slack_user_id_is_slacks check (slack_user_id ~ '^[UW][A-Z0-9]{2,30}$'),
  linked_via text not null
    constraint slack_links_linked_via_is_known check (linked_via in ('code', 'sign_in')),
  channel_id text
    constraint slack_links_channel_id_is_slacks check (channel_id ~ '^[CG][A-Z0-9]{2,30}$'),
  linked_at timestamptz not null default now(),
  constraint slack_links_one_human_per_slack_user unique (team_id, slack_user_id)
);

-- One-time link codes (`switchboard slack link`): kept as their SHA-256, one per human at a time,
-- gone when used or when a newer one is made.
create table slack_link_codes (
  principal_id bigint primary key references principals (id) on delete cascade,
  hash bytea not null
    constraint slack_link_codes_hash_is_sha256 check (length(hash) = 32),
  expires_at timestamptz not null,
  constraint slack_link_codes_hash_key unique (hash)
);

-- The message an approval was sent as. The row is written with the outbox row that posts it, by
-- the one process whose insert lands; `channel_id` and `ts` once Slack has taken it. `closed_at`:
-- the approval ended (a verdict, an expiry, a cancel) and the update that says so was queued.
create table slack_messages (
  todo_id bigint primary key references todos (id),
  slack_user_id text not null,
  channel_id text,
  ts text
    constraint slack_messages_ts_is_slacks check (ts ~ '^[0-9]{1,12}\.[0-9]{1,8}$'),
  created_at timestamptz not null default now(),
  posted_at timestamptz,
  closed_at timestamptz,
  constraint slack_messages_posted_messages_say_where
    check ((ts is null) = (channel_id is null) and (ts is null) = (posted_at is null))
);

create index slack_messages_open_idx on slack_messages (todo_id) where closed_at is null;

-- Events API deliveries seen: Slack sends an event again (X-Slack-Retry-Num) when it was not
-- answered in 3 s; its event_id says it is the same one. Pruned by age (a retry comes within
-- the hour).
create table slack_events (
  event_id text primary key
    constraint slack_events_event_id_is_bounded check (length(event_id) between 1 and 64),
  received_at timestamptz not null default now()
);

create index slack_events_received_at_idx on slack_events (received_at);

-- Where each human is told of what waits for them; a human with no row has every way on.
create table notification_preferences (
  principal_id bigint primary key references principals (id) on delete cascade,
  web_push boolean not null default true,
  slack boolean not null default true,
  webhook boolean not null default true,
  updated_at timestamptz not null default now()
);

-- The one outbox takes Slack's messages too: an approval's message posted (`message`), and
-- brought up to date when it ends (`message_update`). The target names the approval; what is
-- sent is rendered from the todo when it is sent, so a message never shows a stale state.
alter type write_back_kind add value 'message';
alter type write_back_kind add value 'message_update';

alter table outbox drop constraint outbox_kind_is_a_provider;
alter table outbox add constraint outbox_kind_is_a_target
  check (kind in ('github', 'gitea', 'forgejo', 'gitlab', 'linear', 'standard-webhooks', 'slack'));
