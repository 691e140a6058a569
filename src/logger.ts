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
