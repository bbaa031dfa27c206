/**
 * A hand-driven Router (handRouter.ts) over a hand-driven StoreJournal wired as Broker.ts wires it (ready
 * acknowledgements forced onto their peers, a failed commit's refusals through Router.refuseUnstored), for the
 * tests that take, fail and commit the journal's batches themselves; with the sessions and sends those tests set
 * up. Shared by the failed-commit-*, held-ack-read-other-session-reused-id and given-back-failed-commit tests.
 */
import { Effect } from "effect"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Router } from "../../src/broker/Router.ts"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import type { Message } from "../../src/protocol/index.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "./broker.ts"
import { fakeConnection } from "./fakeConnection.ts"
import { type HandRouter, handRouter } from "./handRouter.ts"

/** A frame as `<type> <message id>` (a `message` frame's message id), and its `delivery` after it when `withDelivery`. */
export const frameLine = (frame: OutFrame, withDelivery = false): string => {
  const parsed: { type: string; messageId?: string; message?: { id: string }; delivery?: string } = JSON.parse(frameText(frame))
  const line = `${parsed.type} ${parsed.messageId ?? parsed.message?.id ?? ""}`
  return withDelivery && parsed.delivery !== undefined ? `${line} ${parsed.delivery}` : line
}

/** Connection `id`, whose writes complete at once, noting each frame it writes into `seen` as `frameLine` reads it. */
export const lineRecording = (id: number, seen: Array<string>): Connection => ({
  ...fakeConnection(id, false),
  write: (frames: ReadonlyArray<OutFrame>) => {
    for (const frame of frames) seen.push(frameLine(frame))
    return undefined
  }
})

/** A hand-driven Router over its wired journal, and the sessions a test registers on it. */
export interface JournalRouter extends HandRouter {
  readonly journal: StoreJournal
  /** The next connection id (1, 2, …), for a connection the test builds itself. */
  readonly nextConnection: () => number
  /** `frameLine` of each frame queued for `peer` since the last call. */
  readonly written: (peer: Peer) => Array<string>
  /** A session that registers and leaves. */
  readonly away: (sessionId: string) => void
  /** A session registered on a connection whose writes land, as frame texts, in `texts`. */
  readonly recording: (sessionId: string, texts: Array<string>) => Peer
  /** A session registered with `features` (its register frame names none when they are not given). */
  readonly connect: (sessionId: string, features?: ReadonlyArray<string>) => Peer
}

/** A Router with `options` on the clock 1_000_000 over a StoreJournal wired as Broker.ts wires it; no store writer runs. */
export const journalRouter = (options: BrokerCoreOptions): Effect.Effect<JournalRouter> =>
  Effect.gen(function*() {
    const refs: { router?: Router } = {}
    const journal = new StoreJournal(
      () => {},
      3_600_000,
      () => {},
      (ready) => {
        for (const held of ready) refs.router?.output.forceEnqueue(held.peer, held.frame())
      },
      (held, reason, dropFor) => refs.router?.refuseUnstored(held.peer, held.senderKey, held.id, reason, dropFor) ?? false
    )
    const hand = yield* handRouter(options, () => 1_000_000, {}, false, journal)
    refs.router = hand.router
    let connections = 0
    const nextConnection = (): number => ++connections
    const written = (peer: Peer): Array<string> =>
      hand.router.output.writes.takeForWrite(peer).frames.map((frame) => frameLine(frame))
    const away = (sessionId: string): void => {
      const peer = hand.attach(fakeConnection(nextConnection(), false))
      hand.batch(peer, [registerFrame({ sessionId })])
      hand.close(peer)
    }
    const recording = (sessionId: string, texts: Array<string>): Peer => {
      const peer = hand.attach({
        ...fakeConnection(nextConnection(), false),
        write: (frames) => {
          for (const frame of frames) texts.push(frameText(frame))
          return undefined
        }
      })
      hand.batch(peer, [registerFrame({ sessionId })])
      return peer
    }
    const connect = (sessionId: string, features?: ReadonlyArray<string>): Peer => {
      const peer = hand.attach(fakeConnection(nextConnection(), false))
      hand.batch(peer, [registerFrame(features === undefined ? { sessionId } : { sessionId, frame: { features } })])
      return peer
    }
    return { ...hand, journal, nextConnection, written, away, recording, connect }
  })

/** A send under `m0`'s id to `to`, its text `for <to>`. */
export const sendFor = (m0: Message, to: string): Record<string, unknown> => ({
  type: "send",
  to,
  message: { ...m0, content: { text: `for ${to}` } }
})

/**
 * `sender` sends under `m0`'s id to `first`, then another message to `between`, then under `m0`'s id to `second`:
 * with a replay bound of one record, the send between pushes the first's record out, so the second is a new message.
 */
export const sendTwiceUnderOneId = (
  w: Pick<HandRouter, "batch">,
  sender: Peer,
  m0: Message,
  first: string,
  between: string,
  second: string
): void => {
  w.batch(sender, [sendFor(m0, first)])
  w.batch(sender, [{ type: "send", to: between, message: message("other") }])
  w.batch(sender, [sendFor(m0, second)])
}

/**
 * On `w`: z and b away, s registered, d registered with `received-v1` (its register's answers taken); d sends `m0`
 * to z, then (a send to s between) under m0's id to b: two messages under one id, queued for two sessions away.
 */
export const twoQueuedUnderOneId = (w: JournalRouter): { readonly d: Peer; readonly m0: Message } => {
  w.away("z")
  w.away("b")
  w.connect("s")
  const d = w.connect("d", [RECEIVED_V1])
  w.written(d)
  const m0 = message("m0")
  sendTwiceUnderOneId(w, d, m0, "z", "s", "b")
  return { d, m0 }
}
