/**
 * Size note: about 420 lines, past the ~400 guideline: one world and the
 * scenarios its control tests share (a few lines each, on that world).
 *
 * The hand-driven world of the control tests (control-instance.test.ts,
 * departed-instance.test.ts): a sender `d`, a receiver `b` registered by
 * client instance b-1, and helpers to register `b` from other instances,
 * close connections, and read what each connection was written.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import { ControlFrame } from "../../src/broker/ControlFrame.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import { MAX_ROUTES } from "../../src/broker/Receipts.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { RECEIVED_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "./broker.ts"
import { fakeConnection } from "./fakeConnection.ts"
import { type HandRouter, handRouter } from "./handRouter.ts"

/** A receiver with `received-v1` custody, `rejoin-v1` and `takeover-v1`. */
export const custodyFeatures = [RECEIVED_V1, REJOIN_V1, TAKEOVER_V1]
/** A receiver with `rejoin-v1` and `takeover-v1`, no custody. */
export const baseFeatures = [REJOIN_V1, TAKEOVER_V1]

/** Whether `reader`'s parked list holds a control frame for `recipient`. */
export const parkedControl = (reader: Peer, recipient: Peer): boolean =>
  reader.parked.some(([to, item]) => to === recipient && item instanceof ControlFrame)

/** A frame as far as these tests read it. */
export interface Seen {
  readonly type: string
  readonly messageId?: string
  /** A `delivered` answer's delivery: `socket_delivered` or `queued`. */
  readonly delivery?: string
  readonly reason?: string
  /** A `delivery_failed` answer's code. */
  readonly code?: string
  readonly message?: { readonly id: string; readonly supersedes?: string; readonly brokerReceivedAt?: number }
  readonly control?: { readonly action: string; readonly messageId: string; readonly timestamp?: number }
  readonly receipt?: { readonly messageId: string; readonly status: string; readonly detail?: string }
}

/** The messages and `message_control`s among `frames`, in order, as `message <id>` and `<action> <id>`. */
export const messagesAndControls = (frames: ReadonlyArray<Seen>): ReadonlyArray<string> =>
  frames.flatMap((frame) =>
    frame.type === "message"
      ? [`message ${frame.message?.id}`]
      : frame.type === "message_control"
      ? [`${frame.control?.action} ${frame.control?.messageId}`]
      : []
  )

/**
 * What `peer` is written once its drainer has offered what its batches parked (at most 20 steps, each
 * after taking `peer`'s writes): its messages and controls, as `messagesAndControls` gives them.
 */
export const drainedSeen = (
  w: { readonly tryDrain: (reader: Peer) => boolean; readonly framesOf: (peer: Peer) => ReadonlyArray<Seen> },
  peer: Peer
): ReadonlyArray<string> => {
  for (let n = 0; n < 20; n++) {
    w.framesOf(peer)
    if (!w.tryDrain(peer)) break
  }
  return messagesAndControls(w.framesOf(peer))
}

/**
 * b-1 unregisters, d's parked items are offered, b-1's connection closes as abandoned and b-1 registers
 * again: what that return is written (`drainedSeen`).
 */
export const b1LeavesAndReturns = (w: ControlWorld): ReadonlyArray<string> => {
  w.batch(w.b1, [{ type: "unregister" }])
  for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
    // each step offers one parked item
  }
  w.closeAbandoned(w.b1)
  return drainedSeen(w, w.registerB("b-1"))
}

/**
 * The hour passes (every route ages in one prune), then `b1LeavesAndReturns`: what b-1's return is written.
 */
export const returnAfterTheHour = (w: ControlWorld, clock: { now: number }): ReadonlyArray<string> => {
  clock.now += 3_600_000 + 1_000
  w.router.prune(clock.now)
  return b1LeavesAndReturns(w)
}

/**
 * Every route the broker holds is pushed out (Receipts keeps MAX_ROUTES) by as many newer ones: new
 * sessions `e` and `sink` register and `e` sends `sink` MAX_ROUTES messages, ids `prefix0`, `prefix1`, ….
 * Replay records stay (their bound is larger).
 */
export const pushOutRoutes = (w: ControlWorld, prefix: string): void => {
  const e = w.registerOther("e")
  const sink = w.registerOther("sink")
  for (let sent = 0; sent < MAX_ROUTES; sent++) {
    w.batch(e, [{ type: "send", to: "sink", message: message(`${prefix}${sent}`) }])
    e.writer.flush()
    sink.writer.flush()
  }
}

/** The world `controlWorld` makes. */
export type ControlWorld = Effect.Success<ReturnType<typeof controlWorld>>

