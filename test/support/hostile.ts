/**
 * Helpers for the hostile-input regression tests: raw connections that
 * measure every frame the broker writes (an oversized one is recorded, not
 * refused — `RawConnection` from the fuzzer), registration over them, big
 * field values as raw bytes (invalid UTF-8 grows threefold on its way out),
 * a timed health probe, and an in-process broker whose log is captured as
 * the CLI would print it.
 */
import { assert } from "@effect/vitest"
import { Clock, Duration, Effect, Logger, Option, Schedule, type Scope } from "effect"
import { formatLine } from "../../src/cli/logging.ts"
import { blob, type BlobFlavour, mark, spliceJson } from "../../src/fuzz/attacks/blobs.ts"
import { framed } from "../../src/fuzz/attacks/kit.ts"
import { type Claim, frameObject, frameOfType, openRaw, type RawConnection } from "../../src/fuzz/RawConnection.ts"
import { MAX_FRAME_BYTES } from "../../src/protocol/index.ts"
import { freshId, type TestBroker, type TestBrokerOptions, withBroker } from "./broker.ts"

export { blob, framed, mark, spliceJson }
export type { RawConnection }

/** How long a test waits for an answer it needs before failing with what it has. */
export const ANSWER: Duration.Input = "10 seconds"

/** A raw, measuring connection to `socketPath`, closed with the Scope. */
export const raw = (socketPath: string, label: string): Effect.Effect<RawConnection, never, Scope.Scope> =>
  Effect.orDie(openRaw(socketPath, label))

/** A frame object as raw frame bytes. */
export const frameBytes = (frame: object): Buffer => framed(Buffer.from(JSON.stringify(frame), "utf8"))

/** `object` as a frame, with `mark(0)` replaced by `size` bytes of `flavour`. */
export const bigFrame = (object: object, flavour: BlobFlavour, size: number): Buffer =>
  framed(spliceJson(object, [blob(flavour, size)]))

/** A valid `register` frame object; `session` fields override the defaults. */
export const registration = (
  sessionId: string,
  options: { readonly scopeId?: string; readonly name?: string; readonly session?: Readonly<Record<string, unknown>>; readonly features?: ReadonlyArray<string> } = {}
): Record<string, unknown> => ({
  type: "register",
  sessionId,
  ...(options.scopeId === undefined ? {} : { scopeId: options.scopeId }),
  session: {
    cwd: "/tmp",
    model: "test-model",
    pid: 1,
    startedAt: 1,
    lastActivity: 1,
    ...(options.name === undefined ? {} : { name: options.name }),
    ...options.session
  },
  ...(options.features === undefined ? {} : { features: options.features })
})

/** Waits for a frame `claim` takes; fails the test with `what` if none comes. */
export const expectFrame = <A>(conn: RawConnection, what: string, claim: (frame: Parameters<typeof frameObject>[0]) => Claim<A>) =>
  Effect.orDie(conn.next(what, claim, ANSWER))

/** Writes `bytes` and waits for `registered`; the session id, or undefined when the broker refused (closed). */
export const registerWith = (conn: RawConnection, bytes: Uint8Array): Effect.Effect<string | undefined> =>
  Effect.gen(function*() {
    yield* conn.write(bytes)
    const registered = yield* Effect.result(conn.next("registered", frameOfType("registered"), ANSWER))
    if (registered._tag === "Success") {
      const id = registered.success.sessionId
      return typeof id === "string" ? id : undefined
    }
    assert.isTrue(conn.isClosed(), `[${conn.label}] neither registered nor closed: ${registered.failure.message}`)
    return undefined
  })

/** Connects and registers a plain session; its connection and id. */
export const session = (
  socketPath: string,
  label: string,
  options: Parameters<typeof registration>[1] & { readonly sessionId?: string } = {}
): Effect.Effect<{ readonly conn: RawConnection; readonly id: string }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const conn = yield* raw(socketPath, label)
    const id = yield* registerWith(conn, frameBytes(registration(options.sessionId ?? freshId(label), options)))
    assert.isDefined(id, `${label} could not register`)
    return { conn, id: id ?? "" }
  })

/**
 * A round trip (`health`): once answered, the broker has handled everything
 * sent before it on `conn`, and `conn` has read everything queued for it
 * before the answer. False when the connection closed instead.
 */
export const roundTrip = (conn: RawConnection): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const requestId = freshId("rt")
    yield* conn.write(frameBytes({ type: "health", requestId }))
    const answer = yield* Effect.result(conn.next("health_ok", frameOfType("health_ok", (f) => f.requestId === requestId), ANSWER))
    if (answer._tag === "Failure") assert.isTrue(conn.isClosed(), `[${conn.label}] no round trip: ${answer.failure.message}`)
    return answer._tag === "Success"
  })

/** Waits until the broker has answered `conn` or closed it: whatever it wrote in reply has been measured. */
export const answeredOrClosed = (conn: RawConnection): Effect.Effect<void> =>
  Effect.raceFirst(
    conn.next("any frame", (frame) => ({ take: true, value: frame }), ANSWER).pipe(Effect.ignore),
    conn.closed
  )

/** The broker never wrote a frame over 1 MiB to `conn`. */
export const assertNoOversizedFrame = (conn: RawConnection): void => {
  assert.isAtMost(
    conn.meter.largest,
    MAX_FRAME_BYTES,
    `[${conn.label}] the broker wrote a ${conn.meter.largest}-byte frame, over the ${MAX_FRAME_BYTES}-byte limit (a strict client drops the connection)`
  )
}

/**
 * How long a fresh connection waits for `health_ok`, from before the dial;
 * undefined when none came within `within`.
 */
export const healthLatency = (socketPath: string, within: Duration.Input): Effect.Effect<number | undefined> =>
  Effect.scoped(Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const conn = yield* raw(socketPath, "health probe")
    const requestId = freshId("probe")
    yield* conn.write(frameBytes({ type: "health", requestId }))
    const answer = yield* Effect.result(conn.next("health_ok", frameOfType("health_ok", (f) => f.requestId === requestId), within))
    return answer._tag === "Success" ? (yield* Clock.currentTimeMillis) - started : undefined
  }))

/** An in-process broker (as `withBroker`) whose log lines are captured, formatted as the CLI prints them. */
export const withLoggedBroker = (
  options: TestBrokerOptions = {}
): Effect.Effect<{ readonly broker: TestBroker; readonly log: () => ReadonlyArray<string> }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const capture = Logger.make((logOptions) => {
      lines.push(...formatLine(logOptions).split(/\r\n|\r|\n/))
    })
    const broker = yield* withBroker(options).pipe(
      Effect.provideService(Logger.CurrentLoggers, new Set([capture])),
      Effect.orDie
    )
    return { broker, log: () => lines }
  })

/** Waits until some captured log line matches `pattern` (the logger runs on its own fiber). */
export const awaitLogLine = (log: () => ReadonlyArray<string>, pattern: RegExp): Effect.Effect<void> =>
  Effect.sync(() => log().some((line) => pattern.test(line))).pipe(
    Effect.repeat({ schedule: Schedule.spaced("10 millis"), until: (found) => found }),
    Effect.timeoutOption(ANSWER),
    Effect.map(Option.isSome),
    Effect.flatMap((found) => Effect.sync(() => assert.isTrue(found, `no log line matching ${pattern}:\n${log().join("\n")}`)))
  )
