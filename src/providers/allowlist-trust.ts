import type { EventActor, Trust } from './provider.js';
import { includesLogin } from './same-login.js';

/**
 * Trust where the provider says nothing of how an author relates to the work (every provider
 * but GitHub): an allowlist. A bot is trusted only on `trust.bots`; a human makes a pending
 * todo when they, and the author of the text the todo carries where the payload names one, are
 * on `trust.logins`, else a quarantined one. Who is named nowhere is the source's owner, where
 * the provider says so (Standard Webhooks: the owner's own events), else nobody.
 */
export function allowlistTrust(
  actor: EventActor | null,
  author: string | null | undefined,
  trust: { logins: string[]; bots: string[] },
  owner: string | null,
): Trust {
  if (!actor)
    return owner ? { outcome: 'trusted', attributedTo: owner } : { outcome: 'unattributed' };
  if (actor.bot) {
    return includesLogin(trust.bots, actor.login)
      ? { outcome: 'trusted', attributedTo: actor.login }
      : { outcome: 'bot', reason: `${actor.login} is a bot not on this source's trust.bots` };
  }
  const untrusted = [actor.login, ...(author ? [author] : [])].find(
    (login) => !includesLogin(trust.logins, login),
  );
  if (!untrusted) return { outcome: 'trusted', attributedTo: actor.login };
  return {
    outcome: 'untrusted',
    attributedTo: actor.login,
    reason:
      untrusted === actor.login
        ? `${untrusted} is not on this source's trust.logins`
        : `${actor.login} acted on text by ${untrusted}, who is not on this source's trust.logins`,
  };
}