/**
 * A hand-driven broker with sender `d` and receiver `b` (instance b-1, with
 * `features`); every connection's written frames are kept, parsed.
 * `stick()` makes b-1's writes never complete from then on (its socket
 * takes none of them). `options`: the broker's, defaults otherwise;
 * `clock`: the broker's clock, which the test may move; `bSession`: fields
 * of b-1's `session` (a `name`, say) over the defaults; `dFeatures`: the
 * extensions `d` asks for in its `register` (none: a base sender).
 */
export const controlWorld = (
  features: ReadonlyArray<string>,
  options: BrokerCoreOptions = {},
  clock: { now: number } = { now: 1_000_000 },
  bSession: Readonly<Record<string, unknown>> = {},
  dFeatures: ReadonlyArray<string> = []
) =>
  Effect.gen(function*() {
    const { attach, batch, close, router, tryDrain } = yield* handRouter(options, () => clock.now)
    const written = new Map<Peer, Array<Seen>>()
    let stuck = false
    const connect = (id: number, stuckable = false): Peer => {
      const frames: Array<Seen> = []
      const peer = attach({
        ...fakeConnection(id, false),
        // A stuck write's socket took none of it: the close gives it back.
        unfinishedWrite: () => (stuckable && stuck ? 0 : undefined),
        write: (out: ReadonlyArray<OutFrame>) => {
          if (stuckable && stuck) return Effect.never
          for (const frame of out) frames.push(JSON.parse(frameText(frame)))
          return undefined
        }
      })
      written.set(peer, frames)
      return peer
    }
    // Connection ids of `registerB`'s connections: 3, then 5 on (`registerD`'s is 4).
    let nextB = 3
    let nextOther = 100
    const b1 = connect(1, true)
    batch(b1, [registerFrame({ sessionId: "b", session: bSession, frame: { features, instanceId: "b-1" } })])
    const d = connect(2)
    batch(d, [registerFrame({ sessionId: "d", ...(dFeatures.length === 0 ? {} : { frame: { features: dFeatures } }) })])
    const framesOf = (peer: Peer): ReadonlyArray<Seen> => {
      peer.writer.flush()
      return written.get(peer) ?? []
    }
    return {
      b1,
      d,
      batch,
      router,
      /** Lets `reader`'s drainer offer one item its batches parked (handRouter.tryDrain). */
      tryDrain,
      framesOf,
      stick: (): void => {
        stuck = true
      },
      /**
       * Registers `b` on a new connection from client instance `instanceId` (none: undefined), with
       * `extra` register fields (a `group`, `ephemeral`).
       */
      registerB: (
        instanceId: string | undefined,
        with_: ReadonlyArray<string> = custodyFeatures,
        extra: Readonly<Record<string, unknown>> = {}
      ): Peer => {
        const peer = connect(nextB)
        nextB = nextB === 3 ? 5 : nextB + 1
        batch(peer, [registerFrame({ sessionId: "b", frame: { ...extra, features: with_, ...(instanceId === undefined ? {} : { instanceId }) } })])
        return peer
      },
      /**
       * Registers a base session `sessionId` on a new connection (id 100 on, clear of `registerB`'s), with
       * `session` fields over the defaults, its writes completing at once — or, `stuckable`, never once `stick`
       * was called (as b-1's); `frame`: register fields over the defaults (`features`, `instanceId`).
       */
      registerOther: (
        sessionId: string,
        session: Readonly<Record<string, unknown>> = {},
        stuckable = false,
        frame: Readonly<Record<string, unknown>> = {}
      ): Peer => {
        const peer = connect(nextOther++, stuckable)
        batch(peer, [registerFrame({ sessionId, session, frame })])
        return peer
      },
      /** Registers `d` again on a new connection. */
      registerD: (): Peer => {
        const peer = connect(4)
        batch(peer, [registerFrame({ sessionId: "d" })])
        return peer
      },
      /** Closes `peer` as `finish` does once its writing is abandoned. */
      closeAbandoned: (peer: Peer): void => {
        closePeer(peer, "destroy")
        router.abandonWrites(peer)
        close(peer)
      },
      /** The controls `peer` was written, as `action id`. */
      controlsOf: (peer: Peer): ReadonlyArray<string> =>
        framesOf(peer).flatMap((frame) =>
          frame.type === "message_control" ? [`${frame.control?.action} ${frame.control?.messageId}`] : []
        ),
      /** The ids of the messages `peer` was written. */
      messagesOf: (peer: Peer): ReadonlyArray<string> =>
        framesOf(peer).flatMap((frame) => frame.type === "message" ? [frame.message?.id ?? "?"] : []),
      /** `d`'s bare answers about `messageId` (to its sends and cancels), in order. */
      answersOf: (messageId: string): ReadonlyArray<string> =>
        framesOf(d).flatMap((frame) =>
          (frame.type === "delivered" || frame.type === "delivery_failed") && frame.messageId === messageId
            ? [frame.type === "delivered" ? "delivered" : `failed: ${frame.reason}`]
            : []
        )
    }
  })

