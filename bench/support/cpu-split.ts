import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { median } from './percentile.js';

/**
 * Where the CPU time of a measured stretch went, in ms: the serving process under test, this
 * process (the benchmark's clients or senders, and any worker it runs itself), PostgreSQL's
 * processes on this machine, and the machine as a whole. Throughput on a shared machine is bound
 * by their sum, so this says which side a ratio's gap is on.
 */
export interface CpuSplit {
  /** Null: nothing serves in a process of its own (graphile-worker, bare statements). */
  server: number | null;
  clients: number;
  /** Null: no PostgreSQL process runs on this machine (BENCH_DATABASE_URL points elsewhere). */
  postgres: number | null;
  machine: number;
}

/** Linux counts CPU time in /proc in ticks of 1/100 s (USER_HZ, on every architecture Node runs on). */
const TICK_MS = 10;

/** utime, stime (and with `children`, cutime and cstime: children it has waited for), in ticks. */
function processTicks(stat: string, children: boolean): number {
  // The command name may hold spaces: the fields are counted from after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime is field 14 of stat(5), the 12th after the name; stime, cutime and cstime follow.
  const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number) as [
    number,
    number,
    number,
    number,
  ];
  return utime + stime + (children ? cutime + cstime : 0);
}

function readStat(pid: number | string): string | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null; // it exited
  }
}

/**
 * Every `postgres` process's time, with the children the postmaster has reaped (a backend whose
 * connection closed during the stretch). Null when there is none.
 */
function postgresTicks(): number | null {
  let ticks: number | null = null;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(entry);
    if (!stat?.includes(' (postgres) ')) continue;
    ticks = (ticks ?? 0) + processTicks(stat, true);
  }
  return ticks;
}

/** The machine's busy time: every CPU's, all but idle and iowait (the `cpu` line of /proc/stat). */
function machineTicks(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const [user, nice, system, , , irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return user! + nice! + system! + irq! + softirq! + (steal ?? 0);
}

/** Every part's time since it started (the process's, or since boot for the machine). */
function read(serverPid: number | null): CpuSplit {
  const serverStat = serverPid === null ? null : readStat(serverPid);
  const self = process.cpuUsage();
  const postgres = postgresTicks();
  return {
    server: serverStat === null ? null : processTicks(serverStat, false) * TICK_MS,
    clients: (self.user + self.system) / 1000,
    postgres: postgres === null ? null : postgres * TICK_MS,
    machine: machineTicks() * TICK_MS,
  };
}

/**
 * Starts measuring; the function returned reads what was spent since. `serverPid`: the process
 * under test (null: none of its own). Null off Linux, where there is no /proc to read.
 */
export function startCpuSplit(serverPid: number | null): (() => CpuSplit) | null {
  if (!existsSync('/proc/stat')) return null;
  const start = read(serverPid);
  return () => {
    const end = read(serverPid);
    const minus = (a: number | null, b: number | null) => (a === null || b === null ? null : a - b);
    return {
      server: minus(end.server, start.server),
      clients: end.clients - start.clients,
      postgres: minus(end.postgres, start.postgres),
      machine: end.machine - start.machine,
    };
  };
}

/** Each part per unit of work (a todo, a delivery): the median of the rounds' own figures. */
export function cpuPerUnit(rounds: CpuSplit[], units: number): CpuSplit | null {
  if (rounds.length === 0) return null;
  const part = (pick: (split: CpuSplit) => number | null) => {
    const values = rounds.map(pick);
    if (values.some((value) => value === null)) return null;
    return median((values as number[]).map((value) => value / units));
  };
  return {
    server: part((split) => split.server),
    clients: part((split) => split.clients)!,
    postgres: part((split) => split.postgres),
    machine: part((split) => split.machine)!,
  };
}

/** A markdown table row's cells: server | clients | PostgreSQL | machine, in ms ('—' for none). */
export function cpuCells(split: CpuSplit | null): string {
  if (!split) return '— | — | — | —';
  const ms = (value: number | null) => (value === null ? '—' : value.toFixed(2));
  return [split.server, split.clients, split.postgres, split.machine].map(ms).join(' | ');
}
