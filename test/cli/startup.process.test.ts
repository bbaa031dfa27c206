/**
 * The built executable's start: its compile cache (private per user, never a
 * reason to fail), the `send` and `broker` bundles' own code caches, what the
 * fast paths' bundles leave out. A Node.js older than the package supports
 * (one without the compile cache API among them) runs no command at all:
 * nodeVersion.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Schedule } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { createHash } from "node:crypto"
import { brokerCacheFile } from "../../src/cli/brokerBundle.ts"
import { privateCacheDir } from "../../src/cli/compileCache.ts"
import { CODE_CACHE_DELAY } from "../../src/cli/foreground.ts"
import { sendCacheFile } from "../../src/cli/sendBundle.ts"
import { childEnv, runChild } from "../support/process.ts"
import { main, mode, registerSession, startBroker, tempDir } from "./support.ts"

const BIN = path.dirname(main())
const uid = process.getuid?.() ?? -1

/** The test processes' environment without the shared test cache (childEnv sets NODE_COMPILE_CACHE), TMPDIR = `tmp`. */
const envWithTmp = (tmp: string): Record<string, string> => {
  const { NODE_COMPILE_CACHE: _shared, ...env } = childEnv({ TMPDIR: tmp })
  return env
}

/** An agent dir and TMPDIR of their own, and where a broker started there keeps its bundle's code cache. */
const brokerCacheSetUp = Effect.map(tempDir("ei-bc-"), (tmp) => {
  const agentDir = path.join(tmp, "agent")
  const cacheFile = brokerCacheFile(path.join(BIN, "broker.cjs"), {
    cacheDir: privateCacheDir(tmp, uid),
    getBuiltinModule: process.getBuiltinModule
  }) ?? ""
  return { agentDir, cacheFile, env: { ...envWithTmp(tmp), HOME: tmp, PI_CODING_AGENT_DIR: agentDir } }
})