/**
 * A hand-driven broker with no session registered yet, for tests of several
 * readers of one message: `register(sessionId, instanceId?)` registers a
 * session (named "B" in /tmp) on a new connection — with `custodyFeatures`
 * and that client instance when one is given, a base client otherwise;
 * `closeAbandoned` closes a connection whose unconfirmed writes go back;
 * every connection's written frames are kept, parsed (`framesOf`); a
 * connection `stick`ed never completes a write from then on (its socket
 * takes none of it, so its close gives it back). `options`: the broker's;
 * `clock`: its clock, which the test may move.
 */
export const readerWorld = (options: BrokerCoreOptions = {}, clock: { now: number } = { now: 1_000_000 }) =>
  Effect.gen(function*() {
    const { attach, batch, close, router } = yield* handRouter(options, () => clock.now)
    const written = new Map<Peer, Array<Seen>>()
    const stuck = new Set<Peer>()
    let nextId = 1
    const connect = (): Peer => {
      const frames: Array<Seen> = []
      const peer: Peer = attach({
        ...fakeConnection(nextId++, false),
        unfinishedWrite: () => (stuck.has(peer) ? 0 : undefined),
        write: (out: ReadonlyArray<OutFrame>) => {
          if (stuck.has(peer)) return Effect.never
          for (const frame of out) frames.push(JSON.parse(frameText(frame)))
          return undefined
        }
      })
      written.set(peer, frames)
      return peer
    }
    const framesOf = (peer: Peer): ReadonlyArray<Seen> => {
      peer.writer.flush()
      return written.get(peer) ?? []
    }
    const closeAbandoned = (peer: Peer): void => {
      closePeer(peer, "destroy")
      router.abandonWrites(peer)
      close(peer)
    }
    const register = (sessionId: string, instanceId?: string): Peer => {
      const peer = connect()
      const frame = instanceId === undefined ? {} : { features: custodyFeatures, instanceId }
      batch(peer, [registerFrame({ sessionId, name: "B", cwd: "/tmp", frame })])
      return peer
    }
    const stick = (peer: Peer): void => {
      stuck.add(peer)
    }
    return { batch, router, connect, framesOf, closeAbandoned, register, stick }
  })

/**
 * Sessions a test registers by hand on a hand-driven Router, each on a
 * connection whose writes complete at once and are kept, parsed.
 * `connect(id, sessionId, features, instanceId)` registers one (with no
 * `instanceId`, as a client that sends none); `framesOf(peer)` flushes its
 * writer and gives all it was written so far.
 *
 * @example
 * const hand = yield* handRouter({ askTimeout: 60_000 })
 * const { connect, framesOf } = recordedSessions(hand)
 * const b = connect(1, "b", custodyFeatures, "b-1")
 */
export const recordedSessions = (hand: Pick<HandRouter, "attach" | "batch">) => {
  const written = new Map<Peer, Array<Seen>>()
  const connect = (id: number, sessionId: string, features: ReadonlyArray<string> = [], instanceId?: string): Peer => {
    const frames: Array<Seen> = []
    const peer = hand.attach({
      ...fakeConnection(id, false),
      write: (out: ReadonlyArray<OutFrame>) => {
        for (const frame of out) frames.push(JSON.parse(frameText(frame)))
        return undefined
      }
    })
    written.set(peer, frames)
    hand.batch(peer, [registerFrame({ sessionId, frame: { features: [...features], ...(instanceId === undefined ? {} : { instanceId }) } })])
    return peer
  }
  const framesOf = (peer: Peer): ReadonlyArray<Seen> => {
    peer.writer.flush()
    return written.get(peer) ?? []
  }
  return { connect, framesOf }
}

/**
 * `d` sends m0, then m1, to `b`: with an outbox of one frame and b-1 not
 * reading (`stick`), m1 waits in b-1's outbox. Throws when it does not (the
 * test would set up nothing).
 */
export const m1StuckBehindM0 = (w: Pick<Effect.Success<ReturnType<typeof controlWorld>>, "batch" | "d" | "b1">) => {
  const m0 = message("m0")
  const m1 = message("m1")
  w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
  w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
  if (w.b1.outbox.length !== 1) throw new Error("m1 is not waiting in b-1's outbox: the test sets up nothing")
  return { m0, m1 }
}

