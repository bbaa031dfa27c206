/**
 * The commit shapes of the broker's `MailStore` that the store benchmarks
 * run (bench/store-commit.ts, bench/replay-blocks.ts): messages, their replay
 * records and ask edges as the journal hands them to a commit, with random
 * message ids and real-sized times. Fixtures only; nothing here measures.
 */
import { randomUUID } from "node:crypto"
import type { AskEdge } from "../src/broker/AskEdges.ts"
import { recordKeyOf } from "../src/broker/DeliveryRecords.ts"
import type { Mail } from "../src/broker/Peer.ts"
import type { MailCommit, StoredMail } from "../src/store/MailStore.ts"
import type { StoredRecord } from "../src/store/mailCodec.ts"

/** Times in the commits: a wall-clock millisecond count of today's size, so numbers encode at their real length. */
const EPOCH = 1_700_000_000_000

/** A session key as the broker builds it (scope, NUL, id). */
export const session = () => `scope\u0000${randomUUID()}`
/** Every message's text: 100 characters. */
export const text = "x".repeat(100)

/** One message as stored, from `sender` to `target`, with a random id (as real clients make them). */
export const mailOf = (sender: string, target: string, seq: number, at: number, ask: boolean): StoredMail => {
  const id = randomUUID()
  return {
    seq,
    mail: {
      recordKey: recordKeyOf(sender, id),
      senderKey: sender,
      senderId: sender.slice(6),
      senderIdentity: undefined,
      fromJson: JSON.stringify({ id: sender.slice(6), name: "worker", cwd: "/work/project", model: "m", pid: 4242 }),
      message: { id, timestamp: at, content: { text }, ...(ask ? { expectsReply: true } : {}) },
      brokerReceivedAt: at,
      spaceKey: "scope",
      targetKey: target,
      targetId: target.slice(6),
      targetIdentity: undefined,
      queuedAt: at,
      askTimeoutMs: ask ? 600_000 : undefined
    } satisfies Mail
  }
}

/** The replay record of `mail`, delivered. */
export const recordOf = (mail: Mail, at: number): StoredRecord => ({
  key: mail.recordKey,
  sender: mail.senderKey,
  fingerprint: {
    targetId: mail.targetId,
    textLength: text.length,
    textHash: 123456789,
    attachmentsLength: 0,
    attachmentsHash: 0,
    replyTo: undefined,
    expectsReply: mail.askTimeoutMs === undefined ? undefined : true,
    supersedes: undefined,
    retryOf: undefined,
    replyErrorLength: -1,
    replyErrorHash: 0
  },
  outcome: { ok: true, delivery: "socket_delivered" },
  at
})

/** The ask edge of `mail`, open ten minutes. */
export const edgeOf = (mail: Mail, at: number): AskEdge => ({
  messageKey: mail.recordKey,
  messageId: mail.message.id,
  askerKey: mail.senderKey,
  targetKey: mail.targetKey,
  deadline: at + 600_000,
  openedAt: at
})

/**
 * An ask round trip's two commits, `roundTrips` times (the commits of one
 * workload are made up front so that only the store's work is measured).
 */
export const askCommits = (roundTrips: number): Array<MailCommit> => {
  const asker = session(), answerer = session()
  const commits: Array<MailCommit> = []
  let seq = 1
  let lastReply: StoredMail | undefined
  for (let i = 0; i < roundTrips; i++) {
    const at = EPOCH + i
    const ask = mailOf(asker, answerer, seq++, at, true)
    const reply = mailOf(answerer, asker, seq++, at, false)
    commits.push({
      records: [recordOf(ask.mail, at)],
      mailPuts: [ask],
      mailDeletes: lastReply === undefined ? [] : [lastReply.seq],
      edgePuts: [edgeOf(ask.mail, at)],
      edgeDeletes: []
    })
    commits.push({
      records: [recordOf(reply.mail, at)],
      mailPuts: [reply],
      mailDeletes: [ask.seq],
      edgePuts: [],
      edgeDeletes: [ask.mail.recordKey]
    })
    lastReply = reply
  }
  return commits
}

/** `ticks` commits of `perTick` messages each, record and mail, the previous tick's mail deleted. */
export const tickCommits = (ticks: number, perTick: number): Array<MailCommit> => {
  const senders = Array.from({ length: 16 }, session), receiver = session()
  const commits: Array<MailCommit> = []
  let seq = 1
  let last: Array<StoredMail> = []
  for (let i = 0; i < ticks; i++) {
    const at = EPOCH + i
    const puts = Array.from({ length: perTick }, (_, j) => mailOf(senders[(i + j) % 16] ?? receiver, receiver, seq++, at, false))
    commits.push({
      records: puts.map((put) => recordOf(put.mail, at)),
      mailPuts: puts,
      mailDeletes: last.map((put) => put.seq),
      edgePuts: [],
      edgeDeletes: []
    })
    last = puts
  }
  return commits
}

/** Commits of traffic acknowledged on read: every message's record, one message in six still unread. */
export const readCommits = (commits: number, perCommit: number): Array<MailCommit> => {
  const senders = Array.from({ length: 16 }, session), receiver = session()
  const out: Array<MailCommit> = []
  let seq = 1
  let last: Array<StoredMail> = []
  for (let i = 0; i < commits; i++) {
    const at = EPOCH + i
    const messages = Array.from({ length: perCommit }, (_, j) => mailOf(senders[(i + j) % 16] ?? receiver, receiver, seq++, at, false))
    const puts = messages.filter((_, j) => j % 6 === 5)
    out.push({
      records: messages.map((put) => recordOf(put.mail, at)),
      mailPuts: puts,
      mailDeletes: last.map((put) => put.seq),
      edgePuts: [],
      edgeDeletes: []
    })
    last = puts
  }
  return out
}
