/** The server answered with a refusal: `{error, code}` and its HTTP status. */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** How long the server asked to wait before asking again (its Retry-After), if it did. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** The server could not be reached at all (refused, unknown host, timed out, cut off). */
export class ConnectionError extends Error {
  override readonly name = 'ConnectionError';
}

/**
 * The server answered, but its TLS could not be trusted (a self-signed or unknown CA, an expired
 * certificate, another host's) or was not TLS at all. Not an outage: waiting does not mend it.
 */
export class CertificateError extends Error {
  override readonly name = 'CertificateError';
}

/** Neither the environment nor the credentials file says which server to use and how. */
export class CredentialsError extends Error {
  override readonly name = 'CredentialsError';
}
