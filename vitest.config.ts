import { defineConfig } from "vitest/config"

/** Effect's default logger line for an informational event, e.g. an in-process broker's "session joined". */
const effectInfoLine = /^\[\d\d:\d\d:\d\d\.\d+\] INFO \(#\d+\):/

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    // Three workers on the 2-core CI machine: most long files wait on child processes and sockets,
    // not on the CPU (the suite took 9 min 40 s with two; docs/testing.md).
    maxWorkers: 3,
    hookTimeout: 30_000,
    // In-process brokers log every join and leave; thousands of such lines would bury
    // real failures in CI output. Warnings and errors still print.
    onConsoleLog: (log) => !effectInfoLine.test(log)
  }
})
