/**
 * Prints the plain closing line CI reads: "N passed, M failed" (skipped tests are reported, not counted as passed).
 * Written as the process exits, so it comes after Jest's own summary and is the run's last line.
 */
class TotalsReporter {
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `\n${results.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}\n`;
    process.once("exit", () => process.stdout.write(line));
  }
}
module.exports = TotalsReporter;
