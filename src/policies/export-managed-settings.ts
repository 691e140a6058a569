import { parseRule, type PolicyRule } from './parse-rule.js';

/**
 * The rules as a fragment for Claude Code's `managed-settings.d/` directory (beside
 * `managed-settings.json` in `/etc/claude-code/` on Linux and WSL, `/Library/Application
 * Support/ClaudeCode/` on macOS, `C:\Program Files\ClaudeCode\` on Windows). A fragment holds
 * the same keys as a settings file; Claude Code merges the `*.json` files in alphabetical order
 * and combines `permissions.allow`, `ask` and `deny` lists, dropping duplicates, so a team can
 * drop this file in (say, as `50-switchboard.json`) and Claude Code enforces the same rules.
 */
export interface ManagedSettingsFragment {
  permissions: { allow: string[]; ask: string[]; deny: string[] };
}

export function exportManagedSettings(rules: PolicyRule[]): ManagedSettingsFragment {
  const permissions: ManagedSettingsFragment['permissions'] = { allow: [], ask: [], deny: [] };
  for (const rule of rules) {
    parseRule(rule.text);
    const list = permissions[rule.effect];
    const text = rule.text.trim();
    if (!list.includes(text)) list.push(text);
  }
  return { permissions };
}
