/**
 * A dialer over a memory world whose first connection turns slow once an
 * asker's question (`send`) is written: what it reads is held from then on,
 * until `release`, and then handed on one frame per `FRAME_MS` (the
 * broker's writes to the asker are slow). Optionally the question's own
 * write waits (`delaySend`: the broker reads it late), and the slow
 * connection can drop after handing on a given number of held frames
 * (`dropAfter`: the frames behind them are lost unread). Later connections
 * (the client's reconnects) are plain. With `withhold`, every connection
 * asks for the extensions but that one (a broker without it). Used by the tests of an ask whose
 * acknowledgement is read late (test/session/askAckHeld.test.ts,
 * askAckPastSendTimeout.test.ts).
 */
import { Deferred, Effect, Exit, type Scope } from "effect"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { type Connection, ConnectionClosed } from "../../src/transport/Connection.ts"

/** How long each held frame takes to come once the held frames are released. */
export const FRAME_MS = "100 millis"

/** `frames` with `feature` taken out of a `register`'s requested extensions (a broker that does not offer it). */
const withoutFeature = (frames: ReadonlyArray<OutFrame>, feature: string | undefined): ReadonlyArray<OutFrame> =>
  feature === undefined ? frames : frames.map((frame) => {
    const text = frameText(frame)
    if (!text.startsWith(`{"type":"register"`)) return frame
    const register: { features?: ReadonlyArray<string> } = JSON.parse(text)
    return JSON.stringify({ ...register, features: (register.features ?? []).filter((name) => name !== feature) })
  })

/** Whether `frames` hold a `send` (the question). */
const hasSend = (frames: ReadonlyArray<OutFrame>) => frames.some((frame) => frameText(frame).startsWith(`{"type":"send"`))

/**
 * The slow dialer over `world` (see the module header).
 *
 * @example
 * ```ts
 * const slow = slowDialer(world)
 * const asker = yield* world.session("asker", { client: { dial: slow.dial } })
 * ```
 */
export const slowDialer = (
  world: { readonly dial: Effect.Effect<Connection, never, Scope.Scope> },
  options: { readonly withhold?: string } = {}
) => {
  const reads = Deferred.makeUnsafe<void>()
  const sendGate = Deferred.makeUnsafe<void>()
  const sendHeld = Deferred.makeUnsafe<void>()
  let dials = 0
  let holding = false
  let delaying = false
  /** Held frames still to hand on before the slow connection drops; undefined: it does not drop. */
  let handBeforeDrop: number | undefined
  const trickle: Array<string> = []
  const dial = (_socketPath: string) =>
    Effect.map(world.dial, (connection): Connection => {
      dials += 1
      const slow = dials === 1
      const written = (frames: ReadonlyArray<OutFrame>) => {
        if (!slow || !hasSend(frames)) return
        holding = true
        if (delaying) Deferred.doneUnsafe(sendHeld, Exit.void)
      }
      /** The next held frame, or the drop once `dropAfter`'s count is handed on. */
      const handOn = (frame: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>, ConnectionClosed> => {
        if (handBeforeDrop === undefined) return Effect.succeed(frame)
        if (handBeforeDrop === 0) {
          trickle.length = 0
          return Effect.andThen(connection.destroy, Effect.fail(new ConnectionClosed({ clean: false })))
        }
        handBeforeDrop -= 1
        return Effect.succeed(frame)
      }
      const late = (frames: ReadonlyArray<OutFrame>) => slow && delaying && hasSend(frames)
      return {
        id: connection.id,
        trustedLocal: connection.trustedLocal,
        // Once held, what was read is handed on one frame per `FRAME_MS`, as a slow writer's frames come: the fault
        // model under TestClock (the test moves the clock), not a barrier — every wait in the tests is on a frame or a result.
        read: Effect.suspend(() =>
          !slow
            ? connection.read
            : trickle.length > 0
            ? Effect.andThen(Effect.sleep(FRAME_MS), Effect.suspend(() => handOn(trickle.splice(0, 1))))
            : Effect.flatMap(connection.read, (frames) => {
              if (!holding) return Effect.succeed(frames)
              trickle.push(...frames)
              return Effect.andThen(Deferred.await(reads), Effect.suspend(() => handOn(trickle.splice(0, 1))))
            })
        ),
        writeAll: (sent) => {
          const frames = withoutFeature(sent, options.withhold)
          const wait = late(frames)
          written(frames)
          return wait ? Effect.andThen(Deferred.await(sendGate), connection.writeAll(frames)) : connection.writeAll(frames)
        },
        write: (sent) => {
          const frames = withoutFeature(sent, options.withhold)
          const wait = late(frames)
          written(frames)
          return wait
            ? Effect.andThen(Deferred.await(sendGate), Effect.suspend(() => connection.write(frames) ?? Effect.void))
            : connection.write(frames)
        },
        unfinishedWrite: () => connection.unfinishedWrite(),
        readProgress: () => connection.readProgress(),
        readPending: () => connection.readPending(),
        end: connection.end,
        destroy: connection.destroy
      }
    })
  return {
    dial,
    /** Lets the held frames through, one per `FRAME_MS`. */
    release: Deferred.succeed(reads, undefined),
    /** From now on the question's write waits until `deliverSend`. */
    delaySend: Effect.sync(() => {
      delaying = true
    }),
    deliverSend: Deferred.succeed(sendGate, undefined),
    /** Completes once the question's write waits (`delaySend`). */
    sendHeld: Deferred.await(sendHeld),
    /** The slow connection drops once `count` more held frames were handed on; the rest are lost unread. */
    dropAfter: (count: number) =>
      Effect.sync(() => {
        handBeforeDrop = count
      })
  }
}
