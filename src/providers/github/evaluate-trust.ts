import type { Origin } from '../provider.js';
import { includesLogin } from '../same-login.js';
import type { RepositoryConfig } from './repository-config.js';

export interface Sender {
  login: string;
  /** `User`, `Bot`, `Organization`, `Mannequin`. */
  type: string;
}

/**
 * - `trusted`: the event becomes a pending todo;
 * - `untrusted`: a quarantined todo, until a human releases it;
 * - `bot`: nothing (a bot that is not allowlisted).
 */
export type Trust = 'trusted' | 'untrusted' | 'bot';

export function isBot(sender: Sender): boolean {
  return sender.type === 'Bot' || /\[bot\]$/i.test(sender.login);
}

export function evaluateTrust(
  sender: Sender,
  origin: Origin,
  trust: RepositoryConfig['trust'],
): Trust {
  if (isBot(sender)) {
    if (!includesLogin(trust.bots, sender.login)) return 'bot';
    // Allowlisting vouches for the bot's own text, not for code from a fork it reports on.
    return 'sameRepository' in origin && !origin.sameRepository ? 'untrusted' : 'trusted';
  }
  // Organizations and mannequins (imported users) are not someone who can vouch for work.
  if (sender.type !== 'User') return 'untrusted';
  if ('sameRepository' in origin) return origin.sameRepository ? 'trusted' : 'untrusted';
  return (trust.associations as readonly string[]).includes(origin.association)
    ? 'trusted'
    : 'untrusted';
}
