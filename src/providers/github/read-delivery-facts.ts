import { z } from 'zod';
import type { Facts } from '../provider.js';
import type { Sender } from './evaluate-trust.js';
import { readRuleFields } from './read-rule-fields.js';

/**
 * What every GitHub delivery is recorded with, whatever its event — never the payload itself:
 * its repository, sender and installation, and `fields`, the part of the payload the rules read.
 * The rules run on exactly these, now and when the delivery is explained later.
 */
export interface GitHubFacts extends Facts {
  repository: {
    id: number;
    owner: string;
    name: string;
    /** owner/name */
    fullName: string;
    htmlUrl: string;
  } | null;
  sender: Sender | null;
  installation_id: number | null;
  fields: Record<string, unknown>;
}

// Each part is read on its own and falls back to null, so that an event without a repository
// (an installation event, a ping from an organisation hook) is still recorded.
const Action = z.string().max(100).nullable().catch(null);
const Repository = z
  .object({
    id: z.number().int(),
    name: z.string().max(100),
    full_name: z.string().max(200),
    html_url: z.string().max(500),
    owner: z.object({ login: z.string().max(100) }),
  })
  .nullable()
  .catch(null);
const SenderSchema = z
  .object({ login: z.string().max(100), type: z.string().max(50) })
  .nullable()
  .catch(null);
const Installation = z.object({ id: z.number().int().positive() }).nullable().catch(null);

export function readDeliveryFacts(event: string, payload: Record<string, unknown>): GitHubFacts {
  const repository = Repository.parse(payload.repository ?? null);
  return {
    event,
    action: Action.parse(payload.action ?? null),
    repository: repository && {
      id: repository.id,
      owner: repository.owner.login,
      name: repository.name,
      fullName: repository.full_name,
      htmlUrl: repository.html_url,
    },
    sender: SenderSchema.parse(payload.sender ?? null),
    installation_id: Installation.parse(payload.installation ?? null)?.id ?? null,
    fields: readRuleFields(payload),
  };
}
