/**
 * What every routing concern shares: settings, the clock, the event log, the
 * registry, the output and the replay records. The Router builds one and hands it to each concern
 * module (Registration, Membership, Discovery, Send, Asks, Receipts, Mail), so
 * a new concern is one more module that takes this context — and nothing here
 * is owned by more than one of them.
 */
import { Deferred, Effect, Queue } from "effect"
import type { BrokerStamps } from "./BrokerStamps.ts"
import type { DeliveryRecords } from "./DeliveryRecords.ts"
import type { StoreJournal } from "./StoreJournal.ts"
import type { ResolvedCoreOptions } from "./options.ts"
import type { Output } from "./Output.ts"
import * as Encode from "./encode.ts"
import { TAKEOVER_V1 } from "../protocol/features.ts"
import type { CloseMode, Peer } from "./Peer.ts"
import type { Registry } from "./Registry.ts"

/** One line of the broker's log, written by a logger fiber (Broker.ts). */
export interface BrokerEvent {
  readonly level: "info" | "warning"
  readonly message: string
}

/** Handles one decoded-enough client frame (`type` is a string; the handler decodes the rest). */
export interface FrameHandler {
  readonly handle: (peer: Peer, frame: { readonly type: string; readonly [key: string]: unknown }) => void
  /** Also accepted from a connection that has not registered (P10: `register`, `health`). */
  readonly unregistered?: boolean
  /** Also accepted from an observer connection (`observe-v1`, which sends only these and the unregistered ones). */
  readonly observer?: boolean
}

/** Frame handlers by frame type, contributed by the concern modules. */
export type FrameHandlers = Readonly<Record<string, FrameHandler>>

/** What every concern module is given by the Router. */
export interface RouterContext {
  readonly options: ResolvedCoreOptions
  /** Milliseconds on the broker's `Clock` (TestClock in tests). */
  readonly now: () => number
  /**
   * Stamps for what a client compares (`brokerReceivedAt`, a control's
   * `timestamp`): never below one given before, whatever the clock does (BrokerStamps.ts).
   */
  readonly stamps: BrokerStamps
  readonly log: (level: BrokerEvent["level"], message: string) => void
  readonly registry: Registry
  readonly output: Output
  /**
   * The id of the routing state this broker holds (`state-epoch-v1`): the
   * store's, kept across a durable broker's restarts; fresh for a broker
   * without a store.
   */
  readonly stateEpoch: string
  /** Extensions this broker does not offer even when asked (`questions-v1` without a question store). */
  readonly withheldFeatures: ReadonlySet<string>
  /** Outcomes of recent sends by (sender, message id), for idempotent retries (P46). */
  readonly records: DeliveryRecords
  /**
   * What changed since the last commit to the durable store; undefined when
   * the broker keeps its state in memory only (StoreJournal.ts).
   */
  readonly journal: StoreJournal | undefined
  /** Drops a connection for a protocol error (P03): logged (unless it is closing already), destroyed, no reply. */
  readonly protocolError: (peer: Peer, detail: string) => void
  /**
   * Refuses what a connection asked for with a clear `error` frame, then ends
   * it (our deviation from P03's silent close, for input over a limit).
   */
  readonly refuse: (peer: Peer, error: string) => void
}

/** The longest log line the broker writes; longer ones are cut. */
const MAX_LOG_LINE = 1000

/**
 * A log line safe to write whatever a client put into it: control characters
 * (a newline would forge a line of its own) are escaped, and the line is cut
 * to MAX_LOG_LINE characters.
 */
export const logLine = (message: string): string => {
  const escaped = message.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) =>
    `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
  return escaped.length > MAX_LOG_LINE ? `${escaped.slice(0, MAX_LOG_LINE)}… (cut)` : escaped
}

/** Asks a connection to close; the first request decides how (`end` flushes output first). */
export const closePeer = (peer: Peer, mode: CloseMode): void => {
  if (Deferred.doneUnsafe(peer.closing, Effect.succeed(mode))) peer.reader.stop()
}

/**
 * Ends a connection whose session `id` another registration (`pid`) took
 * over: a client granted `takeover-v1` is told first (`taken_over`), so that
 * it does not reconnect and take the id back; a base client is ended
 * quietly. Forced past a full outbox (never parked, where the close would
 * drop it), after what the outbox holds; the `end` close flushes it first.
 * Before it, forced the same way and in the order the client sent the
 * frames: the answers its own parked output still held for frames the
 * broker handled (`delivered`…; OutputEnd.forceOwnAnswers), then an answer to
 * each `send` of session `senderKey`'s its reader still held behind that
 * output (its replay record's, else `E_SENDER_NOT_FOUND`; PeerReader.refuseHeldSends).
 */
export const endTakenOver = (output: Output, peer: Peer, senderKey: string, id: string, pid: number): void => {
  // Answers its own parked output held for frames the broker handled go first (OutputEnd.forceOwnAnswers),
  // then the sends its reader still held behind that output are answered (PeerReader.refuseHeldSends).
  output.end.forceOwnAnswers(peer)
  peer.reader.refuseHeldSends(senderKey)
  if (peer.features.has(TAKEOVER_V1)) output.forceEnqueue(peer, Encode.takenOverFrame(id, pid))
  closePeer(peer, "end")
}

/** Offers a wake-up to a broker fiber that sleeps on a sliding queue of size 1. */
export const signal = (queue: Queue.Queue<void>): void => {
  Queue.offerUnsafe(queue, undefined)
}
