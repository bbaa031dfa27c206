/**
 * Size: about 565 lines, nearly all the JSDoc'd fields of the state's types;
 * one concept, the shape every ledger module reads and writes.
 *
 * What the ledger remembers about a run: the world (sessions, connections,
 * crashed brokers, closed clients), every message and ask, and the counters
 * behind the trace. One `LedgerState` per world, owned by its `Ledger` and
 * touched only by the ledger's plain synchronous functions.
 */
import { DEFAULT_REPLACE_WINDOW_MS } from "../../broker/options.ts"
import type { Message } from "../../protocol/frames.ts"
import type { DeliveryNote } from "./delivery.ts"
import type { TakenAfterDrop } from "./dropped.ts"
import type { AskOutcome, LedgerOptions, SessionMeta, Violation } from "./types.ts"

/** A `message_control` a client read (ledger/controls.ts). */
export interface ControlRead {
  /** The connection that read it; its owner is the receiver. */
  readonly link: number
  /** The sender of the message it is about (the session that cancelled or superseded it). */
  readonly from: string
  readonly messageId: string
  readonly action: "cancel" | "supersede"
  /** Its place among reads (`LedgerState.readSeq`). */
  readonly seq: number
}

/** A sender's `cancel_message` the broker answered with a bare `delivered` (ledger/controls.ts). */
export interface CancelAck {
  readonly sender: string
  readonly messageId: string
  /** The broker incarnation that answered. */
  readonly epoch: number
  /** When the sender read the answer, among reads (`LedgerState.readSeq`). */
  readonly seq: number
  /** When the sender read the answer (simulated ms). */
  readonly at: number
}

/** A send that `supersedes` an earlier message, acknowledged `delivered` (ledger/controls.ts). */
export interface SupersedeAck {
  readonly sender: string
  /** The message it superseded. */
  readonly messageId: string
  /** The broker incarnation that acknowledged it (and applied the supersede). */
  readonly epoch: number
  /** When the sender read the acknowledgement, among reads (`LedgerState.readSeq`). */
  readonly seq: number
  /** When the sender read the acknowledgement (simulated ms). */
  readonly at: number
}

/** A send that `supersedes` an earlier message, as its sender's client wrote it (ledger/controls.ts). */
export interface SupersedeWritten {
  /** The superseding send's message id. */
  readonly messageId: string
  /** The connection its latest attempt was written on. */
  readonly link: number
}

/** What the ledger keeps of cancels and controls (ledger/controls.ts). */
export interface ControlState {
  /**
   * `sender\0messageId` of each `cancel_message` a world session wrote and
   * the broker has not answered (neither acknowledged nor refused), with the
   * connection it was written on.
   */
  readonly cancelsWritten: Map<string, number>
  /** When each of `cancelsWritten` was written (simulated ms), by the same key. */
  readonly cancelsWrittenAt: Map<string, number>
  /**
   * Cancels the broker refused ("cannot be cancelled") after a takeover's old connection closed, for a
   * message that connection's client had read and confirmed, the takeover before the cancel was written:
   * the cancel a custody hold put off, answered once the old client confirmed the message as it closed
   * (review revb D1; `cancelRefused`). A count of the path, not a check.
   */
  heldThenRefused: number
  readonly cancelAcks: Array<CancelAck>
  /** Ids of messages whose cancel the broker acknowledged, with when the sender read that (simulated ms). */
  readonly cancelled: Map<string, number>
  /**
   * `sender\0messageId` of each message a later send of its sender
   * `supersedes`, that send acknowledged, with when the sender read that.
   */
  readonly superseded: Map<string, number>
  /**
   * `sender\0messageId` of each message a send of its sender `supersedes`,
   * with that send's id and the connection its latest attempt was written
   * on: whether that send went unanswered, its answer lost, is judged at the
   * end (`supersededUnread`, sim seed 16929).
   */
  readonly supersedesWritten: Map<string, SupersedeWritten>
  /** Each acknowledged supersede, in the order its sender read the answer (`supersede-unheard`). */
  readonly supersedeAcks: Array<SupersedeAck>
  readonly reads: Array<ControlRead>
  /**
   * `link\0sender\0messageId` of each control cancel the broker began to
   * write (`Ledger.brokerWriteStarted`), by the connection it went to: one
   * cut short there, its client closed for good or its broker crashed before
   * the client read it (`cancel-unheard`, `cancelCutShort`).
   */
  readonly cancelsBegun: Set<string>
}