describe("startup of the built executable", () => {
  it("the broker and send bundles hold none of effect/cli (only the full program loads it)", () => {
    for (const bundle of ["broker.cjs", "client.cjs"]) {
      const text = fs.readFileSync(path.join(BIN, bundle), "utf8")
      assert.notInclude(text, "~effect/cli/", bundle)
    }
  })

  it("the broker and send bundles import nothing dynamically (cachedBundle.ts runs them as scripts, which have no module loader)", () => {
    for (const bundle of ["broker.cjs", "client.cjs"]) {
      const text = fs.readFileSync(path.join(BIN, bundle), "utf8")
      assert.notMatch(text, /\bimport\(/, bundle)
    }
  })

  it("the broker and send bundles build no Intl.Segmenter (terminalWidth.ts's, which only `intercom top` needs)", () => {
    for (const bundle of ["broker.cjs", "client.cjs"]) {
      const text = fs.readFileSync(path.join(BIN, bundle), "utf8")
      assert.notInclude(text, "Intl.Segmenter", bundle)
    }
  })

  it("the broker and send bundles are ASCII, so that their text decodes to a one-byte string", () => {
    for (const bundle of ["broker.cjs", "client.cjs"]) {
      const text = fs.readFileSync(path.join(BIN, bundle), "utf8")
      const first = /[^\x00-\x7f]/.exec(text)
      assert.isNull(first, `${bundle}: non-ASCII at ${first?.index}: ${text.slice((first?.index ?? 0) - 40, (first?.index ?? 0) + 10)}`)
    }
  })

  it.live("a broker writes the code cache of its start as it stops; the next broker uses it as it is", () =>
    Effect.gen(function*() {
      const { agentDir, cacheFile, env } = yield* brokerCacheSetUp
      const run = Effect.scoped(Effect.gen(function*() {
        // No --idle-exit: that flag takes the full program, which runs no bundle (argv.ts).
        const broker = yield* startBroker(["--dir", agentDir], env)
        yield* registerSession(path.join(agentDir, "intercom", "broker.sock"), "bob")
        yield* broker.kill("SIGTERM")
        const outcome = yield* broker.waitExit()
        assert.strictEqual(outcome.code, 0, broker.stderr())
      }))

      yield* run // stopped well before CODE_CACHE_DELAY: the cache is written as it stops
      const bundleHash = createHash("sha256").update(fs.readFileSync(path.join(BIN, "broker.cjs"))).digest()
      assert.isTrue(fs.readFileSync(cacheFile).subarray(0, 32).equals(bundleHash))
      assert.strictEqual(mode(cacheFile), 0o600)
      const written = fs.statSync(cacheFile)

      yield* run
      const after = fs.statSync(cacheFile)
      assert.strictEqual(after.ino, written.ino, "V8 took the cache: it was not written again")
      assert.strictEqual(after.mtimeMs, written.mtimeMs)
    }), 30_000)

  it.live("a broker that keeps running writes the code cache of its start once it has run a while", () =>
    Effect.gen(function*() {
      const { agentDir, cacheFile, env } = yield* brokerCacheSetUp
      const broker = yield* startBroker(["--dir", agentDir, "--durability", "memory"], env)
      // A session keeps it from its idle exit, whose shutdown would write the cache too.
      yield* registerSession(path.join(agentDir, "intercom", "broker.sock"), "bob")
      // Polled: the broker writes it CODE_CACHE_DELAY after its ready line, on its own clock.
      const found = yield* Effect.sync(() => fs.existsSync(cacheFile)).pipe(
        Effect.repeat({
          schedule: Schedule.spaced("50 millis").pipe(Schedule.upTo({ duration: Duration.sum(CODE_CACHE_DELAY, Duration.seconds(20)) })),
          until: (exists) => exists
        })
      )
      assert.isTrue(found, `no ${cacheFile} while the broker runs`)
      assert.isUndefined(broker.outcome(), "the broker still runs")
    }), 40_000)

  it.live("a send that succeeded leaves the code cache of a whole send; the next send uses it as it is", () =>
    Effect.gen(function*() {
      const tmp = yield* tempDir("ei-sc-")
      const agentDir = path.join(tmp, "agent")
      const env = { ...envWithTmp(tmp), HOME: tmp, PI_CODING_AGENT_DIR: agentDir }
      yield* startBroker(["--dir", agentDir, "--idle-exit", "never", "--durability", "memory"], env)
      yield* registerSession(path.join(agentDir, "intercom", "broker.sock"), "bob")
      const cacheFile = sendCacheFile(path.join(BIN, "client.cjs"), {
        cacheDir: privateCacheDir(tmp, uid),
        getBuiltinModule: process.getBuiltinModule
      }) ?? ""

      const failed = yield* runChild(process.execPath, [main(), "send", "nobody", "hello"], { env })
      assert.strictEqual(failed.code, 1, failed.stderr)
      assert.isFalse(fs.existsSync(cacheFile), "a send that failed writes no cache")

      const first = yield* runChild(process.execPath, [main(), "send", "bob", "hello"], { env })
      assert.strictEqual(first.code, 0, first.stderr)
      assert.strictEqual(first.stdout, "Message sent to bob\n")
      const bundleHash = createHash("sha256").update(fs.readFileSync(path.join(BIN, "client.cjs"))).digest()
      assert.isTrue(fs.readFileSync(cacheFile).subarray(0, 32).equals(bundleHash))
      const written = fs.statSync(cacheFile)

      const second = yield* runChild(process.execPath, [main(), "send", "bob", "again"], { env })
      assert.strictEqual(second.code, 0, second.stderr)
      assert.strictEqual(second.stdout, "Message sent to bob\n")
      const after = fs.statSync(cacheFile)
      assert.strictEqual(after.ino, written.ino, "V8 took the cache: it was not written again")
      assert.strictEqual(after.mtimeMs, written.mtimeMs)
    }), 30_000)

  it.effect("the compile cache goes to a 0700 directory of this user under the temp dir", () =>
    Effect.gen(function*() {
      const tmp = yield* tempDir("ei-cc-")
      const done = yield* runChild(process.execPath, [main(), "--version"], { env: envWithTmp(tmp) })
      assert.strictEqual(done.code, 0, done.stderr)
      const dir = privateCacheDir(tmp, uid)
      assert.strictEqual(mode(dir), 0o700)
      assert.isAbove(fs.readdirSync(dir).length, 0, "Node wrote its cache there")
    }))

  it.effect("a cache directory that cannot be made does not stop a command", () =>
    Effect.gen(function*() {
      const tmp = yield* tempDir("ei-cc-")
      const notADir = path.join(tmp, "file")
      fs.writeFileSync(notADir, "")
      const done = yield* runChild(process.execPath, [main(), "--version"], { env: envWithTmp(notADir) })
      assert.strictEqual(done.code, 0, done.stderr)
      assert.match(done.stdout, /^intercom v/)
      assert.strictEqual(done.stderr, "")
    }))
})
