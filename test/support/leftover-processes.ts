import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Set by the global setup to a value of the run's own: every process the run starts (vitest's
 * workers, `switchboard up`, channels, PostgreSQL, Chromium) inherits it in its environment, so
 * those left running are found after the run, though orphaned to init by then. (Children given
 * an environment of their own carry it explicitly: runMark().)
 */
export const RUN_MARK = 'TEST_RUN_ID';

/** The mark, for a child started with an environment of its own. */
export function runMark(): Record<string, string> {
  const id = process.env[RUN_MARK];
  return id ? { [RUN_MARK]: id } : {};
}

/** Processes (other than this one and its descendants) whose environment carries the mark. */
async function marked(id: string): Promise<Map<number, string>> {
  const needle = `${RUN_MARK}=${id}\0`;
  const found = new Map<number, string>();
  const parents = new Map<number, number>();
  let pids: number[];
  try {
    pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number);
  } catch {
    return found; // no /proc: not Linux, nothing to check
  }
  for (const pid of pids) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      parents.set(pid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      if (!(await readFile(`/proc/${pid}/environ`, 'latin1')).includes(needle)) continue;
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ');
      found.set(pid, cmdline.trim());
    } catch {
      // ended meanwhile, or not ours to read
    }
  }
  // This process's own children (vitest's tooling, workers ending) end with it.
  for (const pid of found.keys()) {
    for (let at = pid; at > 1; at = parents.get(at) ?? 0) {
      if (at === process.pid) {
        found.delete(pid);
        break;
      }
    }
  }
  return found;
}

/**
 * After the run: every process a test started must have ended with its test. Those still
 * running after a moment's grace (one that was exiting as its test ended) are named, one line
 * each, killed, and fail the run.
 */
export async function failOnLeftoverProcesses(id: string): Promise<void> {
  let left = await marked(id);
  for (let waited = 0; left.size > 0 && waited < 2_000; waited += 100) {
    await sleep(100);
    left = await marked(id);
  }
  if (left.size === 0) return;
  for (const [pid, command] of left) {
    console.error(`left running after the tests: pid ${pid}: ${command}`);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // ended meanwhile
    }
  }
  // vitest reports an error thrown here ("error during close") but keeps its exit status.
  process.exitCode = 1;
  throw new Error(
    `${left.size} process${left.size === 1 ? ' was' : 'es were'} left running by the tests (named above, and killed)`,
  );
}
