import { describe, expect, test } from 'vitest';
import {
  SLACK_TIMESTAMP_TOLERANCE_SECONDS,
  verifySlackSignature,
} from '../../src/integrations/slack/verify-slack-request.js';
import { slackSignature } from './support/fake-slack.js';

const secret = 'a'.repeat(32);
const body = Buffer.from('payload=%7B%7D');
const now = 1_800_000_000;

function signedAt(timestamp: number, nowMs: number) {
  return verifySlackSignature(
    secret,
    { signature: slackSignature(secret, timestamp, body), timestamp: String(timestamp) },
    body,
    nowMs,
  );
}

// The end-to-end test of stale presses (approvals.test.ts) once signed a press exactly 301 s
// ahead of the second it read, and the server — a fraction of a second later — found it 300.x s
// ahead, inside the window: the window's edge is tested here, against a fixed clock.
describe('slack signature window flaky at its edge', () => {
  test('a signature exactly five minutes old or ahead is accepted, one second more is not', () => {
    const edge = SLACK_TIMESTAMP_TOLERANCE_SECONDS;
    expect(signedAt(now - edge, now * 1000)).toEqual({ ok: true });
    expect(signedAt(now + edge, now * 1000)).toEqual({ ok: true });
    expect(signedAt(now - edge - 1, now * 1000)).toMatchObject({ ok: false });
    expect(signedAt(now + edge + 1, now * 1000)).toMatchObject({ ok: false });
  });

  test('a signer that floors its clock to the second loses the fraction it dropped', () => {
    // Signed at 0.7 s into second `now`, stamped `now + 301`; the server reads its clock 0.4 s
    // later, 1.1 s into it: the stamp is 299.9 s ahead, inside the window.
    const ahead = now + SLACK_TIMESTAMP_TOLERANCE_SECONDS + 1;
    expect(signedAt(ahead, now * 1000 + 700)).toMatchObject({ ok: false });
    expect(signedAt(ahead, now * 1000 + 1100)).toEqual({ ok: true });
  });
});
