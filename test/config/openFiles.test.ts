/**
 * The open-file limit parser and the broker's start-up warning for a session
 * cap above it (src/config/openFiles.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { BROKER_OWN_FILES, parseOpenFileLimit, sessionCapNote, sessionCapWarning } from "../../src/config/openFiles.ts"

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max open files            20000                20000                files     
Max locked memory         8388608              8388608              bytes     
`

describe("open files", () => {
  it("parseOpenFileLimit reads the soft limit of the 'Max open files' line", () => {
    assert.strictEqual(parseOpenFileLimit(LIMITS), 20_000)
    assert.strictEqual(parseOpenFileLimit(LIMITS.replace("Max open files            20000", "Max open files            1024")), 1024)
  })

  it("parseOpenFileLimit is undefined for 'unlimited' or a missing line", () => {
    assert.isUndefined(parseOpenFileLimit(LIMITS.replace("Max open files            20000", "Max open files            unlimited")))
    assert.isUndefined(parseOpenFileLimit("Max cpu time              unlimited            unlimited            seconds\n"))
    assert.isUndefined(parseOpenFileLimit(""))
  })

  it("sessionCapWarning names the cap, the limit, how many sessions fit and what to do", () => {
    const warning = sessionCapWarning(50_000, 20_000)
    assert.isDefined(warning)
    assert.include(warning, "50000")
    assert.include(warning, "20000 files (ulimit -n)")
    assert.include(warning, `about ${20_000 - BROKER_OWN_FILES} sessions`)
    assert.include(warning, `ulimit -n ${50_000 + BROKER_OWN_FILES}`)
    assert.include(warning, `--max-sessions to ${20_000 - BROKER_OWN_FILES}`)
  })

  it("sessionCapWarning says nothing when the limit holds the cap and the broker's own files, or is unknown", () => {
    assert.isUndefined(sessionCapWarning(50_000, 50_000 + BROKER_OWN_FILES))
    assert.isDefined(sessionCapWarning(50_000, 50_000 + BROKER_OWN_FILES - 1))
    assert.isUndefined(sessionCapWarning(50_000, undefined))
  })

  it("sessionCapNote states the sessions the limit holds below the default cap, and nothing when it holds the cap", () => {
    assert.strictEqual(
      sessionCapNote(50_000, 20_000),
      `Open-file limit 20000 (ulimit -n): this broker holds about ${20_000 - BROKER_OWN_FILES} sessions, below its default cap of 50000; ` +
        `a connection past that is refused (EMFILE). For more, raise the limit (ulimit -n ${50_000 + BROKER_OWN_FILES}, or LimitNOFILE= in a systemd unit).`
    )
    assert.isUndefined(sessionCapNote(50_000, 50_000 + BROKER_OWN_FILES))
    assert.isUndefined(sessionCapNote(50_000, undefined))
  })
})