/** An empty `ControlState`. */
export const makeControlState = (): ControlState => ({
  cancelsWritten: new Map(),
  cancelsWrittenAt: new Map(),
  heldThenRefused: 0,
  cancelAcks: [],
  cancelled: new Map(),
  superseded: new Map(),
  supersedesWritten: new Map(),
  supersedeAcks: [],
  reads: [],
  cancelsBegun: new Set()
})

/** One in-memory connection as the ledger follows it. */
export interface LinkRecord {
  readonly id: number
  /** The session that dialled it. */
  readonly owner: string
  /**
   * The client that dialled it: a key per client instance, which a new process that resumes that instance
   * (`Ledger.clientResumed`) keeps.
   */
  readonly client: string
  /**
   * Which process of `client` dialled it: 0 for the one that started it, one more for each new process that
   * resumed it since. A new process remembers nothing of what an earlier one read (`clientProcessOf`).
   */
  readonly process: number
  readonly brokerEpoch: number
  registered: boolean
  closed: boolean
  /** The broker's side saw this connection end. */
  brokerEnded: boolean
  /**
   * When the broker's side saw it end (simulated ms), or, until it does, when
   * its client closed it; undefined while open. A connection its client closed
   * lingers live to the broker, which may still write a question to it.
   */
  endedAt: number | undefined
  /**
   * Whether its broker incarnation crashed while it was live to both sides
   * (neither its client nor the broker's side had seen it end): what the
   * broker was writing it then was cut short by the crash (`cancelCutShort`).
   */
  cutByCrash: boolean
  /** Frames its client read on it, `registered` included (what a `received` count counts). */
  framesRead: number
  /** The highest `received` count the broker read on it (`received-v1`). */
  confirmed: number
  /**
   * The highest `received` count its client wrote on it: above `confirmed`
   * when a confirmation was still on its way (or lost with the connection).
   */
  confirmationWritten: number
  /** When its client last read `registered` on it (simulated ms); undefined until it does. */
  registeredAt: number | undefined
  /**
   * Frames the broker wrote on it that its client has not read yet (a link
   * carries frames in order): an asker that gave up with some unread did
   * not hear the broker (`AskRecord.heardBroker`).
   */
  framesUnread: number
  /**
   * Frames of the broker's writes begun on it (`Ledger.brokerWriteStarted`)
   * not handed to the transport yet: a slow write on its way. Only exact
   * while the connection is live (a write cut at its close leaves some).
   */
  writesUnsent: number
  /** When the broker read this connection's `register` (simulated ms); undefined until it does. */
  registerReadAt: number | undefined
  /**
   * The broker's view, whatever its client has read: the broker handled its
   * `register` (it may hold the session by it from then on: `registered` is
   * on its way) and since handled neither its `unregister` nor another
   * registration of its session (a takeover), nor refused it (`refused`); a
   * registration meanwhile is a takeover of it (`heldBy`), also before its
   * client read `registered` and after it wrote `unregister` the broker has
   * not handled yet. The broker's end of it (`brokerEnded`) ends it too.
   */
  brokerHolds: boolean
  /**
   * The broker answered a `register` on it with a refusal
   * (`registration_failed`, or an `error` before its client read
   * `registered`): it never held the session by it.
   */
  refused: boolean
  /**
   * When a registration of its session took it over while the broker still
   * held it (a takeover, P16): the time the broker read that registration.
   */
  replacedAt: number | undefined
  /**
   * Set with `replacedAt`: whether this connection or the registration that
   * took it over was made without `rejoin-v1` (a client without it, or a
   * `--withhold-rejoin` world's draw). Only such a takeover may leave mail
   * late (`takeover-late-write`): with the extension on both sides the
   * broker keeps the order, whoever takes over.
   */
  replacedWithoutRejoin: boolean | undefined
  /** Whether its `register`, as the broker read it, asked for `rejoin-v1`; undefined until the broker reads one. */
  rejoin: boolean | undefined
  /** Whether the broker granted it `received-v1` (in `registered`, as its client read it); false until then. */
  receivedV1: boolean
  /**
   * The other registered connections of its session the broker had not seen
   * end when it read this connection's `register`: the ones a takeover by it
   * replaces. Taken then, because the takeover itself ends them before the
   * client reads `registered`. Undefined until the broker reads a `register`.
   */
  heldAtRegister: ReadonlyArray<number> | undefined
  /**
   * The connections whose hold (`brokerHolds`) its latest `register` ended as
   * the broker handled it; a refusal of that `register` gives them their hold
   * back (a refused registration takes nothing over: review revh H1).
   */
  endedAtRegister: ReadonlyArray<number>
  /**
   * The `requestId`s of the settling `list`s (`settle: true`, ask-expiry-v1:
   * an asker's round trip at its own deadline) its client wrote on it and has
   * not read the `sessions` answer to: the broker holds that answer while a
   * reply to the asker is parked (src/broker/ParkedReplies.ts), so frames
   * written after it may be read first (`AskRecord.heardBroker`).
   */
  readonly settlesUnanswered: Set<string>
  /**
   * When its client last read the answer to a settling `list` it wrote on
   * it (simulated ms); undefined until it does (`AskRecord.owedWait`).
   */
  settleAnsweredAt: number | undefined
}

