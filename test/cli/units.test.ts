/** Small pure pieces of the CLI: /proc/net/unix parsing, exit codes, log lines (pid files: test/config/pidFile.test.ts). */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Logger } from "effect"
import * as CliError from "effect/cli/CliError"
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, ExitCode, exitCodeOf } from "../../src/cli/exit.ts"
import { cliErrorExitCode } from "../../src/cli/programExit.ts"
import { sqliteMissing } from "../../src/cli/foreground.ts"
import { formatLine } from "../../src/cli/logging.ts"
import { socketInodes } from "../../src/cli/processes.ts"
import { privateSocketPath } from "../../src/transport/privateName.ts"

describe("socketInodes", () => {
  const table = [
    "Num       RefCount Protocol Flags    Type St Inode Path",
    "0000000000000000: 00000002 00000000 00010000 0001 01 41001 /tmp/a/intercom/broker.sock",
    "0000000000000000: 00000003 00000000 00000000 0001 03 41007 /tmp/a/intercom/broker.sock",
    "0000000000000000: 00000003 00000000 00000000 0001 03 41008",
    "0000000000000000: 00000002 00000000 00010000 0001 01 52000 /tmp/b/intercom/broker.sock",
    ""
  ].join("\n")

  it("collects the listener and accepted connections bound to the path", () => {
    assert.deepStrictEqual([...socketInodes(table, "/tmp/a/intercom/broker.sock")], ["41001", "41007"])
    assert.deepStrictEqual([...socketInodes(table, "/tmp/b/intercom/broker.sock")], ["52000"])
    assert.strictEqual(socketInodes(table, "/tmp/c.sock").size, 0)
  })

  it("collects those bound to a private name of the path, by any pid, and no other path's", () => {
    const socketPath = "/tmp/d/intercom/broker.sock"
    const line = (inode: number, address: string) =>
      `0000000000000000: 00000002 00000000 00010000 0001 01 ${inode} ${address}`
    const privateTable = [
      "Num       RefCount Protocol Flags    Type St Inode Path",
      line(61001, privateSocketPath(socketPath, 4242)),
      line(61002, privateSocketPath(socketPath, 4194304)),
      line(61003, privateSocketPath("/tmp/d/intercom/other.sock", 4242)),
      line(61004, privateSocketPath("/tmp/e/intercom/broker.sock", 4242)),
      line(61005, socketPath),
      ""
    ].join("\n")
    assert.deepStrictEqual([...socketInodes(privateTable, socketPath)], ["61001", "61002", "61005"])
  })
})

describe("sqliteMissing", () => {
  it("names node:sqlite, this Node's version and what to do when it is not a built-in; nothing otherwise", () => {
    const asked: Array<string> = []
    const message = sqliteMissing((id) => {
      asked.push(id)
      return false
    }, "v20.20.2")
    assert.deepStrictEqual(asked, ["node:sqlite"])
    assert.strictEqual(
      message,
      "The intercom broker needs node:sqlite, which this Node.js (v20.20.2) does not provide. " +
        "Upgrade Node.js to 22.19 or later, the versions effect-intercom supports."
    )
    assert.isUndefined(sqliteMissing(() => true, "v24.21.0"))
  })
})

describe("exitCodeOf", () => {
  it("success and interruption (SIGINT/SIGTERM) exit 0", () => {
    assert.strictEqual(exitCodeOf(Exit.void), EXIT_OK)
    assert.strictEqual(exitCodeOf(Exit.interrupt(1)), EXIT_OK)
  })

  it("ExitCode carries its own code", () => {
    assert.strictEqual(exitCodeOf(Exit.fail(new ExitCode({ code: EXIT_FAILURE }))), 1)
    assert.strictEqual(exitCodeOf(Exit.fail(new ExitCode({ code: 3 }))), 3)
  })

  it("bad invocations exit 2 in the full program (effect/cli's errors)", () => {
    const unknownFlag = new CliError.UnrecognizedOption({ option: "--bogus", suggestions: [], command: ["intercom"] })
    const codeOf = (error: unknown) => exitCodeOf(Exit.fail(error), cliErrorExitCode)
    assert.strictEqual(codeOf(new CliError.ShowHelp({ commandPath: ["intercom"], errors: [unknownFlag] })), EXIT_USAGE)
    assert.strictEqual(codeOf(new CliError.ShowHelp({ commandPath: ["intercom"], errors: [] })), EXIT_USAGE)
    assert.strictEqual(codeOf(unknownFlag), EXIT_USAGE)
    assert.strictEqual(codeOf(new CliError.UserError({ cause: "failed" })), EXIT_FAILURE)
    assert.strictEqual(exitCodeOf(Exit.fail(new ExitCode({ code: 3 })), cliErrorExitCode), 3)
  })

  it("anything else exits 1", () => {
    assert.strictEqual(exitCodeOf(Exit.die(new Error("boom"))), EXIT_FAILURE)
    assert.strictEqual(exitCodeOf(Exit.fail("nope")), EXIT_FAILURE)
  })
})

describe("formatLine", () => {
  it.effect("renders one line: time, level, message, annotations", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make((options) => {
        lines.push(formatLine(options))
      })
      yield* Effect.logInfo("session joined:", "alice").pipe(
        Effect.annotateLogs({ sessionId: "s-1", cwd: "/a b" }),
        Effect.provide(Logger.layer([capture]))
      )
      assert.strictEqual(lines.length, 1)
      assert.match(lines[0] ?? "", /^\d{4}-\d\d-\d\dT[\d:.]+Z INFO session joined: alice sessionId=s-1 cwd="\/a b"$/)
    }))

  it.effect("appends the cause of a failure", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make((options) => {
        lines.push(formatLine(options))
      })
      yield* Effect.logError("failed", Cause.fail(new Error("disk full"))).pipe(Effect.provide(Logger.layer([capture])))
      assert.include(lines[0] ?? "", "ERROR failed")
      assert.include(lines[0] ?? "", "disk full")
    }))
})
