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
 * The server's logger: pino, JSON lines on stderr. Anything that could carry a credential is
 * censored by path, as a second line of defence behind never logging it in the first place.
 */
export async function createPinoLogger(level: string) {
  const { pino } = await import('pino');
  return pino(
    {
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
    },
    pino.destination(2),
  );
}