/** One time a client read a message from the broker. */
export interface Read {
  readonly link: number
  readonly client: string
  readonly seq: number
  readonly at: number
  /** The link's frame number of the frame it read (`LinkRecord.framesRead` then). */
  readonly frame: number
}

/** Everything known about one message, from the sender's write to its fate. */
export interface MessageRecord {
  readonly id: string
  readonly alias: string
  readonly sender: string
  readonly target: string | undefined
  readonly kind: "send" | "ask" | "reply"
  /** Written as a child's `supervisor_send` (the broker marks it `channel: "supervisor"`). */
  readonly channel: "supervisor" | undefined
  readonly replyTo: string | undefined
  readonly message: Message
  /** The broker incarnation its sender's client first wrote it to (a copy may reach a later one). */
  readonly firstEpoch: number
  outcome: "pending" | "acked" | "refused" | "unknown"
  ackEpoch: number | undefined
  failureCode: string | undefined
  /**
   * When its sender's client (a `LinkRecord.client` key) first read a refusal of it other than
   * `E_TARGET_REBOUND` (that one sends it again), and that refusal's code (review revap AP2).
   */
  refusedRead?: { readonly at: number; readonly client: string; readonly code: string } | undefined
  acceptSeq: number | undefined
  expiredNotified: boolean
  /** When its sender first read the broker's `expired` receipt for it, among reads (`LedgerState.readSeq`). */
  expiredSeq?: number | undefined
  readonly writtenTo: Array<number>
  /**
   * Connections whose broker write carrying it ended (failed, or was
   * interrupted) before the transport took it, with when that write began:
   * the broker takes it back when that connection closes (`Ledger.brokerWriteCut`).
   */
  readonly cutFrom: Array<{ readonly link: number; readonly startedAt: number }>
  readonly reads: Array<Read>
  hostDeliveries: number
  /** Reads of a copy a later broker wrote after the one that wrote it crashed (see `redeliveredAfterCrash`). */
  redelivered: number
  /**
   * Reads of a copy the broker re-sent because the connection it had gone out
   * on closed before its client confirmed reading it (`received-v1`).
   */
  resent: number
  /**
   * Re-sent although the client of an earlier copy had written a `received`
   * covering it, which the broker never read (lost in flight with that
   * connection: `confirmationLost` in ledger/brokerFrames.ts); tells such a copy
   * from one its client never confirmed.
   */
  confirmationLost: boolean
  /** When its sender read the broker's `delivered`. */
  ackedAt: number | undefined
  /**
   * `LedgerState.acceptSeq` when its sender read the broker's answer: a
   * message with a higher `acceptSeq` was read by the broker after this one
   * was routed. One of the same sender to the same session went into an
   * outbox after this one did (the broker keeps a sender's order); another
   * sender's may have gone first, while this one was still parked on its
   * sender's reader (Output.ts; see `wentBack` in ledger/fates.ts).
   */
  ackMark: number | undefined
  /**
   * An ask its sender was told went to a live connection (`socket_delivered`)
   * by the broker that routed it: the connections of its target to that
   * broker that existed when the sender read the answer — its question went
   * into the outbox of one of them, or was still parked on its way there
   * (the answer is released by the store's commit, not by the question's
   * leaving its sender's parked output). Undefined otherwise (queued in the
   * mailbox, staged, or restored by a later broker: it may reach a connection
   * opened later). See `withdrawn` in ledger/fates.ts.
   */
  queuedTo: ReadonlyArray<number> | undefined
  /** Connections the broker wrote an `expired` notice about it to. */
  readonly noticeWrittenTo: Array<number>
  /** First handed over while the end of the run made every session register again. */
  rescued: boolean
  /** What the broker's replay record said when the harness asked at the end (see `unexplained`). */
  recordSays: string | undefined
  /** Its delivery mode when not the default steer (`delivery-v1`, ledger/delivery.ts). */
  readonly delivery: DeliveryNote | undefined
  /**
   * An ask's edge deadline as its target was told (`ask-timeout-v1`): the
   * `message` frame's `brokerReceivedAt` plus its `askTimeoutMs`, with the
   * broker incarnation that wrote it. Undefined before its target read it,
   * or when the frame carried neither.
   */
  askDeadline: { readonly epoch: number; readonly at: number } | undefined
  /**
   * When a broker incarnation first read it (a retry it read again later
   * finds the edge as the first attempt left it, or closed since): a
   * reply's `ask-hijacked` check compares it with its ask's deadline.
   */
  brokerFirstRead: { readonly epoch: number; readonly at: number } | undefined
}

