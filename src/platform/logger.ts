/**
 * The logging surface the core needs: pino's call shape (`log.info(fields, message)`), so the
 * server can hand its pino logger straight in and tests can pass a silent one.
 */
export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/**
 * The server's logger: pino on stderr — readable lines when stderr is a terminal (pino-pretty),
 * JSON lines otherwise, for log collectors and for the tests, which read them. Anything that
 * could carry a credential is censored by path, as a second line of defence behind never
 * logging it in the first place.
 */
export async function createPinoLogger(
  level: string,
  { pretty = process.stderr.isTTY === true }: { pretty?: boolean } = {},
) {
  const { pino } = await import('pino');
  const options = {
    level,
    name: 'switchboard',
    redact: {
      paths: [
        'token',
        '*.token',
        'authorization',
        '*.authorization',
        '*.headers.authorization',
        'password',
        '*.password',
        'privateKey',
        '*.privateKey',
        'secret',
        '*.secret',
      ],
      censor: '[redacted]',
    },
  };
  if (!pretty) return pino(options, pino.destination(2));
  // Loaded only for a terminal. Synchronous, as pino.destination is: the last line before an
  // exit is not lost.
  const { default: pinoPretty } = await import('pino-pretty');
  return pino(
    options,
    pinoPretty({
      destination: 2,
      sync: true,
      translateTime: 'SYS:HH:MM:ss',
      ignore: 'pid,hostname,name',
      singleLine: true,
    }),
  );
}
