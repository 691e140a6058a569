/* global process, console */
// Reads vitest's JSON report and its printed output; prints "PASSED FAILED" on one line, and on
// stderr what was counted as failed beyond the failed tests. Failed: every failed test, every
// file that failed outside its tests (in beforeAll or at import: its tests are only skipped), and
// every unhandled error vitest caught. No report counts nothing: .ci/run then goes by the exit
// status of vitest.
import { readFileSync } from 'node:fs';

const [reportFile, logFile] = process.argv.slice(2);
let passed = 0;
let failed = 0;
try {
  const report = JSON.parse(readFileSync(reportFile, 'utf8'));
  passed = report.numPassedTests;
  failed = report.numFailedTests;
  for (const file of report.testResults) {
    if (file.status === 'failed' && !file.assertionResults.some((t) => t.status === 'failed')) {
      console.error(`::: failed outside its tests: ${file.name}`);
      failed++;
    }
  }
} catch (error) {
  console.error(`::: no test report: ${error.message}`);
}
const caught = /Vitest caught (\d+) unhandled errors?/.exec(readFileSync(logFile, 'utf8'));
if (caught) {
  console.error(`::: unhandled errors: ${caught[1]}`);
  failed += Number(caught[1]);
}
console.log(passed, failed);