/**
 * b-1 read and confirmed m1; then, b-1's writes stuck and its outbox (capacity 1) full behind m0, d's cancel
 * of m1 parked at d's reader behind m2 (the scenario of the parked-control tests), in a world whose mailbox
 * keeps mail `mailboxRetention` ms.
 */
export const confirmedThenCancelParked = (mailboxRetention: number) =>
  Effect.gen(function*() {
    const w = yield* controlWorld(custodyFeatures, { mailboxRetention, outboxCapacity: 1 })
    const m1 = message("m1")
    w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
    w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
    assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m1: the test sets up nothing")
    w.stick()
    w.batch(w.d, [{ type: "send", to: "b", message: message("m0") }])
    w.batch(w.d, [{ type: "send", to: "b", message: message("m2") }])
    w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
    assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
    return { w, m1 }
  })

/**
 * A broker on `clock` whose mailbox keeps mail a day, b-1's writes stuck and its outbox (capacity 1) full
 * behind m0, d's m1 waiting in it (`m1StuckBehindM0`): where the kept-withdrawals tests start.
 */
export const m1StuckWorld = (clock: { now: number }) =>
  Effect.gen(function*() {
    const w = yield* controlWorld(custodyFeatures, { mailboxRetention: 24 * 3_600_000, outboxCapacity: 1 }, clock)
    w.stick()
    const { m0, m1 } = m1StuckBehindM0(w)
    return { w, m0, m1 }
  })

/**
 * The world of the kept-withdrawals tests: `m1StuckWorld`, and d's cancel of m1 parked at d's reader. Fails
 * the test when the cancel is not parked (it would set up nothing).
 */
export const m1CancelParked = (clock: { now: number }) =>
  Effect.gen(function*() {
    const { w, m0, m1 } = yield* m1StuckWorld(clock)
    w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
    assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
    return { w, m0, m1 }
  })

/**
 * d's m1 written to `e1` (a registration of `e`); then `e1`'s writes stuck (`stick`), d sends `e` m0 and
 * cancels m1: with an outbox of one frame, the cancel waits in `e1`'s outbox behind m0. Fails the test when
 * it does not (it would set up nothing).
 */
export const cancelInOutboxOf = (w: ControlWorld, e1: Peer) => {
  const m1 = message("m1")
  w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
  assert.include(w.messagesOf(e1), m1.id, "m1 was not written to e-1: the test sets up nothing")
  w.stick()
  const m0 = message("m0")
  w.batch(w.d, [{ type: "send", to: "e", message: m0 }])
  w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
  assert.strictEqual(e1.outbox.length, 1, "the cancel is not waiting in e-1's outbox: the test sets up nothing")
  return { m0, m1 }
}

/**
 * d's `m1` written to `e1` (a registration of `e`); then `e1`'s writes stuck, d sends `e` m0 and m2 and
 * cancels m1, whose cancel parks at d's reader (an outbox of one frame); `e1`'s connection closes as
 * abandoned and d's parked items are offered. Fails the test when the cancel did not park.
 */
export const cancelParkedThenClosed = (w: ControlWorld, e1: Peer, m1: { readonly id: string }) => {
  w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
  assert.include(w.messagesOf(e1), m1.id, "m1 was not written to e-1: the test sets up nothing")
  w.stick()
  const m0 = message("m0")
  w.batch(w.d, [{ type: "send", to: "e", message: m0 }])
  w.batch(w.d, [{ type: "send", to: "e", message: message("m2") }])
  w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
  assert.isTrue(parkedControl(w.d, e1), "the cancel is not parked at d's reader: the test sets up nothing")
  w.closeAbandoned(e1)
  for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
    // each step offers one parked item
  }
  return { m0 }
}

/**
 * d's `m1` written to `e1` (a registration of `e`); then `e1`'s writes stuck (`stick`) and d cancels m1: the
 * cancel is written behind it, never taken, so `e1`'s close gives both back. Fails the test when m1 was not
 * written to `e1` (it would set up nothing). Returns how many frames d had been written by then, for a test that
 * checks d is told nothing more.
 */
export const cancelledOnItsWay = (w: ControlWorld, e1: Peer, m1: { readonly id: string }): number => {
  w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
  assert.include(w.messagesOf(e1), m1.id, "m1 was not written to e-1: the test sets up nothing")
  w.stick()
  w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
  return w.framesOf(w.d).length
}
