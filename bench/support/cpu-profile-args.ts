/**
 * BENCH_CPU_PROFILE=DIR: the server and the bare references a benchmark starts in processes of
 * their own write V8 CPU profiles into DIR when they exit (open them in Chrome's DevTools), to
 * see where a figure's time goes.
 */
export function cpuProfileArgs(): string[] {
  const dir = process.env.BENCH_CPU_PROFILE;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}