/** One ask, from its start to how it settled. */
export interface AskRecord {
  readonly alias: string
  readonly asker: string
  readonly targetId: string | undefined
  readonly startedAt: number
  questionId: string | undefined
  /** The `askTimeoutMs` its question was written with; undefined until it is (or when it had none). */
  timeoutMs?: number | undefined
  outcome: AskOutcome | undefined
  /**
   * For an ask that ended in a timeout: whether its asker heard the broker
   * about it. It did when the wait ended before its own deadline (the
   * broker's `ask_expired`). At its deadline the asker makes one round trip
   * on the connection it has then (or, when it has none or that one drops,
   * on the next within its rejoin grace), and gives up when no connection
   * comes, or when the answer does not come within its liveness
   * timeout (src/session/Ask.ts: the user's timeout is a bound) — its client
   * not reading, or the broker's writes slow. So it heard the broker (or
   * could have) when, on a connection registered by the deadline and live
   * still, its client had read everything the broker wrote before the wait
   * ended, with no write still on its way there (`LinkRecord.framesUnread`,
   * `writesUnsent`): the broker had nothing more for it, and a reply it kept
   * back is a violation (review revled). `answer-after-timeout` counts only
   * such asks. The deadline is taken as
   * its question's acknowledgement read plus its `askTimeoutMs`; the asker's
   * own timer starts a little later (after it records the send), so around
   * it the check errs on the lenient side.
   */
  heardBroker?: boolean
  /**
   * The client the ask was made through, with its timings, when the
   * simulation names it (`Ledger.askStarted`); undefined otherwise.
   */
  client?: AskClient | undefined
  /**
   * For an ask that ended in a timeout at or after its own deadline with no
   * connection of its client live then, before a settling round trip could
   * have timed out and with none answered since the deadline: the time
   * until which its client owed the wait a next connection (its deadline
   * plus its rejoin grace; src/client/SettleRoundTrip.ts). A reply the
   * broker accepted that its client read after the wait ended and before
   * then is an `answer-after-timeout`: the client gave up on a connection
   * it promised to wait for. Undefined otherwise.
   */
  owedWait?: { readonly endedAt: number; readonly until: number } | undefined
  /** When its wait ended (simulated ms); undefined while it has not. */
  endedAt?: number | undefined
}

