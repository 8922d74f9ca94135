/** Prints the plain closing line CI reads: "N passed, M failed" (skipped tests are reported, not counted as passed). */
class TotalsReporter {
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(`\n${results.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}\n`);
  }
}
module.exports = TotalsReporter;
