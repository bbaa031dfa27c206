/**
 * The result archive in the broker (extension `results-v1`, C-WKR-11…14):
 * `result_store`, `result_list` and `result_read`, answered by
 * `result_stored`, `result_listed`, `result_page` or `result_failed`.
 *
 * Two halves with one owner each. The frame handlers (class `Results`, run by
 * the Router, synchronous) decode and check a request, decide who it is for —
 * the storing session's group, and its supervisor when it is a child
 * (Supervisor.ts) — and hand it to the results fiber through a bounded
 * queue; they never touch the archive. The fiber (`runResults`, forked by
 * Broker.ts) is the archive's only user: it takes one request at a time, runs
 * it against `ResultArchive` (SQL for a durable archive) and writes the answer
 * back through `Results.answer`, synchronous again.
 *
 * Bounds: at most MAX_IN_FLIGHT_PER_CONNECTION requests of one connection and
 * MAX_QUEUED_REQUESTS overall wait for the fiber; past either, and for a
 * connection whose outbox is over its budget (it does not read), the request
 * is refused with `result_failed` at once — so answers pushed out of turn
 * stay bounded per connection.
 */
import { Cause, Effect, Queue } from "effect"
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { RESULTS_V1 } from "../protocol/features.ts"
import type { ReportInput, ResultArchiveService, ResultViewer } from "../store/resultModel.ts"
import type { Peer } from "./Peer.ts"
import type { Session } from "./Registry.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"

/** Requests of one connection that may wait for the results fiber at once. */
export const MAX_IN_FLIGHT_PER_CONNECTION = 4
/** Requests of all connections that may wait for the results fiber at once. */
export const MAX_QUEUED_REQUESTS = 256

/** The refusals of result requests. */
export const ResultText = {
  invalid: (detail: string) => `Invalid result request: ${detail}`,
  busy: (max: number) =>
    `This connection already has ${max} result requests waiting for the archive; wait for their answers, then retry`,
  brokerBusy: "The broker's result archive is busy with other sessions' requests; retry in a moment",
  unread: "This connection is not reading its answers (its outbox is full); read them, then retry",
  unexpected: (detail: string) => `The result archive failed unexpectedly: ${detail}; nothing was stored`
} as const

/** Where an answer goes: the connection, the session that asked on it, and its request id. */
interface AnswerTo {
  readonly peer: Peer
  readonly sessionKey: string
  readonly requestId: string
}

/** One request handed to the results fiber. */
export type ResultJob =
  | { readonly kind: "store"; readonly to: AnswerTo; readonly input: ReportInput }
  | { readonly kind: "list"; readonly to: AnswerTo; readonly viewer: ResultViewer; readonly offset?: number; readonly limit?: number }
  | {
    readonly kind: "read"
    readonly to: AnswerTo
    readonly viewer: ResultViewer
    readonly ref: string
    readonly offset?: number
    readonly limit?: number
  }

/** The results concern: three frame handlers, and the answers the results fiber writes back. */
export class Results {
  private readonly ctx: RouterContext
  private readonly jobs: Queue.Queue<ResultJob>
  private readonly supervisorOf: (session: Session) => string | undefined
  private readonly inFlight = new Map<Peer, number>()
  private queued = 0

  /**
   * @param jobs the queue the results fiber takes from.
   * @param supervisorOf the key of a child session's supervisor (Supervisor.ts), if it is one.
   */
  constructor(ctx: RouterContext, jobs: Queue.Queue<ResultJob>, supervisorOf: (session: Session) => string | undefined) {
    this.ctx = ctx
    this.jobs = jobs
    this.supervisorOf = supervisorOf
  }