/** The client an ask was made through, as the settling round trip counts with it (`AskRecord.owedWait`). */
export interface AskClient {
  /** The client's key (`LinkRecord.client`). */
  readonly key: string
  /** How long it waits for a next connection to settle on (`IntercomClientOptions.rejoinGraceMs`). */
  readonly rejoinGraceMs: number
  /** How long the broker has to answer a settling round trip (`IntercomClientOptions.livenessTimeoutMs`). */
  readonly livenessTimeoutMs: number
}

/** The ledger's whole memory of one run. */
export interface LedgerState {
  readonly now: () => number
  readonly strictInFlight: boolean
  readonly traceFrames: boolean
  readonly hostileChecks: boolean
  /** The broker's mail outlives a crash (`LedgerOptions.durable`). */
  readonly durable: boolean
  /** The broker's replace window (`LedgerOptions.replaceWindowMs`). */
  readonly replaceWindowMs: number
  /** The wall clock jumped back at some point of the run (`Ledger.clockJumped`). */
  clockWentBack: boolean
  readonly lines: Array<string>
  readonly found: Array<Violation>
  readonly sessions: Map<string, SessionMeta>
  readonly byName: Map<string, string>
  readonly links: Map<number, LinkRecord>
  readonly closedClients: Set<string>
  /** How many new processes resumed each client instance, by client key (`Ledger.clientResumed`). */
  readonly resumedClients: Map<string, number>
  readonly crashedEpochs: Set<number>
  /**
   * The broker incarnations that found each message (by id) in its store when they started: a message
   * no later incarnation found was dropped, if at all, by one that held it before (durable worlds).
   */
  readonly restoredBy: Map<string, Array<number>>
  readonly messages: Map<string, MessageRecord>
  /** Aliases for ids that are not (yet) known messages: question ids seen first in a reply, list request ids. */
  readonly aliases: Map<string, string>
  /** Other random ids (request ids, endpoint epochs) by first appearance, so frame traces replay exactly. */
  readonly otherIds: Map<string, string>
  readonly asks: Array<AskRecord>
  readonly openAsk: Map<string, AskRecord>
  /** Last accept sequence number received, per `sender\0receiver`, on the wire and at the host. */
  readonly lastWireSeq: Map<string, number>
  readonly lastHostSeq: Map<string, number>
  /** When each session's registration took over a connection the broker still held. */
  readonly takeovers: Map<string, Array<number>>
  /** The end of the run is making every session register again (see `stranded-mail`). */
  rescuing: boolean
  rescueStartedAt: number
  /** Cancels and controls on the wire (ledger/controls.ts). */
  readonly controls: ControlState
  /**
   * Message frames (by message id) a `received-v1` client took off a
   * connection after it had dropped that connection itself: not read
   * (ledger/dropped.ts).
   */
  readonly takenAfterDrop: Map<string, Array<TakenAfterDrop>>
  acceptSeq: number
  readSeq: number
  checkCount: number
  frameCount: number
}

/** A fresh, empty memory for one run. */
export const makeLedgerState = (options: LedgerOptions): LedgerState => ({
  now: options.now,
  strictInFlight: options.strictInFlight ?? false,
  traceFrames: options.traceFrames ?? false,
  hostileChecks: options.hostileChecks ?? false,
  durable: options.durable ?? false,
  replaceWindowMs: options.replaceWindowMs ?? DEFAULT_REPLACE_WINDOW_MS,
  clockWentBack: false,
  lines: [],
  found: [],
  sessions: new Map(),
  byName: new Map(),
  links: new Map(),
  closedClients: new Set(),
  resumedClients: new Map(),
  crashedEpochs: new Set(),
  restoredBy: new Map(),
  messages: new Map(),
  aliases: new Map(),
  otherIds: new Map(),
  asks: [],
  openAsk: new Map(),
  lastWireSeq: new Map(),
  lastHostSeq: new Map(),
  takeovers: new Map(),
  rescuing: false,
  rescueStartedAt: 0,
  controls: makeControlState(),
  takenAfterDrop: new Map(),
  acceptSeq: 0,
  readSeq: 0,
  checkCount: 0,
  frameCount: 0
})

