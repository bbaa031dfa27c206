/**
 * `broker.pid` as the broker, the client's auto-spawn and `intercom broker
 * status`/`stop` read it: one strict reader, so "12a" names no process for
 * any of them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { isProcessAlive, parsePid, readPidFile } from "../../src/config/pidFile.ts"
import { tempDir } from "../support/broker.ts"

const firstLine = (text: string): string => text.split("\n", 1)[0] ?? ""

describe("parsePid", () => {
  it("property: only a canonical positive decimal integer on the first line is accepted", () => {
    const numberish = fc.string({
      unit: fc.constantFrom("0", "1", "7", "9", "-", "+", " ", "\t", "\n", "\r", ".", "e", "x", "a"),
      maxLength: 16
    })
    fc.assert(fc.property(fc.oneof(numberish, fc.string()), (text) => {
      const pid = parsePid(text)
      if (pid !== undefined) {
        assert.isTrue(pid > 0 && Number.isSafeInteger(pid))
        assert.strictEqual(String(pid), firstLine(text))
      }
    }))
  })

  it("property: every positive safe integer is read back, whatever follows its first line", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.string(), (pid, rest) => {
      assert.strictEqual(parsePid(String(pid)), pid)
      assert.strictEqual(parsePid(`${pid}\n${rest}`), pid)
    }))
  })

  it("reads the pid line of pi-intercom's two-line format (C-BRK-22)", () => {
    assert.strictEqual(parsePid("41230\nlinux-v1 3f1c 4026531836 4026531834 99817\n"), 41230)
  })

  it("rejects what parseInt would have read as a pid", () => {
    for (const text of ["12a", " 12", "12 ", "012", "+12", "12\r\n", "1e3", "0x1f", "0", "-5", "", "\n12"]) {
      assert.isUndefined(parsePid(text), JSON.stringify(text))
    }
  })
})

describe("readPidFile", () => {
  it.effect("reads a valid file, and gives undefined for a missing, unparsable or unreadable one", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("intercom-pidfile-")
      const write = (name: string, content: string): string => {
        const file = path.join(dir, name)
        fs.writeFileSync(file, content)
        return file
      }
      assert.strictEqual(yield* readPidFile(write("good.pid", "41230")), 41230)
      assert.isUndefined(yield* readPidFile(path.join(dir, "missing.pid")))
      assert.isUndefined(yield* readPidFile(write("bad.pid", "12a")))
      assert.isUndefined(yield* readPidFile(dir)) // a directory: EISDIR
    }))
})

describe("isProcessAlive", () => {
  it.effect("is true for this process and false for one that has exited", () =>
    Effect.gen(function*() {
      assert.isTrue(yield* isProcessAlive(process.pid))
      const exited = spawnSync(process.execPath, ["-e", ""]).pid
      assert.isDefined(exited)
      if (exited !== undefined) assert.isFalse(yield* isProcessAlive(exited))
    }))

  it.effect("is false for 0, negative numbers (process groups), fractions and numbers past the pid range", () =>
    Effect.gen(function*() {
      for (const pid of [0, -1, -process.pid, 1.5, 2 ** 31, Number.NaN]) {
        assert.isFalse(yield* isProcessAlive(pid), String(pid))
      }
    }))
})
