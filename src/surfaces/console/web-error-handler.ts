import type { ErrorRequestHandler } from 'express';
import { ZodError } from 'zod';
import { HttpError } from '../../kit/http/http-error.js';
import { LedgerError } from '../../data/index.js';
import type { Logger } from '../../platform/logger.js';
import { html } from '../../kit/pages/html.js';
import type { RenderPage } from '../../kit/pages/render-page.js';
import { problemBody } from '../../kit/pages/sign-in-page.js';

const STATUS: Record<string, number> = {
  invalid: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  lease_lost: 409,
};
const TITLES: Record<number, string> = {
  400: 'Not accepted',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Not now',
  413: 'Too large',
  500: 'Something went wrong',
};

/**
 * A console request that failed gets a page (or, for htmx, a message in the page's alert area)
 * that says why in one sentence: never a stack trace or a statement. Details only in the log.
 */
export function webErrorHandler(log: Logger, render: RenderPage): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) return next(error);
    let status = 500;
    let message = 'Internal error; the server log has the details. Nothing was changed.';
    if (error instanceof LedgerError) {
      status = STATUS[error.code] ?? 400;
      message = error.message;
    } else if (error instanceof HttpError) {
      status = error.status;
      message = error.message;
    } else if (error instanceof ZodError) {
      status = 400;
      const issue = error.issues[0]!;
      message = `The form is not right${issue.path.length ? ` (${issue.path.join('.')})` : ''}: ${issue.message}`;
    } else if ((error as { type?: unknown }).type === 'entity.too.large') {
      status = 413;
      message = 'The form is too large.';
    } else if (error instanceof URIError) {
      status = 400;
      message = 'The address is not valid.';
    } else {
      log.error({ err: error, method: req.method, path: req.path }, 'console request failed');
    }
    if (req.get('hx-request') === 'true') {
      // htmx swaps no error answer; this one goes into the page's alert area instead.
      res.set('hx-retarget', '#flash').set('hx-reswap', 'innerHTML');
      return res
        .status(200)
        .type('html')
        .send(String(html`<p>${message}</p>`));
    }
    render(res, { status, title: TITLES[status] ?? 'Refused', body: problemBody(message) });
  };
}