  readonly frames: FrameHandlers = {
    result_store: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.store(peer, session, raw)) },
    result_list: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.list(peer, session, raw)) },
    result_read: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.read(peer, session, raw)) }
  }

  /** Requests waiting for the results fiber: for stats and tests. */
  get waiting(): number {
    return this.queued
  }

  /**
   * The results fiber's answer to `job` (frame text): written to the
   * connection if the session that asked still holds it, else dropped.
   */
  answer(job: ResultJob, frame: string): void {
    const { peer, sessionKey } = job.to
    this.queued--
    const left = (this.inFlight.get(peer) ?? 1) - 1
    if (left <= 0) this.inFlight.delete(peer)
    else this.inFlight.set(peer, left)
    if (peer.state !== "registered" || peer.isClosing || peer.session?.key !== sessionKey) return
    this.ctx.output.forceEnqueue(peer, frame)
  }

  /** Only a session granted `results-v1` may use result frames (a base client never sends them). */
  private guard(peer: Peer, raw: { readonly type: string }, act: (session: Session) => void): void {
    if (!peer.features.has(RESULTS_V1)) {
      return this.ctx.protocolError(peer, `"${raw.type}" frame without the ${RESULTS_V1} extension`)
    }
    const session = peer.session
    if (session !== undefined) act(session)
  }

  private fail(peer: Peer, requestId: string, reason: string): void {
    this.ctx.output.enqueue(peer, failedFrame(requestId, reason))
  }

  /** A frame that does not decode: answered by requestId when it has one, else a protocol error. */
  private undecodable(peer: Peer, raw: { readonly [key: string]: unknown }, message: string): void {
    const requestId = raw["requestId"]
    if (typeof requestId === "string") return this.fail(peer, requestId, ResultText.invalid(message))
    this.ctx.protocolError(peer, message)
  }

  private viewerOf(session: Session): ResultViewer {
    return { space: session.space.key, self: session.key }
  }

  /** Hands `job` to the results fiber, or refuses it when a bound is reached. */
  private submit(job: ResultJob): void {
    const { peer, requestId } = job.to
    const mine = this.inFlight.get(peer) ?? 0
    if (mine >= MAX_IN_FLIGHT_PER_CONNECTION) return this.fail(peer, requestId, ResultText.busy(MAX_IN_FLIGHT_PER_CONNECTION))
    if (peer.outboxChars > this.ctx.options.outboxChars) return this.fail(peer, requestId, ResultText.unread)
    if (this.queued >= MAX_QUEUED_REQUESTS || !Queue.offerUnsafe(this.jobs, job)) {
      return this.fail(peer, requestId, ResultText.brokerBusy)
    }
    this.queued++
    this.inFlight.set(peer, mine + 1)
  }

  private store(peer: Peer, session: Session, raw: { readonly [key: string]: unknown }): void {
    const frame = decodeClientFrame.result_store(raw)
    if (isFrameDecodeError(frame)) return this.undecodable(peer, raw, frame.message)
    const supervisor = this.supervisorOf(session)
    this.submit({
      kind: "store",
      to: { peer, sessionKey: session.key, requestId: frame.requestId },
      input: {
        from: session.fields.name === undefined ? { id: session.id } : { id: session.id, name: session.fields.name },
        space: session.space.key,
        group: session.group,
        supervisor,
        title: frame.title,
        run: frame.run,
        child: frame.child,
        body: frame.body,
        originalLength: frame.originalLength
      }
    })
  }

  private list(peer: Peer, session: Session, raw: { readonly [key: string]: unknown }): void {
    const frame = decodeClientFrame.result_list(raw)
    if (isFrameDecodeError(frame)) return this.undecodable(peer, raw, frame.message)
    this.submit({
      kind: "list",
      to: { peer, sessionKey: session.key, requestId: frame.requestId },
      viewer: this.viewerOf(session),
      ...(frame.offset === undefined ? {} : { offset: frame.offset }),
      ...(frame.limit === undefined ? {} : { limit: frame.limit })
    })
  }

  private read(peer: Peer, session: Session, raw: { readonly [key: string]: unknown }): void {
    const frame = decodeClientFrame.result_read(raw)
    if (isFrameDecodeError(frame)) return this.undecodable(peer, raw, frame.message)
    this.submit({
      kind: "read",
      to: { peer, sessionKey: session.key, requestId: frame.requestId },
      viewer: this.viewerOf(session),
      ref: frame.ref,
      ...(frame.offset === undefined ? {} : { offset: frame.offset }),
      ...(frame.limit === undefined ? {} : { limit: frame.limit })
    })
  }
}

const failedFrame = (requestId: string, reason: string): string =>
  JSON.stringify({ type: "result_failed", requestId, reason })

/** The answer frame of one job, run against the archive; every failure is a `result_failed`. */
const perform = (archive: ResultArchiveService, job: ResultJob): Effect.Effect<string> => {
  const requestId = job.to.requestId
  const durable = archive.durable
  const work: Effect.Effect<string, { readonly message: string }> = job.kind === "store"
    ? Effect.map(archive.store(job.input), (receipt) => JSON.stringify({ type: "result_stored", requestId, ...receipt }))
    : job.kind === "list"
    ? Effect.map(
      archive.list(job.viewer, { offset: job.offset, limit: job.limit }),
      (listing) => JSON.stringify({ type: "result_listed", requestId, durable, ...listing })
    )
    : Effect.map(
      archive.read(job.viewer, job.ref, { offset: job.offset, limit: job.limit }),
      (page) => JSON.stringify({ type: "result_page", requestId, durable, ...page })
    )
  return work.pipe(
    Effect.catch((error) => Effect.succeed(failedFrame(requestId, error.message))),
    Effect.catchCause((cause) =>
      Effect.succeed(failedFrame(requestId, ResultText.unexpected(Cause.pretty(cause).split("\n")[0] ?? "")))
    )
  )
}

/**
 * The results fiber: forever takes the next request, runs it against
 * `archive`, and hands the answer to `results` (see the module header).
 */
export const runResults = (
  archive: ResultArchiveService,
  jobs: Queue.Queue<ResultJob>,
  results: () => Results
): Effect.Effect<never> =>
  Effect.forever(
    Queue.take(jobs).pipe(
      Effect.flatMap((job) =>
        Effect.flatMap(perform(archive, job), (frame) => Effect.sync(() => results().answer(job, frame)))
      )
    ),
    { disableYield: true }
  )
