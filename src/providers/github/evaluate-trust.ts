import type { RepositoryConfig } from './repository-config.js';

export interface Sender {
  login: string;
  /** `User`, `Bot`, `Organization`, `Mannequin`. */
  type: string;
}

/**
 * What the todo's text and work come from. Issues, comments, pull requests and reviews carry
 * their author's association with the repository. CI events carry none; what matters there is
 * whose code ran: a branch of the repository itself (someone with push access put it there) or
 * a fork (anyone).
 */
export type Origin = { association: string } | { sameRepository: boolean };

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
    const login = sender.login.toLowerCase();
    if (!trust.bots.some((bot) => bot.toLowerCase() === login)) return 'bot';
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
