import type { EventActor, Facts, RecordColumns } from './provider.js';

/**
 * The facts every provider but GitHub records (GitHub keeps the shape it always had): `subject`
 * is the repository, project or team; `actor` who caused it; `author` the author of the text an
 * agent would act on, where the payload names one (trust weighs it too).
 */
export interface SourceFacts extends Facts {
  subject: string | null;
  actor: EventActor | null;
  author?: string | null;
}

/** A source's row: its subject and actor, as its facts say. */
export function sourceColumns(facts: Facts): RecordColumns {
  const { subject, actor } = facts as SourceFacts;
  return { subject: subject ?? null, actor: actor?.login ?? null, installationId: null };
}
