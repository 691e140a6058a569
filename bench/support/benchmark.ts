/** One benchmark the runner knows about: `run` does the work and returns the table to print. */
export interface Benchmark {
  name: string;
  run(url: string): Promise<string>;
}