/** The display name of session `id` (the id itself if unknown). */
export const nameOf = (state: LedgerState, id: string): string => state.sessions.get(id)?.name ?? id

/**
 * The client process that made `read`: its client key and which process of that client instance
 * (`LinkRecord.process`). Two reads of one message by different processes are two clients' as far as a
 * repeat filter goes: a new process cannot know what an earlier one read, even as the same instance.
 */
export const clientProcessOf = (state: LedgerState, read: Read): string =>
  `${read.client}#${state.links.get(read.link)?.process ?? 0}`

/** The last connection client `client` opened (links are kept in the order they were opened). */
export const lastLinkOf = (state: LedgerState, client: string): LinkRecord | undefined => {
  let last: LinkRecord | undefined
  for (const link of state.links.values()) if (link.client === client) last = link
  return last
}

/** The pi `scopeId` of session `id`. */
export const scopeOf = (state: LedgerState, id: string): string | undefined => state.sessions.get(id)?.scopeId

/** The group of session `id` (`default` when it names none). */
export const groupOf = (state: LedgerState, id: string): string => {
  const group = state.sessions.get(id)?.group?.trim() ?? ""
  return group === "" ? "default" : group
}

/** Every group session `id` has been in: its group, and those it moved from (`SessionMeta.movedFrom`). */
const groupsOf = (state: LedgerState, id: string): ReadonlyArray<string> => [groupOf(state, id), ...(state.sessions.get(id)?.movedFrom ?? [])]

/**
 * Whether two sessions of the world share a scope but no group: traffic between them crosses a group. A
 * session that moved (`SessionMeta.movedFrom`) shares every group it has been in.
 */
export const crossesGroup = (state: LedgerState, a: string, b: string): boolean => {
  if (!knows(state, a) || !knows(state, b) || scopeOf(state, a) !== scopeOf(state, b)) return false
  const theirs = groupsOf(state, b)
  return !groupsOf(state, a).some((group) => theirs.includes(group))
}

/**
 * Whether message `record` may cross from its sender's group to `receiver`'s
 * (C-GRP-12, C-SUP-12…14): a bound child's `supervisor_send` to its
 * supervisor, or that supervisor's reply answering the child's own
 * supervisor-channel message (the exact reverse).
 */
export const mayCross = (state: LedgerState, record: MessageRecord, receiver: string): boolean => {
  if (record.channel === "supervisor") return state.sessions.get(record.sender)?.supervisor === receiver
  if (record.kind !== "reply" || record.replyTo === undefined) return false
  const question = state.messages.get(record.replyTo)
  return question !== undefined && question.channel === "supervisor" && question.sender === receiver &&
    question.target === record.sender && state.sessions.get(receiver)?.supervisor === record.sender
}

/** Whether `id` is a hostile session of the world (its own messages are not tracked). */
export const isHostile = (state: LedgerState, id: string): boolean => state.sessions.get(id)?.hostile === true

/**
 * The record of message `id` sent by `sender`: a hostile session may send a
 * message under another session's id, which is not that message.
 */
export const recordFrom = (state: LedgerState, id: string, sender: string): MessageRecord | undefined => {
  const record = state.messages.get(id)
  return record !== undefined && record.sender === sender ? record : undefined
}

/** Whether `id` is a session of the world. */
export const knows = (state: LedgerState, id: string): boolean => state.sessions.has(id)

/** The session a send to `to` is meant for: its explicit target id, else an exact id, else a name. */
export const resolveTarget = (state: LedgerState, to: string, targetId: string | undefined): string | undefined => {
  if (targetId !== undefined) return targetId
  if (knows(state, to)) return to
  return state.byName.get(to.toLowerCase())
}
