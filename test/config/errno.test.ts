/** errorCode: the errno code of a Node system error, and nothing for anything else. */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { errorCode } from "../../src/config/errno.ts"

const thrownBy = (f: () => unknown): unknown => {
  try {
    f()
  } catch (error) {
    return error
  }
  throw new Error("expected a throw")
}

describe("errorCode", () => {
  it("gives the code of a real system error", () => {
    const missing = path.join(os.tmpdir(), `intercom-errno-${process.pid}`, "nope")
    assert.strictEqual(errorCode(thrownBy(() => fs.readFileSync(missing))), "ENOENT")
    assert.strictEqual(errorCode(thrownBy(() => process.kill(-999_999, 0))), "ESRCH")
  })

  it("gives the code of any object whose code is a string, Error or not", () => {
    assert.strictEqual(errorCode({ code: "EADDRINUSE" }), "EADDRINUSE")
    assert.strictEqual(errorCode(Object.assign(new Error("x"), { code: "EPERM" })), "EPERM")
  })

  it("is undefined for an error without a string code, and for non-objects", () => {
    for (const value of [new Error("plain"), { code: 13 }, { code: undefined }, {}, null, undefined, "EPERM", 1]) {
      assert.isUndefined(errorCode(value), String(value))
    }
  })
})
