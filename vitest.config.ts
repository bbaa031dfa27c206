import * as fs from "node:fs"
import { defineConfig } from "vitest/config"

/** Effect's default logger line for an informational event, e.g. an in-process broker's "session joined". */
const effectInfoLine = /^\[\d\d:\d\d:\d\d\.\d+\] INFO \(#\d+\):/

/**
 * Files outside test/pi that `vi.mock` a src module, which a module another file imported
 * first would otherwise hold unmocked: by directory, each file's name without `.test.ts`.
 * clientArgv mocks src/cli/client/run.ts; ask-frame-once wraps src/broker/encode.ts's
 * `messageFrame` in a counter (in a shared worker it counted 0 after another broker file).
 */
const mockingFiles: Readonly<Record<string, ReadonlyArray<string>>> = {
  cli: ["clientArgv"],
  broker: ["ask-frame-once"]
}
/**
 * Files that must start from fresh module state, so they keep vitest's per-file isolation:
 * test/pi (its support sets PI_CODING_AGENT_DIR and PI_* in `process.env` for the file, and it
 * loads pi's own modules) and the files that mock a module (`mockingFiles`).
 */
const needsFreshModules = [
  "test/pi/**/*.test.ts",
  ...Object.entries(mockingFiles).flatMap(([dir, names]) => names.map((name) => `test/${dir}/${name}.test.ts`))
]
/**
 * Every other test file, as include globs: a project's own `exclude` would drop the command
 * line's `--exclude` (e.g. `--exclude "test/zz-review*"`), so the set is spelled as includes.
 */
const sharesModules = [
  "test/*.test.ts",
  ...fs.readdirSync(new URL("./test", import.meta.url), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== "pi")
    .map((entry) => {
      const mocking = mockingFiles[entry.name]
      return mocking === undefined
        ? `test/${entry.name}/**/*.test.ts`
        : `test/${entry.name}/**/!(${mocking.join("|")}).test.ts`
    })
]

export default defineConfig({
  test: {
    testTimeout: 30_000,
    // Three workers on the 2-core CI machine: most long files wait on child processes and sockets,
    // not on the CPU (the suite took 9 min 40 s with two; docs/testing.md). Four measured no
    // better: 95 s against 83 s for 93 files of test/session, test/workflow and test/client
    // (docs/testing.md, "Suite time").
    maxWorkers: 3,
    // "forks", not "threads": src/transport/UnixSocket.ts and src/config/FileLock.ts set
    // process.umask, which a worker thread may not.
    pool: "forks",
    hookTimeout: 30_000,
    // In-process brokers log every join and leave; thousands of such lines would bury
    // real failures in CI output. Warnings and errors still print.
    onConsoleLog: (log) => !effectInfoLine.test(log),
    projects: [
      {
        extends: true,
        test: {
          name: "shared",
          include: sharesModules,
          // One worker process runs many files and imports effect and src once, not once per
          // file: with isolation, importing was 46-68 % of vitest's time. The whole suite went
          // from 14 min 50 s (749 s of CPU) to 9 min 45 s (459 s of CPU) at the same load
          // (docs/testing.md, "Suite time"). src keeps no module-level mutable state, and no
          // file here mocks a module, or leaves process.env, a spy or a listener changed.
          isolate: false
        }
      },
      {
        extends: true,
        test: {
          name: "isolated",
          include: needsFreshModules,
          isolate: true
        }
      }
    ]
  }
})
