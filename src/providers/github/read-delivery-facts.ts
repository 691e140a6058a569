import { z } from 'zod';
import type { Sender } from './evaluate-trust.js';

/** What every delivery is recorded with, whatever its event: never the payload itself. */
export interface DeliveryFacts {
  deliveryId: string;
  event: string;
  action: string | null;
  repository: {
    id: number;
    owner: string;
    name: string;
    /** owner/name */
    fullName: string;
    htmlUrl: string;
  } | null;
  sender: Sender | null;
  installationId: number | null;
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

export function readDeliveryFacts(
  deliveryId: string,
  event: string,
  payload: unknown,
): DeliveryFacts {
  const fields = (typeof payload === 'object' && payload !== null ? payload : {}) as Record<
    string,
    unknown
  >;
  const repository = Repository.parse(fields.repository ?? null);
  return {
    deliveryId,
    event,
    action: Action.parse(fields.action ?? null),
    repository: repository && {
      id: repository.id,
      owner: repository.owner.login,
      name: repository.name,
      fullName: repository.full_name,
      htmlUrl: repository.html_url,
    },
    sender: SenderSchema.parse(fields.sender ?? null),
    installationId: Installation.parse(fields.installation ?? null)?.id ?? null,
  };
}
