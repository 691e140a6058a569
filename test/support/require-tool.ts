/**
 * The tool a named test step drives (a proxy, a pooler, a terminal): missing, the file fails at
 * once with one line saying how to install it, and the step counts it. It never skips in silence.
 */
export function requireTool(name: string, found: boolean, install: string): void {
  if (!found) throw new Error(`${name} is not installed: ${install} (.ci/run installs it)`);
}
