/**
 * A comment is for switchboard when its first word is the command (`/switchboard …`), or it
 * mentions the name (`@switchboard`) as a whole word: not inside an email address, a longer
 * name or a path. Either may be null (turned off). The same on every provider that has comments.
 */
export function addressesSwitchboard(
  body: string,
  rule: { mention: string | null; command?: string | null },
): boolean {
  const text = body.trimStart();
  if (rule.command && new RegExp(`^${escape(rule.command)}(?=\\s|$)`, 'i').test(text)) return true;
  return (
    rule.mention !== null &&
    new RegExp(`(^|[^\\w@/.-])${escape(rule.mention)}(?![\\w-])`, 'i').test(body)
  );
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
