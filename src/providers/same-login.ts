/**
 * Whether two logins name the same account: every provider's logins (GitHub's, Gitea's,
 * GitLab's usernames, a Linear user's email) are case-insensitive.
 */
export const sameLogin = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

/** Whether `login` is one of `logins`, as the provider compares them. */
export const includesLogin = (logins: readonly string[], login: string): boolean =>
  logins.some((candidate) => sameLogin(candidate, login));
