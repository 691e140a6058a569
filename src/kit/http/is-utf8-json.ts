import { parse } from 'content-type';

/**
 * Whether a Content-Type header says UTF-8 JSON: `application/json`, with no charset (JSON is
 * UTF-8) or a UTF-8 one. Anything else — another type, another charset, a header that does not
 * parse — is not, and its body is refused rather than decoded some other way.
 */
export function isUtf8Json(header: string | undefined): boolean {
  try {
    const { type, parameters } = parse(header ?? '');
    const charset = parameters.charset?.toLowerCase();
    return type === 'application/json' && (charset === undefined || /^utf-?8$/.test(charset));
  } catch {
    return false;
  }
}
